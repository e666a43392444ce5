"""One stage of the GPU check, in its own process (fresh CUDA context; Unsloth's patches stay out of other stages).

Run by ``scripts/gpu_check.py``; prints each figure the moment it is measured (``gpu_check: [label] ...``,
flushed), so a stage killed by its timeout still leaves what it measured in the log. Stages:

* ``pair``: the kit's trainer (``build_trainer``: hardware plan, measured prompts, memory plan, GAPOTrainer)
  on ``--model-dir`` with ``--backend``, ``--steps`` steps with completions forced to full length; peak VRAM
  next to the plan's estimate, step time and generated tokens/s.
* ``train``: the real ``train()`` path of recipe ``qwen7b_lists`` on ``--model-dir`` (2 steps, a capped
  ``memory_budget_gb``, a checkpoint and the adapter saved and checked).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

GIB = 1024**3


def say(label: str, text: str) -> None:
    """One figure, printed and flushed at once."""
    print(f"gpu_check: [{label}] {text}", flush=True)


def cuda_peak() -> int | None:
    import torch

    return int(torch.cuda.max_memory_allocated()) if torch.cuda.is_available() else None


def figures_callback(label: str):
    """A TrainerCallback printing each step's time and the peak VRAM so far, as they happen."""
    from transformers import TrainerCallback

    class StepFigures(TrainerCallback):
        def __init__(self) -> None:
            self.step_seconds: list[float] = []
            self.chunk_size: int | None = None
            self._start = 0.0

        def on_train_begin(self, args, state, control, **kwargs):
            self.chunk_size = args.per_device_train_batch_size
            say(label, f"training: {args.per_device_train_batch_size} completions per pass, {args.gradient_accumulation_steps} passes per step")

        def on_step_begin(self, args, state, control, **kwargs):
            self._start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            seconds = time.perf_counter() - self._start
            self.step_seconds.append(seconds)
            peak = cuda_peak()
            say(label, f"step {state.global_step}: {seconds:.1f} s" + (f", peak VRAM so far {peak / GIB:.2f} GiB" if peak else ""))

    return StepFigures()


class GenerationMeter:
    """Wraps the trainer's generation method to time it and count completion tokens."""

    def __init__(self, trainer: Any) -> None:
        self.seconds = 0.0
        self.tokens = 0
        inner = getattr(trainer, "_generate_single_turn", None)
        if not callable(inner):
            return

        def timed(*args, **kwargs):
            import torch

            if torch.cuda.is_available():
                torch.cuda.synchronize()
            start = time.perf_counter()
            out = inner(*args, **kwargs)
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            self.seconds += time.perf_counter() - start
            completion_ids = out[0] if isinstance(out, tuple) else out
            self.tokens += sum(len(c) for c in completion_ids)
            return out

        trainer._generate_single_turn = timed


