"""Where the demo's time goes: its stages, and a pretraining step against the arithmetic it does.

    python benchmarks/demo_time.py                                   # runs `gapo-lite demo` once (seed 0), then the step measurement
    python benchmarks/demo_time.py --results runs/demo/results.json  # the stage times of a run already made, then the step measurement
    python benchmarks/demo_time.py --steps 0 --results runs/demo/results.json   # the stage times only

The step measurement, in this one process, with the demo's settings and thread count: the time of a copy
step and of a collapse step (``--steps`` each, after warm-up), the FLOPs one step of each does (torch's
``FlopCounterMode``: matrix products and attention, forward and backward), and the machine's fp32 matmul
rate at the shape of the model's products, measured here. ``arithmetic`` = FLOPs / rate is what the step
would take if it were nothing but those products at that rate; ``step / arithmetic`` is the overhead that
remains (1.0: none). A rerun on any machine gives that machine's ratio.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def matmul_rate(m: int, k: int, n: int, seconds: float = 1.0) -> float:
    """fp32 GFLOP/s of an (m x k) @ (k x n) product, repeated for about ``seconds`` after a warm-up."""
    import torch

    a, b = torch.randn(m, k), torch.randn(k, n)
    for _ in range(10):
        a @ b
    reps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        a @ b
        reps += 1
    return 2 * m * k * n * reps / (time.perf_counter() - start) / 1e9


def stage_rows(results: dict[str, Any], command_seconds: float | None) -> list[tuple[str, float]]:
    """(stage, seconds) from a demo's ``results.json``: each stage with its measurement, and the whole."""
    rows = [(name, seconds) for name, seconds in results["stage_seconds"].items()]
    rows.append(("stages with their measurements (wall_seconds)", results["wall_seconds"]))
    if command_seconds is not None:
        rows.append(("the whole command (imports and plots included)", command_seconds))
    return rows


def timed(run: Any, steps: int) -> tuple[float, float]:
    """(seconds per step, GFLOP per step) of ``run(n)``, which trains ``n`` steps: after 5 warm-up steps (the
    allocator, the kernels' first calls), FLOPs counted on one step, time measured over ``steps``."""
    from torch.utils.flop_counter import FlopCounterMode

    run(5)
    with FlopCounterMode(display=False) as counter:
        run(1)
    start = time.perf_counter()
    run(steps)
    return (time.perf_counter() - start) / steps, counter.get_total_flops() / 1e9


def step_measurement(settings: Any, steps: int, out: Path) -> tuple[list[dict[str, Any]], float]:
    """Per phase (copy, collapse; and the copy step with the logits taken everywhere, as before issue 56): seconds
    and GFLOP per step, the arithmetic estimate and the ratio; and the speed-up of reading the logits only where the
    loss needs them (the same process, the same steps)."""
    import torch

    from gapo_lite.demo.parts import build_list_model, pretrain_list_model
    from gapo_lite.demo.pretrain import list_answer_loss
    from gapo_lite.demo.stages import torch_threads
    from gapo_lite.demo.supervised import train_steps
    from gapo_lite.models import load_model

    s = settings
    path = build_list_model(out / "base_model", s)

    def collapse(n: int):  # the demo's own pretraining call, n collapse steps (only the last attention layer trains)
        pretrain_list_model(model, tok, s, copy_steps=0, collapse_steps=n, first_share=s.first_share, seed=s.seed, progress=False)

    def copy_loss(full_logits: bool):  # n copy steps as the demo takes them, the logits read where the loss needs them or everywhere
        loss = list_answer_loss(model, tok, batch_size=s.pretrain_batch, first_share=None, mixed_share=s.mixed_share, lm_on_items=s.lm_on_items,
                                full_logits=full_logits)
        return lambda n: train_steps(model, loss, steps=n, learning_rate=s.copy_lr, seed=s.seed, progress=False)

    rows = []
    with torch_threads(s.threads):
        model, tok = load_model(path, lora=None)
        tokens = s.pretrain_batch * 48  # a batch's tokens: lists of 4-12 items pad to about 48
        shape = [tokens, s.hidden_size, 2 * s.hidden_size]  # the blocks' products: (tokens x hidden) @ (hidden x intermediate)
        rate = matmul_rate(*shape)
        for name, run in [("copy", copy_loss(False)), ("collapse", collapse), ("copy, logits everywhere", copy_loss(True))]:
            seconds, gflop = timed(run, steps)
            rows.append({"phase": name, "step_seconds": seconds, "gflop": gflop, "rate_gflops": rate, "arithmetic_seconds": gflop / rate,
                         "ratio": seconds / (gflop / rate), "threads": torch.get_num_threads(), "shape": shape})
    by_name = {r["phase"]: r for r in rows}
    return rows, by_name["copy, logits everywhere"]["step_seconds"] / by_name["copy"]["step_seconds"]


def main(argv: list[str] | None = None) -> int:
    import dataclasses

    from gapo_lite.demo.run import DemoSettings
    from gapo_lite.overrides import apply_overrides
    from gapo_lite.quiet import quiet_libraries

    quiet_libraries(progress_bars=False)

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results", help="a demo's results.json to read the stage times from (default: run the demo once)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=40, help="pretraining steps timed per phase (0: no step measurement)")
    parser.add_argument("--out", default="runs/demo_time")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="a demo setting, as in gapo-lite demo")
    args = parser.parse_args(argv)
    settings = dataclasses.replace(apply_overrides(DemoSettings(), args.overrides, what="demo setting"), seed=args.seed)
    out = Path(args.out)
    command_seconds = None
    if args.results:
        results_path = Path(args.results)
    else:  # the seed benchmark's way: a fresh `gapo-lite demo` process, timed from start to exit
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from demo_seeds import run_seed

        _, command_seconds, _ = run_seed(out / f"seed{args.seed}", args.seed, False, args.overrides)
        results_path = out / f"seed{args.seed}" / "results.json"
    results = json.loads(results_path.read_text())
    print(f"the demo's stages ({results_path}, {results['settings']['threads']} thread(s)):")
    for name, seconds in stage_rows(results, command_seconds):
        print(f"  {name:50s}{seconds:8.1f} s")
    record: dict[str, Any] = {"results": str(results_path), "stages": dict(stage_rows(results, command_seconds))}
    if args.steps > 0:
        with tempfile.TemporaryDirectory() as tmp:
            rows, speedup = step_measurement(settings, args.steps, Path(tmp))
        print(f"\na pretraining step ({settings.pretrain_batch} lists a batch, {settings.threads} thread(s)); "
              f"fp32 matmul rate at {' x '.join(map(str, rows[0]['shape']))}: {rows[0]['rate_gflops']:.1f} GFLOP/s")
        print(f"  {'phase':26s}{'step ms':>10s}{'GFLOP':>10s}{'arithmetic ms':>15s}{'step / arithmetic':>20s}")
        for r in rows:
            print(f"  {r['phase']:26s}{r['step_seconds'] * 1e3:10.1f}{r['gflop']:10.2f}{r['arithmetic_seconds'] * 1e3:15.1f}{r['ratio']:20.2f}")
        print(f"the copy step with the logits taken everywhere takes {speedup:.2f}x the time of the demo's (the output layer on the read positions only)")
        record.update(steps=rows, logits_everywhere_over_read_positions=speedup)
    out.mkdir(parents=True, exist_ok=True)
    (out / "demo_time.json").write_text(json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
