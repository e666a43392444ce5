"""``train(config)``: data, model, memory plan, TRL GRPOConfig + GAPOTrainer with the GAPO hook, checkpoints."""
from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gapo_lite._bootstrap import import_unsloth_first

import_unsloth_first()

from gapo_lite.rewards import FrequencyScorer, GroupReward, ValidityScorer  # noqa: E402
from gapo_lite.training.config import TrainConfig  # noqa: E402

logger = logging.getLogger("gapo_lite")


@dataclass
class TrainResult:
    """Where a run left its outputs."""

    output_dir: Path
    adapter_dir: Path
    metrics_path: Path
    global_step: int
    log_history: list[dict[str, Any]]


def make_scorer(config: TrainConfig):
    """The group scorer named by ``config.reward``."""
    if config.reward == "gapo":
        return FrequencyScorer(invalid_reward=config.invalid_reward)
    if config.reward == "validity":
        return ValidityScorer(invalid_reward=config.invalid_reward)
    raise ValueError(f"unknown reward {config.reward!r}")


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def resolve_chunk_size(
    config: TrainConfig, model_path: str | None = None, model_loaded: bool = False
) -> tuple[int, str | None, dict[str, Any]]:
    """Completions per forward/backward pass, the plan's table, and the plan's Unsloth-only GRPOConfig fields.

    With ``model_loaded`` the model already sits on the GPU, so the memory it holds counts as budget
    (the planner counts the weights itself)."""
    per_process = config.generation_batch_size // world_size()
    if config.generation_batch_size % world_size():
        raise ValueError(f"prompts_per_step * num_generations = {config.generation_batch_size} does not split over {world_size()} processes")
    if config.chunk_size is not None:
        if per_process % config.chunk_size:
            raise ValueError(f"chunk_size={config.chunk_size} must divide the per-process generation batch {per_process}")
        return config.chunk_size, None, {}
    import torch

    if not torch.cuda.is_available():
        return per_process, None, {}  # CPU: memory is not the constraint; one pass per process
    from gapo_lite.training.planning import plan_for_config

    plan = plan_for_config(config, model_path, already_allocated=torch.cuda.memory_allocated() if model_loaded else 0)
    print(plan.format_table())
    extras = {k: v for k, v in plan.grpo_kwargs().items() if k.startswith("unsloth_")}
    return plan.chunk_size, plan.format_table(), extras


def grpo_args(config: TrainConfig, chunk_size: int, extras: dict[str, Any] | None = None) -> Any:
    """TRL's ``GRPOConfig`` for ``config`` at ``chunk_size`` completions per pass (one optimizer step per generation batch)."""
    import torch
    import trl

    cuda = torch.cuda.is_available()
    per_process = config.generation_batch_size // world_size()
    steps = per_process // chunk_size
    kwargs: dict[str, Any] = dict(
        output_dir=config.output_dir,
        per_device_train_batch_size=chunk_size,
        gradient_accumulation_steps=steps,
        steps_per_generation=steps,
        num_generations=config.num_generations,
        num_iterations=1,
        max_completion_length=config.max_completion_length,
        temperature=config.temperature,
        beta=config.beta,
        loss_type=config.loss_type,
        scale_rewards=config.scale_rewards,
        learning_rate=config.learning_rate,
        lr_scheduler_type=config.lr_scheduler_type,
        warmup_steps=config.warmup_ratio,  # transformers 5: a float < 1 is a ratio of max_steps
        weight_decay=config.weight_decay,
        max_grad_norm=config.max_grad_norm,
        optim=("adamw_8bit" if cuda else "adamw_torch") if config.optim == "auto" else config.optim,
        max_steps=config.max_steps,
        save_strategy="steps",
        save_steps=config.save_steps,
        save_total_limit=config.save_total_limit,
        logging_steps=config.logging_steps,
        report_to=[] if config.report_to == "none" else [config.report_to],
        seed=config.seed,
        gradient_checkpointing=cuda if config.gradient_checkpointing is None else config.gradient_checkpointing,
        bf16=cuda and torch.cuda.is_bf16_supported(),
        fp16=cuda and not torch.cuda.is_bf16_supported(),  # T4 / V100: fp16 mixed precision, as Unsloth does
        use_cpu=not cuda,
        log_completions=False,
    )
    accepted = {f.name for f in dataclasses.fields(trl.GRPOConfig)}
    kwargs.update({k: v for k, v in (extras or {}).items() if k in accepted})  # Unsloth's patched config only
    kwargs.update(config.extra_grpo_args)
    return trl.GRPOConfig(**kwargs)


