"""The memory plan for a ``TrainConfig`` (used on CUDA when ``chunk_size`` is not set)."""
from __future__ import annotations

import os

from gapo_lite.memory import GIB, MemoryPlan, ModelSpec, plan_memory
from gapo_lite.memory.planner import free_cuda_bytes
from gapo_lite.training.config import TrainConfig


def plan_for_config(
    config: TrainConfig, model_path: str | None = None, prompt_tokens: int = 256, already_allocated: int = 0
) -> MemoryPlan:
    """Plan chunking for ``config``: the model's shapes, 4-bit or 16-bit, LoRA rank, G, lengths and budget.

    The budget is ``config.memory_budget_gb`` or, when unset, the GPU's free memory plus ``already_allocated``
    (bytes held by a model loaded before planning, which the plan's weights term already counts)."""
    spec = ModelSpec.resolve(model_path or config.model)
    budget = int(config.memory_budget_gb * GIB) if config.memory_budget_gb is not None else free_cuda_bytes() + already_allocated
    return plan_memory(
        spec,
        quantization="4bit" if config.load_in_4bit else "16bit",
        lora_rank=config.lora_r,
        num_generations=config.num_generations,
        prompts_per_step=config.prompts_per_step,
        prompt_tokens=prompt_tokens,
        completion_tokens=config.max_completion_length,
        budget_bytes=budget,
        world_size=int(os.environ.get("WORLD_SIZE", "1")),
        backend="transformers" if config.backend == "transformers" else "unsloth",
        gradient_checkpointing=config.gradient_checkpointing is not False,
    )
