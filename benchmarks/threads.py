"""Torch threads for the demo: seconds per copy step and per GAPO step of the demo's tiny model with one
and with two threads, alternating in one process; the median per setting and the ratio to one thread.

    python benchmarks/threads.py [--copy-steps 60] [--rl-steps 24] [--rounds 2] [--threads 1 2]

Run it on an otherwise idle machine: a thread that has to wait for a core another process holds stalls
the other one, so on a busy machine more threads can be slower.
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from pathlib import Path


def copy_step_seconds(model, tok, settings, steps: int, seed: int) -> float:
    """Seconds per step of the demo's copy phase (a uniform target over the list's items)."""
    from gapo_lite.demo.parts import pretrain_list_model

    t = time.perf_counter()
    pretrain_list_model(model, tok, settings, copy_steps=steps, collapse_steps=0, first_share=None, seed=seed, progress=False)
    return (time.perf_counter() - t) / steps


def rl_step_seconds(settings, start: Path, out: Path, steps: int) -> float:
    """Median seconds per GAPO step of the demo's RL run (TRL's ``step_time``; the first two steps dropped)."""
    from gapo_lite.demo.parts import rl_config
    from gapo_lite.training import train

    config = rl_config(dataclasses.replace(settings, rl_steps=steps), start, out, "gapo")
    result = train(dataclasses.replace(config, save_steps=10 * steps))
    times = [row["step_time"] for row in result.log_history if "step_time" in row][2:]
    if not times:
        raise RuntimeError(f"no step_time in the log of {out}; run more than 2 RL steps")
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    from gapo_lite.demo.parts import build_list_model
    from gapo_lite.demo.run import DemoSettings
    from gapo_lite.demo.stages import torch_threads
    from gapo_lite.models import load_model

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copy-steps", type=int, default=60)
    parser.add_argument("--rl-steps", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args(argv)
    if args.copy_steps < 1 or args.rl_steps < 3 or args.rounds < 1:
        parser.error("need --copy-steps >= 1, --rl-steps >= 3 and --rounds >= 1")

    s = DemoSettings()
    copy: dict[int, list[float]] = {n: [] for n in args.threads}
    rl: dict[int, list[float]] = {n: [] for n in args.threads}
    with tempfile.TemporaryDirectory() as tmp:
        model, tok = load_model(build_list_model(Path(tmp) / "base", s), lora=None)
        for r in range(args.rounds):
            for n in args.threads:
                with torch_threads(n):
                    copy[n].append(copy_step_seconds(model, tok, s, args.copy_steps, seed=r))
        start = Path(tmp) / "start"
        model.save_pretrained(start)
        tok.save_pretrained(start)
        for r in range(args.rounds):
            for n in args.threads:
                with torch_threads(n):
                    rl[n].append(rl_step_seconds(s, start, Path(tmp) / f"rl_{n}_{r}", args.rl_steps))

    first = args.threads[0]
    print(f"\nseconds per step, median of {args.rounds} alternating rounds (copy: {args.copy_steps} steps of batch {s.pretrain_batch}; "
          f"GAPO: {args.rl_steps} steps of {s.prompts_per_step} x {s.num_generations})")
    print(f"{'threads':>8s}{'copy step':>12s}{'ratio':>8s}{'GAPO step':>12s}{'ratio':>8s}")
    for n in args.threads:
        c, g = statistics.median(copy[n]), statistics.median(rl[n])
        print(f"{n:>8d}{c:12.3f}{c / statistics.median(copy[first]):8.2f}{g:12.3f}{g / statistics.median(rl[first]):8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