def run_pair(args: argparse.Namespace, label: str) -> dict[str, Any]:
    """The plan check: build_trainer on the model, forced-length completions, peak VRAM vs the plan's estimate."""
    import torch

    from gapo_lite.data import build_list_dataset
    from gapo_lite.runplan import resolve_hardware
    from gapo_lite.training import TrainConfig, build_trainer
    from gapo_lite.training.planning import measure_prompt_tokens, plan_for_config

    cuda = torch.cuda.is_available()
    config = TrainConfig(
        model=str(args.model_dir), backend=args.backend, load_in_4bit=cuda, max_seq_length=1024 + args.completion_tokens,
        lora_r=args.lora_rank, lora_alpha=max(1, args.lora_rank // 2), num_generations=args.num_generations,
        prompts_per_step=args.prompts_per_step, max_completion_length=args.completion_tokens, max_steps=args.steps,
        output_dir=str(args.out_dir), save_steps=10**6, seed=0,
        extra_grpo_args={"generation_kwargs": {"min_new_tokens": args.completion_tokens}, "save_strategy": "no"},
    )
    hardware = resolve_hardware(config)
    say(label, hardware.describe())
    dataset = build_list_dataset(args.prompts_per_step * args.steps, seed=0)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    figures = figures_callback(label)
    trainer = build_trainer(config, hardware=hardware, train_dataset=dataset, callbacks=[figures])
    load_seconds = time.perf_counter() - start
    prompt_tokens = measure_prompt_tokens(trainer.processing_class, dataset)
    plan, plan_error = trainer.gapo_plan, None
    if plan is None:  # CPU (dry run): no plan was needed; make one for the record, 8 GiB budget
        try:
            plan = plan_for_config(dataclasses.replace(config, memory_budget_gb=8.0), prompt_tokens=prompt_tokens, hardware=hardware)
        except (ValueError, KeyError, NotImplementedError) as err:  # a model the planner cannot read: the estimate is null, saying why
            plan_error = f"planner: {err}"
    if plan is not None:
        say(label, f"loaded and planned in {load_seconds:.0f} s; prompt {prompt_tokens} tokens; plan: peak {plan.estimated_peak_bytes / GIB:.2f} GiB "
                   f"of {plan.budget_bytes / GIB:.2f} GiB, {plan.chunk_size} completions per pass"
                   + (f"; VRAM after load {torch.cuda.memory_allocated() / GIB:.2f} GiB" if cuda else ""))
    else:
        say(label, f"loaded in {load_seconds:.0f} s; prompt {prompt_tokens} tokens; no plan ({plan_error})")
    meter = GenerationMeter(trainer)
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    tokens = meter.tokens or args.steps * config.generation_batch_size * args.completion_tokens
    return {
        "stage": "pair", "model": args.model_name, "backend": hardware.backend, "status": "ok",
        "peak_vram_bytes": cuda_peak(), "estimate_bytes": plan.estimated_peak_bytes if plan else None, "budget_bytes": plan.budget_bytes if plan else None,
        "fits": plan.fits if plan else None, "estimate_note": plan_error,
        "chunk_size": trainer.args.per_device_train_batch_size, "steps_per_generation": trainer.args.steps_per_generation,
        "prompt_tokens": prompt_tokens, "steps": args.steps, "step_seconds": seconds / args.steps, "load_seconds": load_seconds,
        "generated_tokens": tokens,
        "tokens_per_second": tokens / meter.seconds if meter.seconds > 0 else tokens / seconds,
        "tokens_per_second_basis": "generation time" if meter.seconds > 0 else "whole step time",
    }


def train_overrides(args: argparse.Namespace, cuda: bool) -> list[str]:
    """``--set`` assignments turning recipe qwen7b_lists into the check's 2-step run on the built model.

    On a GPU the recipe's own settings stay (8 prompts x G=32, 32-token completions, r=64, 4-bit), with
    ``memory_budget_gb`` capped; the CPU dry run shrinks them to the tiny model's scale."""
    sets = [f"model={args.model_dir}", f"backend={args.backend}", f"max_steps={args.steps}", f"save_steps={args.steps}", f"output_dir={args.out_dir}"]
    if cuda:
        return sets + [f"memory_budget_gb={args.train_budget_gb}"]
    return sets + ["load_in_4bit=false", f"prompts_per_step={args.prompts_per_step}", f"num_generations={args.num_generations}",
                   f"max_completion_length={args.completion_tokens}", f"lora_r={args.lora_rank}", f"lora_alpha={max(1, args.lora_rank // 2)}",
                   "lora_dropout=0.0"]


def run_train(args: argparse.Namespace, label: str) -> dict[str, Any]:
    """Recipe qwen7b_lists through ``train()``: plan, steps, checkpoint and adapter, all checked."""
    import torch

    from gapo_lite.training import train
    from gapo_lite.training.checkpoints import find_latest_checkpoint
    from gapo_lite.training.recipes import load_recipe_file

    cuda = torch.cuda.is_available()
    recipe = load_recipe_file("qwen7b_lists")
    config = recipe.config.with_overrides(train_overrides(args, cuda))
    say(label, f"recipe qwen7b_lists: {config.prompts_per_step} prompts x G={config.num_generations}, {config.max_completion_length}-token "
               f"completions, {config.max_steps} steps, memory_budget_gb={config.memory_budget_gb}")
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    figures = figures_callback(label)
    start = time.perf_counter()
    result = train(config, callbacks=[figures])
    seconds = time.perf_counter() - start
    latest = find_latest_checkpoint(config.output_dir)
    adapter_ok = (result.adapter_dir / "adapter_config.json").is_file()
    say(label, f"train() done in {seconds:.0f} s at step {result.global_step}; checkpoint {latest.name if latest else 'MISSING'}; "
               f"adapter {'saved' if adapter_ok else 'MISSING'}")
    ok = result.global_step == config.max_steps and latest is not None and latest.name == f"checkpoint-{config.max_steps}" and adapter_ok
    return {
        "stage": "train", "model": args.model_name, "backend": args.backend, "status": "ok" if ok else "failed: checkpoint/adapter check",
        "peak_vram_bytes": cuda_peak(), "budget_bytes": int(config.memory_budget_gb * GIB) if config.memory_budget_gb else None,
        "chunk_size": figures.chunk_size, "steps": result.global_step,
        "step_seconds": sum(figures.step_seconds) / max(1, len(figures.step_seconds)), "total_seconds": seconds,
        "checkpoint": latest.name if latest else None, "adapter_saved": adapter_ok,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", choices=("pair", "train"), required=True)
    parser.add_argument("--model-dir", type=Path, required=True)
    parser.add_argument("--model-name", required=True)
    parser.add_argument("--backend", required=True)
    parser.add_argument("--result-file", type=Path, required=True)
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--num-generations", type=int, default=32)
    parser.add_argument("--prompts-per-step", type=int, default=1)
    parser.add_argument("--completion-tokens", type=int, default=256)
    parser.add_argument("--lora-rank", type=int, default=64)
    parser.add_argument("--train-budget-gb", type=float, default=40.0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ["GAPO_LITE_BACKEND"] = args.backend  # before gapo_lite: Unsloth first when it is the backend
    label = f"{args.model_name}/{args.backend}/{args.stage}"
    try:
        row = run_pair(args, label) if args.stage == "pair" else run_train(args, label)
    finally:
        shutil.rmtree(args.out_dir, ignore_errors=True)
    say(label, "RESULT " + json.dumps(row))
    args.result_file.write_text(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
