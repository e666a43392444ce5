"""Print the memory-plan table of docs/gpu.md from ``gapo-lite plan --json`` (so the two cannot drift).

    python scripts/memory_table.py            # print the markdown table
    python scripts/memory_table.py --check    # exit 1 if docs/gpu.md's table differs from what this prints
    python scripts/memory_table.py --write    # replace docs/gpu.md's table with what this prints

The table sits in docs/gpu.md between ``<!-- memory-table:begin -->`` and ``<!-- memory-table:end -->``;
``tests/test_memory_table.py`` runs ``--check``'s comparison.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

README = ROOT / "docs" / "gpu.md"
BEGIN, END = "<!-- memory-table:begin -->", "<!-- memory-table:end -->"
GIB = 1024**3
# The recipes' settings (qwen7b_lists / qwen32b_lists: 8 prompts x G=32, 32-token completions, LoRA r=64, 4-bit,
# Unsloth, 8-bit AdamW); 128 prompt tokens bound the list prompts (about 60-100 tokens expected with Qwen's tokenizer).
COMMON = ["--prompt-tokens", "128", "--completion-tokens", "32"]
ROWS: list[tuple[str, list[str]]] = [
    ("7B, 24 GiB", ["--model", "qwen2.5-7b", "--budget-gb", "24", *COMMON]),
    ("7B, 80 GiB", ["--model", "qwen2.5-7b", "--budget-gb", "80", *COMMON]),
    ("7B, 80 GiB, vLLM 0.5", ["--model", "qwen2.5-7b", "--budget-gb", "80", "--fast-inference", "--gpu-memory-utilization", "0.5", *COMMON]),
    ("7B, 24 GiB, transformers", ["--model", "qwen2.5-7b", "--budget-gb", "24", "--backend", "transformers", *COMMON]),
    ("32B, 48 GiB", ["--model", "qwen2.5-32b", "--budget-gb", "48", *COMMON]),
    ("32B, 80 GiB", ["--model", "qwen2.5-32b", "--budget-gb", "80", *COMMON]),
]
TERMS = ("weights", "lora_params_and_optimizer", "activations", "logits_and_logprobs", "kv_cache", "generation_transient", "vllm_pool")
HEADER = ("model, budget", "weights", "LoRA + optimizer", "activations", "logits", "KV cache", "gen. transient", "vLLM pool", "est. peak", "plan")


def plan_json(argv: list[str]) -> dict:
    """``gapo-lite plan ARGV --json``'s output (a plan that does not fit is printed too, with exit code 1)."""
    from gapo_lite.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["plan", *argv, "--json"])
    if code not in (0, 1):
        raise RuntimeError(f"gapo-lite plan {' '.join(argv)} failed ({code}): {err.getvalue().strip()}")
    return json.loads(out.getvalue())


def verdict(plan: dict) -> str:
    if plan["fits"]:
        passes = plan["steps_per_generation"]
        return f"fits: {plan['chunk_size']} completions per pass, {passes} pass{'es' if passes > 1 else ''} per step"
    return f"does not fit: needs {plan['estimated_peak_bytes'] / GIB:.2f} GiB at 1 completion per pass"


def render() -> str:
    """The markdown table, one row per ``ROWS`` entry, with the commands that print each row."""
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    commands = []
    for label, argv in ROWS:
        plan = plan_json(argv)
        cells = [label, *(f"{plan['terms'][t] / GIB:.2f}" for t in TERMS), f"{plan['estimated_peak_bytes'] / GIB:.2f}", verdict(plan)]
        lines.append("| " + " | ".join(cells) + " |")
        commands.append(f"gapo-lite plan {' '.join(argv)}")
    listing = "\n".join(["", "Printed by `python scripts/memory_table.py` from these commands (add `--json` for every term):", "", "```", *commands, "```"])
    return "\n".join(lines) + "\n" + listing


def readme_table(text: str) -> str:
    """What docs/gpu.md holds between the table's markers."""
    if BEGIN not in text or END not in text:
        raise ValueError(f"docs/gpu.md has no {BEGIN} ... {END} block")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true", help="exit 1 if docs/gpu.md's table differs")
    group.add_argument("--write", action="store_true", help="rewrite docs/gpu.md's table")
    args = parser.parse_args(argv)
    table = render()
    if args.check:
        if readme_table(README.read_text()) != table:
            print("docs/gpu.md's memory table is out of date: run python scripts/memory_table.py --write", file=sys.stderr)
            return 1
        return 0
    if args.write:
        text = README.read_text()
        head, rest = text.split(BEGIN, 1)
        README.write_text(head + BEGIN + "\n" + table + "\n" + END + rest.split(END, 1)[1])
        return 0
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
