"""Turn the GPU check's JSON into the docs: docs/gpu.md's measured tables (peak VRAM next to the plan's estimate per
stage, step time, generated tokens/s; GAPO learning per backend) and the README's "Measured on a GPU" line, each
naming the command that measured it.

    python scripts/gpu_table.py results/gpu_check.json            # print the markdown and the README line
    python scripts/gpu_table.py results/gpu_check.json --write    # also replace docs/gpu.md's and the README's marked
                                                                  # sections and keep the JSON as docs/results/gpu_check.json

A run cut short (``complete`` false) still renders: its finished rows, and the stage in flight with the figures its
worker had written to ``gpu_check_partial.json`` beside the JSON. A dry run renders but is not written: it is no
GPU measurement.

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
README = REPO / "README.md"
PARTIAL = "gpu_check_partial.json"  # scripts/gpu_check.py's PARTIAL
LINE_BEGIN, LINE_END = "<!-- gpu-line:begin -->", "<!-- gpu-line:end -->"
RECORDED = REPO / "docs" / "results" / "gpu_check.json"
BEGIN, END = "<!-- gpu-check:begin -->", "<!-- gpu-check:end -->"
GIB = 1024**3
COLUMNS = ("model", "backend", "stage", "peak VRAM GiB", "plan GiB", "plan / peak", "step s", "gen tok/s", "status")
VERSION_ORDER = ("torch", "transformers", "trl", "unsloth", "unsloth_zoo", "peft", "accelerate", "bitsandbytes", "datasets", "fsspec", "xformers", "triton")
LEARN_COLUMNS = ("backend", "weights", "steps", "step s", "start JSD", "GAPO JSD", "GAPO valid", "baseline JSD", "targets")
PLACEHOLDER = "No GPU run recorded yet: run the device call above, then `python scripts/gpu_table.py FILES_AT/gpu_check.json --write`."
README_PLACEHOLDER = "**Measured on a GPU: nothing yet**"


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def cells(row: dict[str, Any]) -> list[str]:
    """One table row's cells; ``-`` where the stage measured nothing (skipped, timed out, no plan)."""
    peak, est = row.get("peak_vram_bytes", row.get("peak_vram_bytes_so_far")), row.get("estimate_bytes")
    step = row.get("step_seconds", (row.get("gapo") or {}).get("step_seconds"))  # a learning row: GAPO's step
    if not _number(step) and row.get("step_seconds_so_far"):  # a stage cut short: the mean of the steps it finished
        step = sum(row["step_seconds_so_far"]) / len(row["step_seconds_so_far"])
    status = str(row.get("status", ""))
    if row.get("estimate_note") and est is None:
        status += f" (no plan: {row['estimate_note']})"
    return [
        str(row.get("model", "?")), str(row.get("backend", "?")), str(row.get("stage", "pair")),
        f"{peak / GIB:.2f}" if _number(peak) else "-",
        f"{est / GIB:.2f}" if _number(est) else "-",
        f"{est / peak:.2f}" if _number(peak) and peak and _number(est) else "-",
        f"{step:.1f}" if _number(step) else "-",
        f"{row['tokens_per_second']:.0f}" if _number(row.get("tokens_per_second")) else "-",
        status.replace("|", "/").replace("\n", " "),
    ]


