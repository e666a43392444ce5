"""TRL's ``GRPOConfig`` for a ``TrainConfig``: the objective spelled out, the run plan's decisions, the chunking.

Every field that defines the objective is passed explicitly (see ``OBJECTIVE_FIELDS``), so TRL and Unsloth's
patched config resolve to the same values: Unsloth fills in only the fields left unset (``None``), e.g.
``mask_truncated_completions=True`` and ``epsilon_high=0.28`` for an explicit ``loss_type="dapo"``
(unsloth/models/rl.py ~L3354-3367, ~L3546-3577).
"""
from __future__ import annotations

import dataclasses
from typing import Any

from gapo_lite.errors import UserError
from gapo_lite.runplan import RunPlan
from gapo_lite.training.config import TrainConfig

# GRPOConfig fields that define what is optimised (the loss, its clipping and masking, the reward scaling).
OBJECTIVE_FIELDS = (
    "loss_type",
    "beta",
    "epsilon",
    "epsilon_high",
    "mask_truncated_completions",
    "scale_rewards",
    "num_iterations",
    "num_generations",
    "temperature",
    "max_completion_length",
    "importance_sampling_level",
    "top_entropy_quantile",
    "vllm_importance_sampling_correction",
    "router_aux_loss_coef",
)


def objective_kwargs(config: TrainConfig) -> dict[str, Any]:
    """The objective's GRPOConfig fields, every one set (none left for a backend to fill in)."""
    return {
        "loss_type": config.loss_type,
        "beta": config.beta,
        "epsilon": config.epsilon,
        "epsilon_high": config.resolved_epsilon_high,
        "mask_truncated_completions": config.mask_truncated_completions,
        "scale_rewards": config.scale_rewards,
        "num_iterations": 1,
        "num_generations": config.num_generations,
        "temperature": config.temperature,
        "max_completion_length": config.max_completion_length,
        "importance_sampling_level": "token",
        "top_entropy_quantile": 1.0,
        # TRL defaults this to True, Unsloth to False; it only acts with vLLM generation. Off: plain on-policy GRPO.
        "vllm_importance_sampling_correction": False,
        # MoE router loss (dense Qwen2 has none); TRL >= 1.7 and Unsloth default it differently.
        "router_aux_loss_coef": 0.0,
    }


def grpo_kwargs(config: TrainConfig, run_plan: RunPlan, chunk_size: int, extras: dict[str, Any] | None = None) -> dict[str, Any]:
    """Keyword arguments of ``GRPOConfig`` at ``chunk_size`` completions per pass (one optimizer step per generation batch)."""
    steps = run_plan.passes(config, chunk_size)
    kwargs: dict[str, Any] = dict(
        output_dir=config.output_dir,
        per_device_train_batch_size=chunk_size,
        gradient_accumulation_steps=steps,
        steps_per_generation=steps,
        **objective_kwargs(config),
        learning_rate=config.learning_rate,
        lr_scheduler_type=config.lr_scheduler_type,
        warmup_steps=config.warmup_ratio,  # transformers 5: a float < 1 is a ratio of max_steps
        weight_decay=config.weight_decay,
        max_grad_norm=config.max_grad_norm,
        optim=run_plan.optim,
        max_steps=config.max_steps,
        save_strategy="steps",
        save_steps=config.save_steps,
        save_total_limit=config.save_total_limit,
        logging_steps=config.logging_steps,
        report_to=[] if config.report_to == "none" else [config.report_to],
        seed=config.seed,
        gradient_checkpointing=run_plan.gradient_checkpointing,
        **run_plan.precision_flags(),
        use_cpu=not run_plan.cuda,
        log_completions=False,
    )
    kwargs.update(extras or {})
    kwargs.update(config.extra_grpo_args)
    return kwargs


def check_trl_accepts(config: TrainConfig, run_plan: RunPlan) -> None:
    """Refuse now, before a model loads, what TRL's ``GRPOConfig`` would refuse of the user's own choices: an
    ``extra_grpo_args`` key it has no field for, an ``optim`` or ``lr_scheduler_type`` transformers does not know.

    The kit's own arguments meet TRL's rules by construction (:mod:`gapo_lite.batching`, ``TrainConfig.validate``);
    the ``GRPOConfig`` itself is built once, by :func:`grpo_args`, when the chunking is known, which on a GPU needs
    the loaded model. Call it after the backend is imported (Unsloth's ``GRPOConfig`` has fields of its own)."""
    import trl
    from transformers.trainer_utils import SchedulerType
    from transformers.training_args import OptimizerNames

    accepted = {f.name for f in dataclasses.fields(trl.GRPOConfig)}
    unknown = sorted(k for k in config.extra_grpo_args if k not in accepted and not k.startswith("unsloth_"))  # unsloth_*: dropped (grpo_args)
    if unknown:
        raise UserError(f"TrainConfig.extra_grpo_args: {', '.join(unknown)} is not a field of trl.GRPOConfig")
    for name, value, known in (("optim", run_plan.optim, OptimizerNames), ("lr_scheduler_type", config.lr_scheduler_type, SchedulerType)):
        names = [member.value for member in known]
        if value not in names:
            raise UserError(f"TrainConfig.{name}={value!r} is not one transformers knows; known: {', '.join(names)}")


def grpo_args(config: TrainConfig, run_plan: RunPlan, chunk_size: int, extras: dict[str, Any] | None = None) -> Any:
    """TRL's ``GRPOConfig`` (Unsloth's patched one once Unsloth is imported), built once per run; fields only
    Unsloth's config has are dropped when the class does not accept them."""
    import trl

    kwargs = grpo_kwargs(config, run_plan, chunk_size, extras)
    accepted = {f.name for f in dataclasses.fields(trl.GRPOConfig)}
    dropped = [k for k in kwargs if k.startswith("unsloth_") and k not in accepted]
    for key in dropped:
        kwargs.pop(key)
    return trl.GRPOConfig(**kwargs)
