"""A SmolLM2-135M GAPO step with each prompt computed once per group against TRL's own path, and sampling
with a shared prompt prefix against the plain padded batch, alternating in one process.

    bash scripts/get_smollm2.sh && python benchmarks/smollm2_step.py [--rounds 4] [--threads 2] [--sampling-rounds 2]

Part 1 cycles GAPO steps of 1 prompt x G completions (the SmolLM2 experiment's shape) through TRL's path in fp32
(every row's prompt through the model, in generation and in the loss), the shared prompt
(:mod:`gapo_lite.training.shared_prompt`) in fp32 (the kit's CPU default), and the shared prompt under bf16
autocast (where the CPU has native bf16; measured slower under LoRA, see ``gapo_lite._bootstrap.cpu_precision``), and times TRL's phases in each: generation and scoring
(``generate_and_score``, TRL's ``_generate_and_score_completions``, which includes the reward hook), the loss forward (``compute_loss``),
the backward and the optimizer step; each mode's first step is dropped (warm-up).
Part 2 samples 8-token answers to list prompts as a padded batch and with a shared prefix (greedy outputs are
the same; the shared prefix runs each prompt through the model once instead of once per sample), in fp32 and,
where native, bf16. Run it on an otherwise idle machine.
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

    trainer.generate_and_score = timed("generate + score", trainer.generate_and_score)
    trainer.compute_loss = timed("loss forward", trainer.compute_loss)
    trainer.accelerator.backward = timed("backward", trainer.accelerator.backward)
    original_create = trainer.create_optimizer

    def create_optimizer(*args, **kwargs):
        optimizer = original_create(*args, **kwargs)
        optimizer.step = timed("optimizer", optimizer.step)
        return optimizer

    trainer.create_optimizer = create_optimizer
    return times


# (name, prompts shared, bf16 autocast): TRL's path in fp32 is where the kit started; bf16 only where native.
MODES = (("TRL's path, fp32", False, False), ("shared prompt, fp32", True, False), ("shared prompt, bf16", True, True))


def alternate(trainer, modes, mode: list[str]):
    """A callback that cycles through ``modes`` step by step: prompt sharing on or off (loss forward and
    generation) and bf16 autocast on or off (accelerate's wrapped forward and TRL's autocast blocks: the loss;
    generation runs in fp32 either way, as TRL runs it)."""
    from accelerate.utils import AutocastKwargs
    from transformers import TrainerCallback

    model = trainer.model
    shared_generate = model.generate  # build_trainer shares prompts in generation (transformers backend)
    plain_generate = type(model).generate.__get__(model)
    handlers = {True: trainer.accelerator.autocast_handler, False: AutocastKwargs(enabled=False)}
    forwards: dict[bool, object] = {}

    class Alternate(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            if not forwards:  # the trainer has prepared (wrapped) the model by its first step
                forwards.update({True: model.forward, False: getattr(model, "_original_forward", model.forward)})
            name, shared, bf16 = modes[state.global_step % len(modes)]
            mode[0] = name
            trainer.gapo.share_prompts = shared
            model.generate = shared_generate if shared else plain_generate
            model.forward = forwards[bf16]
            trainer.accelerator.autocast_handler = handlers[bf16]

    return Alternate()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4, help="steps per mode (the first round is dropped as warm-up)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sampling-rounds", type=int, default=2)
    parser.add_argument("--generations", type=int, default=16)
    args = parser.parse_args()

    import torch

    from gapo_lite._bootstrap import cpu_bf16_native
    from gapo_lite.data import build_list_dataset
    from gapo_lite.gguf import smollm2_path
    from gapo_lite.models import check_model_path, load_model
    from gapo_lite.sampling import sample_completions
    from gapo_lite.training import build_trainer
    from gapo_lite.training.recipes import load_recipe

    torch.set_num_threads(args.threads)
    native = cpu_bf16_native()
    modes = MODES if native else MODES[:2]
    steps = args.rounds * len(modes)
    path = check_model_path(smollm2_path())
    with tempfile.TemporaryDirectory() as tmp:
        config = dataclasses.replace(load_recipe("smollm2_lists"), model=path, num_generations=args.generations, prompts_per_step=1,
                                     invalid_reward=0.0, learning_rate=4e-4, max_steps=steps, save_steps=10 * steps, output_dir=str(Path(tmp) / "run"),
                                     precision="bf16" if native else "fp32")
        trainer = build_trainer(config)
        mode = [modes[0][0]]
        times = time_phases(trainer, mode)
        trainer.add_callback(alternate(trainer, modes, mode))
        trainer.train()
    step_times = [row["step_time"] for row in trainer.state.log_history if "step_time" in row]
    by_mode = {name: step_times[i + len(modes)::len(modes)] for i, (name, _, _) in enumerate(modes)}  # step k ran in mode k % len(modes)
    base = statistics.median(by_mode[modes[0][0]])
    print(f"\nGAPO step, 1 prompt x {args.generations} completions, {args.threads} threads ({steps} steps cycling {len(modes)} modes, first round dropped)"
          + ("" if native else "; no native bf16 on this CPU, so no bf16 mode"))
    print(f"{'path':22s}{'step s':>9s}{'ratio':>7s}" + "".join(f"{name:>18s}" for name in PHASES))
    for name, values in by_mode.items():
        median = statistics.median(values)
        phases = "".join(f"{statistics.median(times[(name, phase)][1:] or times[(name, phase)]):18.2f}" for phase in PHASES)
        print(f"{name:22s}{median:9.2f}{median / base:7.2f}{phases}")

    model, tok = load_model(path, lora=None)
    rows = build_list_dataset(4, split="heldout", max_items=8, seed=1)
    prompts = [r["prompt"] for r in rows]
    samplers = {"padded rows, fp32": lambda: padded_sampling(model, tok, prompts, 32, 8)}
    for precision in ("fp32", "bf16") if native else ("fp32",):
        samplers[f"shared prefix, {precision}"] = lambda precision=precision: sample_completions(
            model, tok, prompts, n=32, temperature=0.7, max_new_tokens=8, progress=False, precision=precision)
    results: dict[str, list[float]] = defaultdict(list)
    for _ in range(args.sampling_rounds):
        for name, draw in samplers.items():
            t = time.perf_counter()
            draw()
            results[name].append(time.perf_counter() - t)
    base = statistics.median(results["padded rows, fp32"])
    print(f"\nsampling 4 prompts x 32 answers, 8 new tokens, {args.threads} threads")
    print(f"{'method':22s}{'median s':>10s}{'ratio':>8s}")
    for name, values in results.items():
        print(f"{name:22s}{statistics.median(values):10.2f}{statistics.median(values) / base:8.2f}")


if __name__ == "__main__":
    main()
