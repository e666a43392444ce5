"""What the shared prompt costs under gradient checkpointing: SmolLM2-135M GAPO steps cycling three loss-forward
paths in one trainer, one process, timed against TRL's path under the same checkpointing.

    bash scripts/get_smollm2.sh && python benchmarks/shared_prompt_checkpointing.py [--rounds 4] [--threads 2]

Modes, one per step in turn (each mode's first step is dropped as warm-up):

* ``TRL's path, checkpointing`` (the baseline): every row runs its prompt through the model, every layer
  checkpointed; what the kit would fall back to if the shared prompt did not work under checkpointing;
* ``shared prompt, checkpointing`` (what the kit runs): each group's prompt once, every layer checkpointed,
  the prompt's cache read-only (:class:`gapo_lite.upstream.transformers.PromptCache`), so a layer's rerun in
  the backward reads the prompt's keys and values instead of running the prompt again;
* ``shared prompt, no checkpointing``: what checkpointing itself costs the shared prompt.

Generation shares each prompt's prefill in every mode (TRL turns checkpointing off while generating), so the
modes differ in the loss forward and backward only. Printed: each mode's median step time and its ratio to the
baseline, and TRL's phases (generation + scoring, loss forward, backward, optimizer); on a CUDA GPU also each
mode's peak memory between generation and the end of the step (loss forward and backward), which is what
checkpointing saves. ``--model`` takes another local model folder (a quick check that the script runs); the
figures are SmolLM2's. Run it on an otherwise idle machine.
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

from smollm2_step import PHASES, time_phases  # the same phase timers as the SmolLM2 step benchmark

GIB = 1024**3
# (name, prompts shared in the loss forward, gradient checkpointing)
MODES = (("TRL's path, checkpointing", False, True), ("shared prompt, checkpointing", True, True),
         ("shared prompt, no checkpointing", True, False))


def cycle_modes(trainer, mode: list[str], peaks: dict[str, list[int]]):
    """A callback that switches the loss-forward path and checkpointing at each step (``mode[0]`` names the
    current one) and, on CUDA, records the peak memory from the end of generation to the end of the step."""
    import torch
    from transformers import TrainerCallback

    model = trainer.model
    cuda = torch.cuda.is_available()
    generate = trainer.generate_and_score

    def generate_then_reset_peak(*args, **kwargs):
        out = generate(*args, **kwargs)
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        return out

    trainer.generate_and_score = generate_then_reset_peak

    class Cycle(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            name, shared, checkpointing = MODES[state.global_step % len(MODES)]
            mode[0] = name
            trainer.gapo.share_prompts = shared
            if checkpointing:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            else:
                model.gradient_checkpointing_disable()

        def on_step_end(self, args, state, control, **kwargs):
            if cuda:
                peaks[mode[0]].append(torch.cuda.max_memory_allocated())

    return Cycle()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4, help="steps per mode (the first round is dropped as warm-up)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--generations", type=int, default=16)
    parser.add_argument("--model", default=None, help="a local model folder instead of SmolLM2 (default: scripts/get_smollm2.sh's file)")
    args = parser.parse_args()
    if args.rounds < 2:
        parser.error("--rounds must be >= 2 (the first round is dropped)")

    import torch

    from gapo_lite.gguf import smollm2_path
    from gapo_lite.models import check_model_path
    from gapo_lite.training import build_trainer
    from gapo_lite.training.recipes import load_recipe

    torch.set_num_threads(args.threads)
    path = check_model_path(args.model or smollm2_path())
    steps = args.rounds * len(MODES)
    with tempfile.TemporaryDirectory() as tmp:
        config = dataclasses.replace(load_recipe("smollm2_lists"), model=path, num_generations=args.generations, prompts_per_step=1,
                                     invalid_reward=0.0, learning_rate=4e-4, max_steps=steps, save_steps=10 * steps,
                                     output_dir=str(Path(tmp) / "run"), precision="fp32", gradient_checkpointing=True)
        trainer = build_trainer(config)
        mode = [MODES[0][0]]
        times = time_phases(trainer, mode)
        peaks: dict[str, list[int]] = defaultdict(list)
        trainer.add_callback(cycle_modes(trainer, mode, peaks))
        trainer.train()
    step_times = [row["step_time"] for row in trainer.state.log_history if "step_time" in row]
    by_mode = {name: step_times[i + len(MODES)::len(MODES)] for i, (name, _, _) in enumerate(MODES)}  # step k ran mode k % 3
    base = statistics.median(by_mode[MODES[0][0]])
    device = "CUDA" if torch.cuda.is_available() else f"CPU, {args.threads} threads"
    print(f"\nGAPO step, 1 prompt x {args.generations} completions, {device} ({steps} steps cycling {len(MODES)} modes, first round dropped)")
    print(f"{'path':34s}{'step s':>9s}{'ratio':>7s}" + "".join(f"{name:>18s}" for name in PHASES)
          + (f"{'peak GiB':>10s}{'ratio':>7s}" if peaks else ""))
    base_peak = max(peaks[MODES[0][0]]) if peaks else None
    for name, values in by_mode.items():
        median = statistics.median(values)
        phases = "".join(f"{statistics.median(times[(name, phase)][1:] or times[(name, phase)]):18.2f}" for phase in PHASES)
        memory = f"{max(peaks[name]) / GIB:10.3f}{max(peaks[name]) / base_peak:7.2f}" if peaks else ""
        print(f"{name:34s}{median:9.2f}{median / base:7.2f}{phases}{memory}")


if __name__ == "__main__":
    main()
