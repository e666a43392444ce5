"""The memory plan for a run: the ``TrainConfig``, its run plan, the model's own config and the prompts' measured length.

``gapo-lite plan`` and ``train()`` both come here, so the planner sees one set of defaults: the ``TrainConfig``'s.
"""
from __future__ import annotations

from typing import Any

from gapo_lite.memory import GIB, MemoryPlan, ModelSpec, PlanSettings, plan_memory
from gapo_lite.memory.planner import DEFAULT_PROMPT_TOKENS, free_cuda_bytes
from gapo_lite.runplan import RunPlan, run_plan_for
from gapo_lite.sampling import render_prompt
from gapo_lite.training.config import TrainConfig

__all__ = ["DEFAULT_PROMPT_TOKENS", "measure_prompt_tokens", "model_spec", "plan_for_config", "plan_settings"]


def measure_prompt_tokens(tokenizer: Any, dataset: Any, sample: int = 256) -> int:
    """The longest prompt, in tokens, among ``sample`` evenly spaced rows of ``dataset`` (all rows if fewer)."""
    n = len(dataset)
    if n == 0:
        raise ValueError("cannot measure prompt lengths of an empty dataset")
    if sample < 1:
        raise ValueError(f"sample must be >= 1, got {sample}")
    k = min(sample, n)
    indices = sorted({round(i * (n - 1) / max(1, k - 1)) for i in range(k)})
    lengths = [len(tokenizer(render_prompt(tokenizer, dataset[i]["prompt"]), add_special_tokens=False)["input_ids"]) for i in indices]
    return max(lengths)


def gpu_total_bytes() -> int | None:
    """The current CUDA GPU's total memory, or None without one."""
    import torch

    return int(torch.cuda.mem_get_info()[1]) if torch.cuda.is_available() else None


def model_spec(config: TrainConfig, model: Any = None, model_path: str | None = None) -> ModelSpec:
    """The shapes to plan with: the loaded ``model``'s own config when given (any causal LM), else ``model_path``
    or ``config.model`` resolved as :meth:`ModelSpec.resolve` does (folder, hub, built-in table)."""
    if model is not None:
        return ModelSpec.from_config(model.config, name=str(config.model))
    return ModelSpec.resolve(model_path or config.model)


def plan_settings(config: TrainConfig, run_plan: RunPlan, prompt_tokens: int = DEFAULT_PROMPT_TOKENS, total_bytes: int | None = None) -> PlanSettings:
    """What the planner is asked about, every field read from ``config`` or its run plan ``run_plan`` (the planner
    has no defaults of its own): the run plan's backend, weights, optimizer, checkpointing, process count and vLLM
    generation, the config's LoRA rank, group, prompts per step, completion length and vLLM share, and the
    prompts' measured length. ``total_bytes``: the GPU's total memory (vLLM's share of it)."""
    return PlanSettings(
        quantization=run_plan.quantization,
        lora_rank=config.lora_r,
        num_generations=config.num_generations,
        prompts_per_step=config.prompts_per_step,
        prompt_tokens=prompt_tokens,
        completion_tokens=config.max_completion_length,
        world_size=run_plan.world_size,
        backend=run_plan.backend,
        gradient_checkpointing=run_plan.gradient_checkpointing,
        max_seq_length=config.max_seq_length,
        optimizer=run_plan.planner_optimizer,
        fast_inference=run_plan.fast_inference,
        gpu_memory_utilization=config.gpu_memory_utilization,
        gpu_total_bytes=total_bytes,
    )


def plan_for_config(
    config: TrainConfig,
    model_path: str | None = None,
    prompt_tokens: int = DEFAULT_PROMPT_TOKENS,
    already_allocated: int = 0,
    *,
    run_plan: RunPlan | None = None,
    model: Any = None,
    total_bytes: int | None = None,
) -> MemoryPlan:
    """Plan chunking for ``config`` on ``run_plan`` (default: as this config would run on a CUDA GPU here).

    The planner is asked about what will run: the run plan's backend, optimizer, gradient checkpointing,
    process count and 4-bit choice, and vLLM's share with ``fast_inference``; the shapes come from ``model``
    (loaded) when given. The budget is ``config.memory_budget_gb`` or, when unset, the GPU's free memory plus
    ``already_allocated`` (bytes held by a model loaded before planning, which the plan's weights term already
    counts). ``total_bytes`` is the GPU's total memory (vLLM's share; default: this GPU's)."""
    run_plan = run_plan or run_plan_for(config, cuda=True)
    spec = model_spec(config, model, model_path)
    budget = int(config.memory_budget_gb * GIB) if config.memory_budget_gb is not None else free_cuda_bytes() + already_allocated
    settings = plan_settings(config, run_plan, prompt_tokens, total_bytes or (gpu_total_bytes() if run_plan.cuda else None))
    return plan_memory(spec, settings, budget_bytes=budget)
