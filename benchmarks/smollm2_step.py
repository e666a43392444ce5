"""Where a SmolLM2-135M GAPO step spends its time, and sampling with a shared prompt prefix against the
plain padded batch it replaced, alternating in one process.

    bash scripts/get_smollm2.sh && python benchmarks/smollm2_step.py [--steps 6] [--threads 2] [--rounds 2]

Part 1 times, per GAPO step of 1 prompt x G completions (the SmolLM2 experiment's shape), TRL's phases:
generation and scoring (``_generate_and_score_completions``, which includes the reward hook), the loss
forward (``compute_loss``), the backward, and the optimizer step; the first step is dropped (warm-up).
Part 2 samples 8-token answers to list prompts both ways (greedy outputs are the same; the shared prefix
runs each prompt through the model once instead of once per sample). Run it on an otherwise idle machine.
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path


def padded_sampling(model, tok, prompts, n: int, max_new_tokens: int, batch_size: int = 64) -> None:
    """The baseline: every sample a row of a left-padded batch, its prompt prefilled once per row."""
    import torch

    from gapo_lite.sampling import render_prompt

    tok.padding_side = "left"
    rows = [render_prompt(tok, p) for p in prompts for _ in range(n)]
    with torch.no_grad():
        for start in range(0, len(rows), batch_size):
            batch = tok(rows[start:start + batch_size], return_tensors="pt", padding=True, add_special_tokens=False)
            model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=True, temperature=0.7, top_k=0, pad_token_id=tok.pad_token_id)


def time_phases(trainer) -> dict[str, list[float]]:
    """Wrap the trainer's phases with timers; returns the dict the timings go into."""
    times: dict[str, list[float]] = defaultdict(list)

    def timed(name, fn):
        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                times[name].append(time.perf_counter() - t)
        return wrapper

    trainer._generate_and_score_completions = timed("generate + score", trainer._generate_and_score_completions)
    trainer.compute_loss = timed("loss forward", trainer.compute_loss)
    trainer.accelerator.backward = timed("backward", trainer.accelerator.backward)
    original_create = trainer.create_optimizer

    def create_optimizer(*args, **kwargs):
        optimizer = original_create(*args, **kwargs)
        optimizer.step = timed("optimizer", optimizer.step)
        return optimizer

    trainer.create_optimizer = create_optimizer
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--generations", type=int, default=16)
    args = parser.parse_args()

    import torch

    from gapo_lite.data import build_list_dataset
    from gapo_lite.gguf import smollm2_path
    from gapo_lite.models import check_model_path, load_model
    from gapo_lite.sampling import sample_completions
    from gapo_lite.training import build_trainer
    from gapo_lite.training.recipes import load_recipe

    torch.set_num_threads(args.threads)
    path = check_model_path(smollm2_path())
    with tempfile.TemporaryDirectory() as tmp:
        config = dataclasses.replace(load_recipe("smollm2_lists"), model=path, num_generations=args.generations, prompts_per_step=1,
                                     invalid_reward=0.0, learning_rate=4e-4, max_steps=args.steps, save_steps=10 * args.steps, output_dir=str(Path(tmp) / "run"))
        trainer = build_trainer(config)
        times = time_phases(trainer)
        t = time.perf_counter()
        trainer.train()
        wall = (time.perf_counter() - t) / args.steps
    steps = [row["step_time"] for row in trainer.state.log_history if "step_time" in row][1:]
    print(f"\nGAPO step, 1 prompt x {args.generations} completions, {args.threads} threads: "
          f"median {statistics.median(steps):.2f} s (TRL step_time), {wall:.2f} s per step with logging")
    print(f"{'phase':22s}{'median s':>10s}{'share':>8s}")
    total = statistics.median(steps)
    for name, values in times.items():
        value = statistics.median(values[1:] or values)
        print(f"{name:22s}{value:10.2f}{value / total:8.2f}")

    model, tok = load_model(path, lora=None)
    rows = build_list_dataset(4, split="heldout", max_items=8, seed=1)
    prompts = [r["prompt"] for r in rows]
    results: dict[str, list[float]] = defaultdict(list)
    for _ in range(args.rounds):
        t = time.perf_counter()
        padded_sampling(model, tok, prompts, 32, 8)
        results["padded rows"].append(time.perf_counter() - t)
        t = time.perf_counter()
        sample_completions(model, tok, prompts, n=32, temperature=0.7, max_new_tokens=8, progress=False)
        results["shared prefix"].append(time.perf_counter() - t)
    base = statistics.median(results["padded rows"])
    print(f"\nsampling 4 prompts x 32 answers, 8 new tokens, {args.threads} threads")
    print(f"{'method':16s}{'median s':>10s}{'ratio':>8s}")
    for name, values in results.items():
        print(f"{name:16s}{statistics.median(values):10.2f}{statistics.median(values) / base:8.2f}")


if __name__ == "__main__":
    main()