def _fixed(value: Any, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if _number(value) else "-"


def learn_cells(row: dict[str, Any]) -> list[str]:
    """One learning row: weights (4-bit, or 16-bit and why), GAPO's steps and step time, JSD before / after, the baseline."""
    gapo, base = row.get("gapo") or {}, row.get("grpo_baseline") or {}
    steps = gapo.get("step_seconds_so_far") or row.get("gapo_step_seconds_so_far")
    step = gapo.get("step_seconds") if _number(gapo.get("step_seconds")) else (sum(steps) / len(steps) if steps else None)
    weights = str(row.get("weights", "-")) + (" (4-bit refused)" if row.get("refused_4bit") else "")
    met = row.get("targets")
    targets = "met" if row.get("targets_met") else (("missed: " + ", ".join(k for k, v in met.items() if v is not True)) if met else str(row.get("status", "-")))
    return [str(row.get("backend", "?")), weights, str(gapo.get("steps", len(steps) if steps else "-")), _fixed(step, 2),
            _fixed((row.get("before") or {}).get("heldout_jsd")), _fixed(gapo.get("heldout_jsd")), _fixed(gapo.get("heldout_valid_rate")),
            _fixed(base.get("heldout_jsd")), targets.replace("|", "/")]


def readme_line(run: dict[str, Any]) -> str:
    """The README's "Measured on a GPU" line: where, when, the 7B pairs' peaks against their plans, GAPO's learning."""
    rows = run.get("rows", [])
    pairs = [f"{r['backend']} {r['peak_vram_bytes'] / GIB:.1f} GiB peak (plan {_fixed(_gib(r.get('estimate_bytes')), 1)}), "
             f"{_fixed(r.get('step_seconds'), 1)} s a step" for r in rows if r.get("stage") == "pair" and _number(r.get("peak_vram_bytes"))]
    return (f"**Measured on a GPU** ({run.get('gpu', '?')}, {run.get('date', '?')}, `{run.get('command') or 'scripts/gpu_check.py'}`): "
            + ("; ".join(pairs) + ". " if pairs else "") + f"{run.get('summary') or '-'}. Tables: [docs/gpu.md](docs/gpu.md#the-gpu-check).")


def _gib(value: Any) -> float | None:
    return value / GIB if _number(value) else None


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
                      f"time budget {settings.get('time_budget_s', '?')} s"
                      + (f" (budgets scaled x{settings['budget_scale']:g})" if settings.get("budget_scale", 1) != 1 else "") + "."]
    lines += ["", f"Printed by `{run.get('command') or 'scripts/gpu_check.py'}`, then `python scripts/gpu_table.py gpu_check.json --write`.",
              "", f"**Summary:** {run.get('summary') or '-'}"]
    lines += ["", "| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" if i < 3 or i == len(COLUMNS) - 1 else "---:" for i in range(len(COLUMNS))) + "|"]
    lines += ["| " + " | ".join(cells(row)) + " |" for row in run.get("rows", [])]
    if not run.get("rows"):
        lines.append("| " + " | ".join(["-"] * (len(COLUMNS) - 1)) + " | no stage finished |")
    lines += ["", "Peak VRAM is `torch.cuda.max_memory_allocated`; the plan's estimate also counts 1 GiB of CUDA context. "
                  "Step time is the mean over the stage's steps; generated tokens/s is over generation time."]
    learned = [row for row in run.get("rows", []) if row.get("stage") == "learn"]
    if learned:
        lines += ["", "GAPO learning (the demo's collapsed tiny model; held-out lists at T = 0.7; targets: start JSD > 0.3, "
                      "GAPO JSD < 0.1 with valid >= 0.95, baseline JSD > 0.3):", "",
                  "| " + " | ".join(LEARN_COLUMNS) + " |", "|---|---|" + "---:|" * (len(LEARN_COLUMNS) - 3) + "---|"]
        lines += ["| " + " | ".join(learn_cells(row)) + " |" for row in learned]
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
    partial = path.with_name(PARTIAL)
    running = data.get("running")
    if not data.get("complete", True) and running and "/" in running and partial.is_file():  # killed inside a stage
        model, backend, stage = running.rsplit("/", 2)
        figures = json.loads(partial.read_text())
        data = {**data, "rows": [*data["rows"], {"stage": stage, "model": model, "backend": backend, **figures,
                                                  "status": "cut short with the whole command (figures so far)"}]}
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
    parser.add_argument("--readme", type=Path, default=README, help="the README whose marked line --write replaces")
    parser.add_argument("--recorded", type=Path, default=RECORDED, help="where --write keeps the JSON (default docs/results/gpu_check.json)")
    args = parser.parse_args(argv)
    try:
        run = load_run(args.json)
    except (OSError, ValueError) as err:
        print(f"gpu_table: cannot read {args.json}: {err}", file=sys.stderr)
        return 2
    body = render(run)
    print(body)
    print("\n" + readme_line(run))
    if args.write and run.get("dry_run"):
        print("gpu_table: a dry run is no GPU measurement; not writing it into the docs", file=sys.stderr)
        return 2
    if args.write:
        readme = args.readme.read_text()
        if LINE_BEGIN not in readme or LINE_END not in readme:
            print(f"gpu_table: {args.readme} has no {LINE_BEGIN} / {LINE_END} markers", file=sys.stderr)
            return 2
        head, rest = readme.split(LINE_BEGIN, 1)
        atomic_write(args.readme, head + LINE_BEGIN + "\n" + readme_line(run) + "\n" + LINE_END + rest.split(LINE_END, 1)[1])
        text = args.doc.read_text() if args.doc.is_file() else "# GPU\n"
        try:
            atomic_write(args.doc, replace_section(text, body))
        except ValueError as err:
            print(f"gpu_table: {args.doc}: {err}", file=sys.stderr)
            return 2
        if args.json.resolve() != args.recorded.resolve():
            atomic_write(args.recorded, json.dumps(run, indent=2) + "\n")
        print(f"gpu_table: wrote {args.doc}, {args.readme} and {args.recorded}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
