"""``gapo-lite eval``: diversity / validity / accuracy evaluation with a side-by-side report."""
from __future__ import annotations

import argparse

from gapo_lite._bootstrap import BACKENDS, EVAL_BACKEND, REQUESTED_PRECISIONS

_SUITES = ("lists", "open", "creative", "guard", "bench")


def _suites(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in names if s not in _SUITES]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"unknown suite(s) {bad or text!r}; choose from {','.join(_SUITES)}")
    return names


def _names(text: str) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise argparse.ArgumentTypeError("give at least one name")
    return names


def _temperatures(text: str) -> tuple[float, ...]:
    from gapo_lite.eval.sweep import parse_temperatures

    try:
        return parse_temperatures(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="model folder, hub name or .gguf file (the base; a .gguf is converted once to a folder beside it)")
    parser.add_argument("--adapter", help="PEFT/LoRA adapter folder; the report compares base vs adapter")
    parser.add_argument("--compare", help="a second model folder, or an adapter folder on the same base, for the side-by-side")
    parser.add_argument("--suite", type=_suites, default=list(_SUITES), help="comma list of lists,open,creative,guard,bench (default: all)")
    parser.add_argument("--out", required=True, help="output folder for results.json, report.md, PNGs and samples/")
    parser.add_argument("--n", type=_positive, help="samples per prompt for every suite (defaults: lists 100, open 500, creative 100)")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-new-tokens", type=_positive, help="for every suite (defaults: lists 24, open 16, creative 256)")
    parser.add_argument("--batch-size", type=_positive, default=64, help="generation batch size (rows)")
    parser.add_argument("--sweep", action="store_true", help="add the temperature sweep (diversity vs base-model coherence)")
    parser.add_argument("--sweep-temperatures", type=_temperatures, default=(0.5, 0.7, 0.9, 1.1, 1.3))
    parser.add_argument("--sweep-n", type=_positive, default=100, help="samples per open-ended prompt at each sweep temperature")
    parser.add_argument("--bench-tasks", type=_names, help="comma list: gsm8k,math,humaneval,mmlu_pro (default) or lm-eval task names")
    parser.add_argument("--bench-limit", type=_positive, default=200, help="questions per benchmark (HumanEval is always whole)")
    parser.add_argument("--bench-full", action="store_true", help="whole benchmarks, no subset")
    parser.add_argument("--bench-batch-size", type=_positive, default=8)
    parser.add_argument("--bench-include-path", action="append", default=[], help="extra folder of lm-eval task YAMLs")
    parser.add_argument("--bench-chat-template", action="store_true", help="apply the tokenizer's chat template in the benchmarks")
    parser.add_argument("--allow-code-exec", action="store_true", help="let HumanEval run the model's code to grade it")
    parser.add_argument("--fold-plurals", action="store_true", help="open-ended: count 'cats' and 'cat' as one answer")
    parser.add_argument("--num-lists", type=_positive, default=10)
    parser.add_argument("--list-size", type=_positive, default=8)
    parser.add_argument("--num-orders", type=_positive, default=4, help="shuffled orders per list (position bias)")
    parser.add_argument("--backend", choices=BACKENDS, default=EVAL_BACKEND,
                        help=f"which backend loads the model (default {EVAL_BACKEND}: why in gapo_lite/_bootstrap.py)")
    parser.add_argument("--load-in-4bit", action="store_true", help="load the base model in NF4 (bitsandbytes, GPU or CPU); refused in one line where it cannot run")
    parser.add_argument("--no-progress", action="store_true", help="hide the sampling progress bars")
    parser.add_argument("--precision", choices=REQUESTED_PRECISIONS, default="auto",
                        help="sampling on a CPU: auto = measured (bf16 autocast where a timed step says it is faster), bf16 = autocast (native bf16 only), fp32")


def run(args: argparse.Namespace) -> int:
    from gapo_lite.errors import require_local_model
    from gapo_lite.eval.runner import evaluate

    require_local_model(args.model, "--model")
    if args.compare is not None:
        require_local_model(args.compare, "--compare")

    results = evaluate(
        args.model, args.adapter, args.compare,
        suites=args.suite, out_dir=args.out, n=args.n, temperature=args.temperature, seed=args.seed,
        max_new_tokens=args.max_new_tokens, batch_size=args.batch_size,
        sweep=args.sweep, sweep_temperatures=args.sweep_temperatures, sweep_n=args.sweep_n,
        bench_tasks=args.bench_tasks, bench_limit=None if args.bench_full else args.bench_limit,
        bench_batch_size=args.bench_batch_size, bench_include_path=args.bench_include_path,
        bench_chat_template=args.bench_chat_template, allow_code_exec=args.allow_code_exec,
        fold_plurals=args.fold_plurals, num_lists=args.num_lists, list_size=args.list_size, num_orders=args.num_orders,
        backend=args.backend, load_in_4bit=args.load_in_4bit, progress=not args.no_progress,
        precision=args.precision,
    )
    for row in results["comparison"]["rows"]:
        values = "  ".join(f"{label}={row.get(label)!s:.8}" for label in results["comparison"]["labels"])
        delta = f"  delta={row['delta']:+.4f}" if "delta" in row else ""
        print(f"{row['metric']}: {values}{delta}")
    check = results.get("damage")
    if check:  # the damage report: reply form and guard accuracy of the second model against the first
        print(f"damage check ({check['checked']} against {check['reference']}):")
        for line in check["warnings"] or ["no check is worse beyond the noise", *check["lines"]]:
            print(f"  {line}")
    print(f"gapo-lite eval: report in {args.out}/report.md")
    return 0
