"""One stage of the GPU check, in its own process (fresh CUDA context; Unsloth's patches stay out of other stages).

Run by ``scripts/gpu_check.py``; prints each figure the moment it is measured (``gpu_check: [label] ...``,
flushed), so a stage killed by its timeout still leaves what it measured in the log. Stages:

* ``pair``: the kit's trainer (``build_trainer``: run plan, measured prompts, memory plan, GAPOTrainer)
  on ``--model-dir`` with ``--backend``, ``--steps`` steps with completions forced to full length; peak VRAM
  next to the plan's estimate, step time and generated tokens/s.
* ``train``: the real ``train()`` path of recipe ``qwen7b_lists`` on ``--model-dir`` (2 steps, a capped
  ``memory_budget_gb``, a checkpoint and the adapter saved and checked).
* ``short``: the ``pair`` stage at ``max_seq_length`` 384, below the 512 from which Unsloth offloads checkpointed
  layer inputs (the planner then counts every layer's input): peak VRAM next to that plan.
* ``errors``: no model: what CUDA raises when a first matrix product finds the GPU full (cuBLAS creating its handle
  outside PyTorch's caching allocator) and whether the OOM back-off takes it for memory; the GPUs torch sees.

``pair`` and ``short`` also record ``probes``, facts only a GPU run shows (docs/gpu.md, "The GPU path read against its
sources"): checkpointing as planned and as the model has it, the adapter's dtypes, the pad and eos tokens, the gradient
of a micro-batch in one pass against two halves under a row-mean loss (the OOM back-off's split; on Unsloth its weights
reach the gradient only through the parameters' hooks), and on the transformers backend the shared prompt's
log-probabilities and gradients against TRL's path in training mode, with the run's checkpointing and autocast.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
for _path in (REPO, REPO / "scripts"):  # the kit, and gpu_check_learn beside this file
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

GIB = 1024**3


def say(label: str, text: str) -> None:
    """One figure, printed and flushed at once."""
    print(f"gpu_check: [{label}] {text}", flush=True)


PARTIAL: dict[str, Any] = {}  # this stage's figures so far (see note)
PARTIAL_FILE: Path | None = None
TRACEBACK_CHARS = 2000  # what a failed stage keeps of its traceback


def note(key: str, value: Any) -> None:
    """Record one figure the moment it exists: the partial file is rewritten atomically, so a stage stopped by its
    timeout or killed with the whole run still leaves every figure it had (the orchestrator merges them into its row)."""
    PARTIAL[key] = value
    if PARTIAL_FILE is not None:
        tmp = PARTIAL_FILE.with_name(f".{PARTIAL_FILE.name}.tmp")
        tmp.write_text(json.dumps(PARTIAL, default=str))
        os.replace(tmp, PARTIAL_FILE)


def cuda_peak() -> int | None:
    import torch

    return int(torch.cuda.max_memory_allocated()) if torch.cuda.is_available() else None


def figures_callback(label: str, key: str = "step_seconds_so_far", stop_after_s: float | None = None):
    """A TrainerCallback printing each step's time and the peak VRAM so far, as they happen, and noting them (``key``);
    with ``stop_after_s`` it ends training after the step that passes that many seconds of training."""
    from transformers import TrainerCallback

    class StepFigures(TrainerCallback):
        def __init__(self) -> None:
            self.step_seconds: list[float] = []
            self.chunk_size: int | None = None
            self._start = self.began = 0.0

        def on_train_begin(self, args, state, control, **kwargs):
            self.chunk_size = args.per_device_train_batch_size
            self.began = time.perf_counter()
            say(label, f"training: {args.per_device_train_batch_size} completions per pass, {args.gradient_accumulation_steps} passes per step")

        def on_step_begin(self, args, state, control, **kwargs):
            self._start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            seconds = time.perf_counter() - self._start
            self.step_seconds.append(seconds)
            peak = cuda_peak()
            say(label, f"step {state.global_step}: {seconds:.1f} s" + (f", peak VRAM so far {peak / GIB:.2f} GiB" if peak else ""))
            note(key, [round(s, 4) for s in self.step_seconds])
            if peak:
                note("peak_vram_bytes_so_far", peak)
            if stop_after_s is not None and time.perf_counter() - self.began >= stop_after_s:
                say(label, f"time limit: stopping after step {state.global_step} ({stop_after_s:.0f} s of training)")
                control.should_training_stop = True

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


def relative_error(got: list[Any], want: list[Any]) -> float:
    """|got - want| / |want| over lists of tensors (float64 norms)."""
    num = sum(float((g.double() - w.double()).norm()) ** 2 for g, w in zip(got, want)) ** 0.5
    den = sum(float(w.double().norm()) ** 2 for w in want) ** 0.5
    return num / den if den else float("nan")


def lora_grads(trainer: Any) -> list[Any]:
    return [p.grad.detach().float().clone() if p.grad is not None else p.detach().float() * 0 for p in trainer.model.parameters() if p.requires_grad]


def split_gradient_error(trainer: Any, loss_type: str = "grpo", rows: int = 8) -> float:
    """A micro-batch's gradient (its first ``rows`` completions) in one pass against two halves, the OOM back-off's
    split, under ``loss_type``: a row mean, so each half is weighted 1/2. The advantages are drawn at random: a
    random-weight model's answers are all invalid, their group advantages zero, and so would be the gradient."""
    import torch

    from gapo_lite.training.backoff import slice_rows

    batch = slice_rows(trainer.buffered_micro_batches[0], 0, rows)
    advantages = batch["advantages"]
    batch["advantages"] = torch.randn(advantages.shape, generator=torch.Generator().manual_seed(0)).to(advantages)
    saved = (trainer.loss_type, trainer.args.loss_type, trainer.micro_step, trainer.gapo.splits)
    trainer.loss_type = trainer.args.loss_type = loss_type  # Unsloth's loss reads the config's
    grads = []
    try:
        for splits in (1, 2):
            trainer.model.zero_grad(set_to_none=True)
            trainer.gapo.splits = splits
            trainer._split_step(trainer.model_wrapped, batch, None)
            grads.append(lora_grads(trainer))
    finally:
        trainer.loss_type, trainer.args.loss_type, trainer.micro_step, trainer.gapo.splits = saved
        trainer.model.zero_grad(set_to_none=True)
    return relative_error(grads[1], grads[0])


