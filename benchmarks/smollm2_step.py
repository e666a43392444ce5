"""A SmolLM2-135M GAPO step with each prompt computed once per group against TRL's own path, and sampling
with a shared prompt prefix against the plain padded batch, alternating in one process.

    bash scripts/get_smollm2.sh && python benchmarks/smollm2_step.py [--steps 8] [--threads 2] [--rounds 2]

Part 1 alternates GAPO steps of 1 prompt x G completions (the SmolLM2 experiment's shape) between TRL's path
(every row's prompt through the model, in generation and in the loss) and the shared prompt
(:mod:`gapo_lite.training.shared_prompt`), and times TRL's phases in each: generation and scoring
(``_generate_and_score_completions``, which includes the reward hook), the loss forward (``compute_loss``),
the backward and the optimizer step; the first two steps are dropped (warm-up).
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

PHASES = ("generate + score", "loss forward", "backward", "optimizer")


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


def time_phases(trainer, mode: list[str]) -> dict[tuple[str, str], list[float]]:
    """Wrap the trainer's phases with timers, keyed by (mode, phase); ``mode[0]`` names the current mode."""
    times: dict[tuple[str, str], list[float]] = defaultdict(list)

    def timed(name, fn):
        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                times[(mode[0], name)].append(time.perf_counter() - t)
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


def alternate(trainer, mode: list[str]):
    """A callback that switches TRL's path and the shared prompt on every step."""
    from transformers import TrainerCallback

    shared_generate = trainer.model.generate
    plain_generate = type(trainer.model).generate.__get__(trainer.model)

    class Alternate(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            shared = state.global_step % 2 == 1
            mode[0] = "shared prompt" if shared else "TRL's path"
            trainer.gapo_share_prompts = shared
            trainer.model.generate = shared_generate if shared else plain_generate

    return Alternate()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8)
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
        mode = ["TRL's path"]
        times = time_phases(trainer, mode)
        trainer.add_callback(alternate(trainer, mode))
        trainer.train()
    steps = [row["step_time"] for row in trainer.state.log_history if "step_time" in row]
    by_mode = {"TRL's path": steps[2::2], "shared prompt": steps[3::2]}  # step k ran in mode k % 2
    base = statistics.median(by_mode["TRL's path"])
    print(f"\nGAPO step, 1 prompt x {args.generations} completions, {args.threads} threads ({args.steps} steps alternating, first two dropped)")
    print(f"{'path':16s}{'step s':>9s}{'ratio':>7s}" + "".join(f"{name:>18s}" for name in PHASES))
    for name, values in by_mode.items():
        median = statistics.median(values)
        phases = "".join(f"{statistics.median(times[(name, phase)][1:] or times[(name, phase)]):18.2f}" for phase in PHASES)
        print(f"{name:16s}{median:9.2f}{median / base:7.2f}{phases}")

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
