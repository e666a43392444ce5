"""Averaged and scaled LoRA updates of SmolLM2 GAPO runs, measured by the lab's protocol.

Runs of one setting from one start differ by their RL seed; each held-out JSD moves by about as much between
two such runs as the start's does to either. If GAPO's update has a common direction under that noise,
the mean of several runs' updates keeps it and shrinks the rest (a "model soup", as WARP averages RL policies),
and a scale above 1 extrapolates along it (as ExPO does from a supervised model). Each model here is the start's
weights plus SCALE x the mean of the runs' merged LoRA deltas (B A x alpha / r), measured like a stage of
`python -m lab.smollm2` (held-out lists, open suite, guard) with the first run's recorded settings:

    python lab/scripts/smollm2_average.py runs/lenient_s0 --runs runs/rl0_s0 runs/rl1_s0 --scale 1 --scale 2 \
        --single runs/rl1_s0 --threads 1 --record docs/results/smollm2_average_s0.json

Each RUN is an experiment folder whose `gapo_lists` run (or --run) trained from START's start. The table is the
report's (`format_result_markdown`), the damage lines its `damage_lines`.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def merged_delta(start: Path, adapter: Path) -> dict[str, Any]:
    """What the LoRA adapter adds to each weight of ``start``'s model (its merged delta), by parameter name."""
    from peft import PeftModel

    from gapo_lite.models import load_model

    model, _ = load_model(start, lora=None)
    peft_model = PeftModel.from_pretrained(model, str(adapter), is_trainable=False)
    return {name.removeprefix("base_model.model.") + ".weight": module.get_delta_weight("default").detach().float().clone()
            for name, module in peft_model.named_modules() if hasattr(module, "get_delta_weight") and "default" in getattr(module, "lora_A", {})}


def add_scaled_mean(model: Any, deltas: list[dict[str, Any]], scale: float) -> Any:
    """``model`` with ``scale`` x the mean of ``deltas`` added to its weights (in place)."""
    import torch

    params = dict(model.named_parameters())
    missing = sorted(set(deltas[0]) - set(params))
    if missing or any(set(d) != set(deltas[0]) for d in deltas):
        raise ValueError(f"the runs' adapters do not cover the same weights of this model ({', '.join(missing[:3]) or 'they differ among themselves'})")
    with torch.no_grad():
        for name in deltas[0]:
            params[name].add_(sum(d[name] for d in deltas) * (scale / len(deltas)))
    return model


def label(names: list[str], scale: float) -> str:
    """The table's name for one model: "mean of rl0_s0 + rl1_s0, x2"."""
    what = names[0] if len(names) == 1 else "mean of " + " + ".join(names)
    return f"{what}, x{scale:g}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("start", type=Path, help="the experiment folder whose start (pretrained/, stages/start.json) the runs trained from")
    parser.add_argument("--runs", nargs="+", type=Path, default=[], help="folders whose runs' updates are averaged")
    parser.add_argument("--single", action="append", type=Path, default=[], help="also a folder's update alone (at each scale)")
    parser.add_argument("--scale", action="append", type=float, help="times the mean update (default 1; repeat for several)")
    parser.add_argument("--run", default="gapo_lists", help="which RL run of each folder (default gapo_lists)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--record", type=Path, help="write the report's record here (a JSON list)")
    args = parser.parse_args(argv)
    groups = ([args.runs] if args.runs else []) + [[f] for f in args.single]
    folders = {f for g in groups for f in g}
    missing = [str(f) for f in folders if not (f / args.run / "adapter" / "adapter_config.json").is_file()]
    if not groups or missing:
        parser.error(f"no finished {args.run} adapter in: {', '.join(sorted(missing))}" if missing else "give --runs or --single")
    if not (args.start / "stages" / "start.json").is_file():
        parser.error(f"{args.start} has no measured start (stages/start.json)")
    import dataclasses

    import torch

    from gapo_lite.models import load_model
    from lab.smollm2 import measure, recorded_settings
    from lab.smollm2_report import damage_lines, format_result_markdown, load_results, slim, slim_measured

    torch.set_num_threads(args.threads)
    s = recorded_settings(sorted(folders)[0])
    results = {"settings": dataclasses.asdict(s), "before": load_results(args.start)["before"], "labels": {}, "added": {}}
    start = args.start / "pretrained"
    deltas = {f: merged_delta(start, f / args.run / "adapter") for f in sorted(folders)}
    for group in groups:
        for scale in args.scale or [1.0]:
            model, tokenizer = load_model(start, lora=None)
            name = label([f.name for f in group], scale)
            results[name] = slim_measured(measure(add_scaled_mean(model, [deltas[f] for f in group], scale), tokenizer, s))
            results["added"][name] = {"label": name, "folders": [str(f) for f in group], "scale": scale}
            print(f"measured {name}: held-out JSD {results[name]['heldout_jsd']:.3f}")
    print(format_result_markdown([results]))
    print("\n".join(damage_lines(results)))
    if args.record:
        args.record.write_text(json.dumps([slim(results)], indent=1))
        print("wrote", args.record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