def shared_prompt_errors(trainer: Any, rows: int = 8) -> dict[str, float]:
    """The shared prompt against TRL's path on ``rows`` completions of the last generation batch, in training mode with
    the run's checkpointing and autocast: relative differences of the log-probabilities and of the gradients."""
    import torch

    batch = trainer.buffered_micro_batches[0]
    ids = torch.cat([batch["prompt_ids"][:rows], batch["completion_ids"][:rows]], 1)
    mask = torch.cat([batch["prompt_mask"][:rows], batch["completion_mask"][:rows]], 1)
    keep, completion_mask = batch["completion_ids"].size(1), batch["completion_mask"][:rows]
    trainer.model_wrapped.train()
    runs = []
    try:
        for shared in (False, True):
            trainer.gapo.share_prompts = shared
            trainer.model.zero_grad(set_to_none=True)
            logps, _, _ = trainer.completion_logps(trainer.model_wrapped, ids, mask, keep)
            (logps * completion_mask).sum().backward()
            runs.append(([logps.detach()[completion_mask.bool()].float()], lora_grads(trainer)))
    finally:
        trainer.gapo.share_prompts = trainer.gapo.run_plan.share_prompts
        trainer.model.zero_grad(set_to_none=True)
    (plain_logps, plain_grads), (shared_logps, shared_grads) = runs
    return {"logps": relative_error(shared_logps, plain_logps), "grads": relative_error(shared_grads, plain_grads)}


@contextlib.contextmanager
def no_dropout(model: Any) -> Iterator[None]:
    """Dropout off (p = 0) for the block: the comparisons below run the same rows twice and must draw no masks."""
    import torch

    layers = [(m, m.p) for m in model.modules() if isinstance(m, torch.nn.Dropout)]
    for module, _ in layers:
        module.p = 0.0
    try:
        yield
    finally:
        for module, p in layers:
            module.p = p


