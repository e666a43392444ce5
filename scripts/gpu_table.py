"""Turn the GPU check's JSON into the docs' table: peak VRAM next to the plan's estimate per stage, step time,
generated tokens/s, the GPU, versions and date.

    python scripts/gpu_table.py results/gpu_check.json            # print the markdown
    python scripts/gpu_table.py results/gpu_check.json --write    # also replace docs/gpu.md's marked section and
                                                                  # keep the JSON as docs/results/gpu_check.json

Why a marked section: the rest of docs/gpu.md is prose that people edit; only the part between
``<!-- gpu-check:begin -->`` and ``<!-- gpu-check:end -->`` is generated, so the figures in the docs are always
the ones in the recorded JSON (tests/test_gpu_table.py checks that they agree)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "gpu.md"
RECORDED = REPO / "docs" / "results" / "gpu_check.json"
BEGIN, END = "<!-- gpu-check:begin -->", "<!-- gpu-check:end -->"
GIB = 1024**3
COLUMNS = ("model", "backend", "stage", "peak VRAM GiB", "plan GiB", "plan / peak", "step s", "gen tok/s", "status")
VERSION_ORDER = ("torch", "transformers", "trl", "unsloth", "unsloth_zoo", "peft", "accelerate", "bitsandbytes", "datasets", "xformers", "triton")
PLACEHOLDER = "No GPU run recorded yet: run `scripts/offline_gpu_check.sh` on a GPU, then `python scripts/gpu_table.py RESULTS/gpu_check.json --write`."


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def cells(row: dict[str, Any]) -> list[str]:
    """One table row's cells; ``-`` where the stage measured nothing (skipped, timed out, no plan)."""
    peak, est = row.get("peak_vram_bytes"), row.get("estimate_bytes")
    status = str(row.get("status", ""))
    if row.get("estimate_note") and est is None:
        status += f" (no plan: {row['estimate_note']})"
    return [
        str(row.get("model", "?")), str(row.get("backend", "?")), str(row.get("stage", "pair")),
        f"{peak / GIB:.2f}" if _number(peak) else "-",
        f"{est / GIB:.2f}" if _number(est) else "-",
        f"{est / peak:.2f}" if _number(peak) and peak and _number(est) else "-",
        f"{row['step_seconds']:.1f}" if _number(row.get("step_seconds")) else "-",
        f"{row['tokens_per_second']:.0f}" if _number(row.get("tokens_per_second")) else "-",
        status.replace("|", "/").replace("\n", " "),
    ]


def render(run: dict[str, Any]) -> str:
    """The markdown of one run (what goes between the markers)."""
    versions = run.get("versions") or {}
    names = [n for n in VERSION_ORDER if n in versions] + sorted(n for n in versions if n not in VERSION_ORDER)
    used = ", ".join(f"{n} {versions[n] or 'missing'}" for n in names)
    settings = run.get("settings") or {}
    lines = [
        f"GPU check of {run.get('date', '?')} on **{run.get('gpu', '?')}**" + (" (CPU dry run, tiny models)" if run.get("dry_run") else "") + ".",
        "",
        f"Python {run.get('python', '?')}; {used}." if used else f"Python {run.get('python', '?')}.",
    ]
    if settings:
        lines += ["", f"Plan-check stages: {settings.get('steps', '?')} steps ({settings.get('llama_steps', 1)} for Llama) of "
                      f"{settings.get('prompts_per_step', '?')} prompt(s) x G={settings.get('num_generations', '?')}, "
                      f"{settings.get('completion_tokens', '?')}-token completions, LoRA r={settings.get('lora_rank', '?')}; "
                      f"time budget {settings.get('time_budget_s', '?')} s."]
    lines += ["", "| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" if i < 3 or i == len(COLUMNS) - 1 else "---:" for i in range(len(COLUMNS))) + "|"]
    lines += ["| " + " | ".join(cells(row)) + " |" for row in run.get("rows", [])]
    if not run.get("rows"):
        lines.append("| " + " | ".join(["-"] * (len(COLUMNS) - 1)) + " | no stage finished |")
    lines += ["", "Peak VRAM is `torch.cuda.max_memory_allocated`; the plan's estimate also counts 1 GiB of CUDA context. "
                  "Step time is the mean over the stage's steps; generated tokens/s is over generation time."]
    probed = [row for row in run.get("rows", []) if row.get("probes")]
    if probed:
        lines += ["", "Probes (scripts/gpu_check_worker.py; what each must show: docs/gpu.md, \"What a GPU run must check\"):", ""]
        lines += [f"- {row.get('model', '?')}/{row.get('backend', '?')}/{row.get('stage', '?')}: "
                  + "; ".join(f"{name} {json.dumps(value)}" for name, value in row["probes"].items()) for row in probed]
    if not run.get("complete", True):
        lines += ["", f"The run was cut short while running: {run.get('running') or '?'}; the rows above are the stages that finished."]
    return "\n".join(lines)


def section(body: str) -> str:
    return f"{BEGIN}\n{body}\n{END}"


def replace_section(text: str, body: str) -> str:
    """``text`` with its marked section replaced by ``body`` (appended at the end when there are no markers)."""
    if BEGIN in text and END in text and text.index(BEGIN) < text.index(END):
        head, rest = text.split(BEGIN, 1)
        return head + section(body) + rest.split(END, 1)[1]
    if BEGIN in text or END in text:
        raise ValueError(f"one of the markers {BEGIN} / {END} is missing or they are out of order")
    return text.rstrip("\n") + "\n\n## GPU check results\n\n" + section(body) + "\n"


def read_section(text: str) -> str | None:
    """The body between the markers, or None without them."""
    if BEGIN not in text or END not in text:
        return None
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def load_run(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    if isinstance(data, list):  # the rows alone (gpu_check.py --json printed them)
        data = {"rows": data}
    if not isinstance(data, dict) or not isinstance(data.get("rows", []), list):
        raise ValueError("expected the object gpu_check.py --json-out writes (with a 'rows' list)")
    return data


def atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", type=Path, help="gpu_check.json from scripts/offline_gpu_check.sh (or gpu_check.py --json-out)")
    parser.add_argument("--write", action="store_true", help="replace the marked section of --doc and keep the JSON as --recorded")
    parser.add_argument("--doc", type=Path, default=DOC, help="the docs page (default docs/gpu.md; created with a heading when absent)")
    parser.add_argument("--recorded", type=Path, default=RECORDED, help="where --write keeps the JSON (default docs/results/gpu_check.json)")
    args = parser.parse_args(argv)
    try:
        run = load_run(args.json)
    except (OSError, ValueError) as err:
        print(f"gpu_table: cannot read {args.json}: {err}", file=sys.stderr)
        return 2
    body = render(run)
    print(body)
    if args.write:
        text = args.doc.read_text() if args.doc.is_file() else "# GPU\n"
        try:
            atomic_write(args.doc, replace_section(text, body))
        except ValueError as err:
            print(f"gpu_table: {args.doc}: {err}", file=sys.stderr)
            return 2
        if args.json.resolve() != args.recorded.resolve():
            atomic_write(args.recorded, json.dumps(run, indent=2) + "\n")
        print(f"gpu_table: wrote {args.doc} and {args.recorded}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
