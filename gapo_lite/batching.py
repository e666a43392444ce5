"""How a generation batch splits over processes and forward/backward passes: the one rule for the config, the
run plan, TRL's config and the memory planner.

The ``prompts_per_step * num_generations`` completions of a step are shared equally among the processes (a
group may straddle two of them: the GAPO hook gathers every process's completions before scoring groups).
Each process then cuts its share into passes of ``chunk_size``, which must divide it so that every optimizer
step sees the whole generation batch.
"""
from __future__ import annotations


def per_process_batch(prompts_per_step: int, num_generations: int, world_size: int) -> int:
    """Completions each process generates per step; a clear error when they do not share out equally."""
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    total = prompts_per_step * num_generations
    if total % world_size:
        raise ValueError(
            f"prompts_per_step * num_generations = {total} does not split over {world_size} processes; "
            "make it a multiple of the process count"
        )
    return total // world_size


def passes_per_step(prompts_per_step: int, num_generations: int, world_size: int, chunk_size: int) -> int:
    """Forward/backward passes per optimizer step (= gradient_accumulation_steps = steps_per_generation)."""
    per_process = per_process_batch(prompts_per_step, num_generations, world_size)
    if not isinstance(chunk_size, int) or chunk_size < 1 or per_process % chunk_size:
        raise ValueError(
            f"chunk_size={chunk_size} must divide the per-process generation batch {per_process} "
            f"(prompts_per_step * num_generations / processes), so every optimizer step sees the whole generation batch"
        )
    return per_process // chunk_size


def chunk_sizes(per_process: int) -> list[int]:
    """Every chunk size that divides ``per_process``, largest first."""
    return sorted((d for d in range(1, per_process + 1) if per_process % d == 0), reverse=True)