def probes(trainer: Any, run_plan: Any) -> dict[str, Any]:
    """Facts of the built and trained trainer that only a GPU run shows; a probe that fails records its error."""
    tok = trainer.processing_class
    found: dict[str, Any] = {}
    checks = {
        "gradient_checkpointing": lambda: {"plan": run_plan.gradient_checkpointing, "model": bool(trainer.model.is_gradient_checkpointing)},
        "adapter_dtypes": lambda: sorted({str(p.dtype) for p in trainer.model.parameters() if p.requires_grad}),
        "pad_token": lambda: {"pad": tok.pad_token, "eos": tok.eos_token, "distinct": tok.pad_token_id != tok.eos_token_id},
        "split_gradient_error_grpo": lambda: split_gradient_error(trainer),
    }
    if run_plan.share_prompts:
        checks["shared_prompt_vs_trl"] = lambda: shared_prompt_errors(trainer)
    for name, check in checks.items():
        try:
            with no_dropout(trainer.model):
                found[name] = check()
        except Exception as err:  # a probe's failure is a finding, not the stage's
            found[name] = f"error: {type(err).__name__}: {err}"[:300]
        say("probes", f"{name}: {found[name]}")
    return found


def run_errors(args: argparse.Namespace, label: str) -> dict[str, Any]:
    """What a first matrix product raises on a full GPU (cuBLAS creates its handle with its own cudaMalloc, outside the
    caching allocator), whether the back-off's ``is_out_of_memory`` takes it for memory, and the GPUs torch sees."""
    import torch

    from gapo_lite.training.backoff import is_out_of_memory

    a = torch.randn(256, 256, device="cuda")  # made before the GPU is full; no cuBLAS call yet in this process
    held, size = [], 1 << 30
    while size >= 1 << 20:  # take what the caching allocator can get, in halving pieces down to 1 MiB
        try:
            held.append(torch.empty(size, dtype=torch.uint8, device="cuda"))
        except torch.OutOfMemoryError:
            size //= 2
    outcome: dict[str, Any] = {"held_gib": round(sum(t.numel() for t in held) / GIB, 2)}
    try:
        (a @ a).sum().item()
        outcome["raised"] = None
    except Exception as err:
        outcome.update(raised=type(err).__name__, message=str(err)[:300], taken_for_memory=is_out_of_memory(err))
    del held
    torch.cuda.empty_cache()
    say(label, f"first matmul on a full GPU: {outcome}")
    return {"stage": "errors", "model": args.model_name, "backend": args.backend, "status": "ok",
            "probes": {"cublas_on_a_full_gpu": outcome, "visible_gpus": torch.cuda.device_count()}}