def build_trainer(
    config: TrainConfig,
    *,
    scorer: Any = None,
    model: Any = None,
    tokenizer: Any = None,
    train_dataset: Any = None,
    callbacks: Sequence[Any] = (),
):
    """A ready ``GAPOTrainer`` for ``config`` (model and data built unless given)."""
    from gapo_lite.data import build_list_dataset
    from gapo_lite.models import LoraSettings, load_model
    from gapo_lite.training.backoff import gapo_trainer_class
    from gapo_lite.training.checkpoints import CompleteCheckpointCallback
    from gapo_lite.training.logging import JsonlMetricsCallback

    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    chunk_size, table, extras = resolve_chunk_size(config, config.model, model_loaded=model is not None)
    args = grpo_args(config, chunk_size, extras)  # validates TRL's rules before the model is loaded
    if model is None:
        lora = LoraSettings(config.lora_r, config.lora_alpha, config.lora_dropout, tuple(config.lora_target_modules)) if config.use_lora else None
        model, tokenizer = load_model(
            config.model, backend=config.backend, load_in_4bit=config.load_in_4bit, max_seq_length=config.max_seq_length,
            lora=lora, fast_inference=config.fast_inference,
        )
    if tokenizer is None:
        raise ValueError("build_trainer: a tokenizer is required when a model is given")
    if train_dataset is None:
        n = config.num_prompts or config.max_steps * config.prompts_per_step
        train_dataset = build_list_dataset(n, split=config.split, min_items=config.min_items, max_items=config.max_items, seed=config.data_seed)
    hook = GroupReward(scorer if scorer is not None else make_scorer(config), num_generations=config.num_generations)
    config.save(out / "config.yaml")
    trainer = gapo_trainer_class()(
        model=model,
        processing_class=tokenizer,
        reward_funcs=[hook],
        args=args,
        train_dataset=train_dataset,
        callbacks=[CompleteCheckpointCallback(), JsonlMetricsCallback(out / "metrics.jsonl"), *callbacks],
    )
    trainer.gapo_plan_table = table
    print(
        f"gapo-lite: {config.prompts_per_step} prompts x {config.num_generations} completions per step, "
        f"{chunk_size} completions per forward/backward pass ({args.gradient_accumulation_steps} passes per step)"
    )
    return trainer


def train(config: TrainConfig, **overrides: Any) -> TrainResult:
    """Train with GAPO as ``config`` says; resume from the latest complete checkpoint when ``config.resume``."""
    from gapo_lite.training.checkpoints import find_latest_checkpoint

    trainer = build_trainer(config, **overrides)
    resume_from = None
    if config.resume:
        latest = find_latest_checkpoint(config.output_dir)
        if latest is None:
            print(f"gapo-lite: no complete checkpoint in {config.output_dir}; starting from scratch")
        else:
            print(f"gapo-lite: resuming from {latest}")
            resume_from = str(latest)
    trainer.train(resume_from_checkpoint=resume_from)
    out = Path(config.output_dir)
    adapter_dir = out / ("adapter" if config.use_lora else "model")
    trainer.save_model(str(adapter_dir))
    trainer.processing_class.save_pretrained(str(adapter_dir))
    return TrainResult(out, adapter_dir, out / "metrics.jsonl", trainer.state.global_step, list(trainer.state.log_history))