def run_pair(args: argparse.Namespace, label: str) -> dict[str, Any]:
    """The plan check: build_trainer on the model, forced-length completions, peak VRAM vs the plan's estimate."""
    import torch

    from gapo_lite.data import build_list_dataset
    from gapo_lite.runplan import run_plan_for
    from gapo_lite.training import TrainConfig, build_trainer
    from gapo_lite.training.planning import measure_prompt_tokens, plan_for_config

    cuda = torch.cuda.is_available()
    config = TrainConfig(
        model=str(args.model_dir), backend=args.backend, load_in_4bit=cuda, max_seq_length=args.max_seq_length or 1024 + args.completion_tokens,
        lora_r=args.lora_rank, lora_alpha=max(1, args.lora_rank // 2), num_generations=args.num_generations,
        prompts_per_step=args.prompts_per_step, max_completion_length=args.completion_tokens, max_steps=args.steps,
        output_dir=str(args.out_dir), save_steps=10**6, seed=0,
        extra_grpo_args={"generation_kwargs": {"min_new_tokens": args.completion_tokens}, "save_strategy": "no"},
    )
    run_plan = run_plan_for(config)
    say(label, run_plan.describe())
    dataset = build_list_dataset(args.prompts_per_step * args.steps, seed=0)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    figures = figures_callback(label)
    trainer = build_trainer(config, run_plan=run_plan, train_dataset=dataset, callbacks=[figures])
    load_seconds = time.perf_counter() - start
    note("load_seconds", load_seconds)
    prompt_tokens = measure_prompt_tokens(trainer.processing_class, dataset)
    plan, plan_error = trainer.gapo.memory_plan, None
    if plan is None:  # CPU (dry run): no plan was needed; make one for the record, 8 GiB budget
        try:
            plan = plan_for_config(dataclasses.replace(config, memory_budget_gb=8.0), prompt_tokens=prompt_tokens, run_plan=run_plan)
        except (ValueError, KeyError, NotImplementedError) as err:  # a model the planner cannot read: the estimate is null, saying why
            plan_error = f"planner: {err}"
    if plan is not None:
        note("estimate_bytes", plan.estimated_peak_bytes)
        say(label, f"loaded and planned in {load_seconds:.0f} s; prompt {prompt_tokens} tokens; plan: peak {plan.estimated_peak_bytes / GIB:.2f} GiB "
                   f"of {plan.budget_bytes / GIB:.2f} GiB, {plan.chunk_size} completions per pass"
                   + (f"; VRAM after load {torch.cuda.memory_allocated() / GIB:.2f} GiB" if cuda else ""))
    else:
        say(label, f"loaded in {load_seconds:.0f} s; prompt {prompt_tokens} tokens; no plan ({plan_error})")
    meter = GenerationMeter(trainer)
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    peak = cuda_peak()  # before the probes, which run forwards of their own
    tokens = meter.tokens or args.steps * config.generation_batch_size * args.completion_tokens
    return {
        "stage": args.stage, "model": args.model_name, "backend": run_plan.backend, "status": "ok", "max_seq_length": config.max_seq_length,
        "probes": probes(trainer, run_plan),
        "peak_vram_bytes": peak, "estimate_bytes": plan.estimated_peak_bytes if plan else None, "budget_bytes": plan.budget_bytes if plan else None,
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


def run_recipe(args: argparse.Namespace, label: str) -> dict[str, Any]:
    """Recipe qwen7b_lists through ``train()`` on the 7B-shaped model: plan, steps, checkpoint and adapter, all checked."""
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
        "stage": "recipe", "model": args.model_name, "backend": args.backend, "status": "ok" if ok else "failed: checkpoint/adapter check",
        "peak_vram_bytes": cuda_peak(), "budget_bytes": int(config.memory_budget_gb * GIB) if config.memory_budget_gb else None,
        "chunk_size": figures.chunk_size, "steps": result.global_step,
        "step_seconds": sum(figures.step_seconds) / max(1, len(figures.step_seconds)), "total_seconds": seconds,
        "checkpoint": latest.name if latest else None, "adapter_saved": adapter_ok,
    }


def run_learn(args: argparse.Namespace, label: str) -> dict[str, Any]:
    """GAPO and the GRPO + validity baseline from the prepared collapsed start (``--model-dir``) on ``--backend``,
    through ``train()`` with LoRA, each measured on held-out lists (``scripts/gpu_check_learn.py``)."""
    import gpu_check_learn

    def callbacks(name: str) -> list[Any]:
        return [figures_callback(f"{label}/{name}", key=f"{name}_step_seconds_so_far", stop_after_s=args.run_seconds)]

    found = gpu_check_learn.learn(args.model_dir, args.out_dir, args.backend, note, steps=args.learn_steps, callbacks=callbacks)
    say(label, found["verdict"])
    return {"stage": "learn", "model": args.model_name, "backend": args.backend, "status": "ok" if found["targets_met"] else "targets missed",
            **{k: v for k, v in PARTIAL.items() if not k.endswith("_so_far")}, **found, "peak_vram_bytes": cuda_peak()}


def run_train(args: argparse.Namespace, label: str) -> dict[str, Any]:
    """``train()`` end to end on the prepared start, as a user runs it (backend ``--backend``, LoRA, a checkpoint),
    then again with ``resume=True`` (``--set resume=true``) to twice the steps: it must resume from the checkpoint."""
    import dataclasses

    import gpu_check_learn

    from gapo_lite.training import train
    from gapo_lite.training.checkpoints import find_latest_checkpoint

    steps = 2
    s = gpu_check_learn.settings(gpu_check_learn.read_start(args.model_dir)["quick"])
    config = dataclasses.replace(gpu_check_learn.run_config(s, args.model_dir, args.out_dir, "gapo", args.backend, load_in_4bit=None),
                                 max_steps=steps, save_steps=steps, lr_scheduler_type="constant")
    figures = figures_callback(label)
    start = time.perf_counter()
    first = train(config, callbacks=[figures])
    note("first_seconds", time.perf_counter() - start)
    checkpoint = find_latest_checkpoint(config.output_dir)
    note("checkpoint", checkpoint.name if checkpoint else None)
    say(label, f"train(): {first.global_step} steps, checkpoint {checkpoint.name if checkpoint else 'MISSING'}; now resume=True to {2 * steps} steps")
    resumed = train(dataclasses.replace(config, resume=True, max_steps=2 * steps), callbacks=[figures])
    latest = find_latest_checkpoint(config.output_dir)
    adapter_ok = (resumed.adapter_dir / "adapter_config.json").is_file()
    # Resumed, not restarted: the trainer's state came from the checkpoint, so its log holds the first run's steps.
    resumed_history = any(entry.get("step") == 1 for entry in resumed.log_history)
    ok = (first.global_step == steps and checkpoint is not None and checkpoint.name == f"checkpoint-{steps}" and resumed.global_step == 2 * steps
          and latest is not None and latest.name == f"checkpoint-{2 * steps}" and adapter_ok and resumed_history)
    return {"stage": "train", "model": args.model_name, "backend": args.backend, "status": "ok" if ok else "failed: checkpoint/resume check",
            "peak_vram_bytes": cuda_peak(), "steps": resumed.global_step, "checkpoint": checkpoint.name if checkpoint else None,
            "resumed_to": latest.name if latest else None, "resumed_from_checkpoint": resumed_history, "adapter_saved": adapter_ok,
            "step_seconds": sum(figures.step_seconds) / max(1, len(figures.step_seconds)), "total_seconds": time.perf_counter() - start}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", choices=tuple(STAGES), required=True)
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
    parser.add_argument("--max-seq-length", type=int, default=None, help="the model's max_seq_length (default: 1024 + completion tokens)")
    parser.add_argument("--partial-file", type=Path, default=None, help="where each figure is written the moment it exists")
    parser.add_argument("--learn-steps", type=int, default=None, help="RL steps of each learning run (default: the demo's)")
    parser.add_argument("--run-seconds", type=float, default=None, help="stop each learning run after this much training (default: none)")
    args = parser.parse_args(argv)
    if args.stage == "short" and args.max_seq_length is None:
        args.max_seq_length = SHORT_MAX_SEQ_LENGTH
    return args


SHORT_MAX_SEQ_LENGTH = 384  # below Unsloth's 512, from which it offloads checkpointed layer inputs
STAGES = {"pair": run_pair, "short": run_pair, "recipe": run_recipe, "learn": run_learn, "train": run_train, "errors": run_errors}


def main(argv: list[str] | None = None) -> int:
    global PARTIAL_FILE
    args = parse_args(argv)
    os.environ["GAPO_LITE_BACKEND"] = args.backend  # before gapo_lite: Unsloth first when it is the backend
    label = f"{args.model_name}/{args.backend}/{args.stage}"
    PARTIAL_FILE = args.partial_file
    try:
        row = STAGES[args.stage](args, label)
    except BaseException as err:  # the stage's own words, kept with its figures so far; the orchestrator reads both
        note("error", f"{type(err).__name__}: {err}"[:300])
        note("traceback", traceback.format_exc()[-TRACEBACK_CHARS:])
        raise
    finally:
        shutil.rmtree(args.out_dir, ignore_errors=True)
    say(label, "RESULT " + json.dumps(row, default=str))
    args.result_file.write_text(json.dumps(row, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
