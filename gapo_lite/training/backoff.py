"""Out-of-memory back-off helpers: split a prepared micro-batch exactly, and the errors that end a run.

Splitting a micro-batch into parts must leave the optimizer step's gradient unchanged. How each part's gradient
is weighted (:func:`part_weight`, applied to the parameters' gradients by
:func:`gapo_lite.training.gapo_trainer.weighted_gradients`) depends on how the loss type is normalised, the same
in TRL 1.14's ``GRPOTrainer._compute_loss`` and in Unsloth's ``grpo_compute_loss`` (unsloth_zoo 2026.10.9
~L1223-1247, which runs each micro-batch as one chunk):

* ``dapo``, ``cispo``, ``vespo``: divided by ``num_items_in_batch``, a token count over the whole generation
  batch that every slice keeps, so the parts already add up (weight 1);
* ``grpo``, ``sapo``, ``luspo``: a mean over the micro-batch's rows, and ``dr_grpo``: a sum divided by rows x
  ``max_completion_length``; a part of ``k`` of ``n`` rows is weighted ``k / n``;
* ``bnpo``: a mean over the micro-batch's completion tokens; a part is weighted by its share of the tokens.
"""
from __future__ import annotations

from typing import Any

import torch

# Losses normalised by a count that spans the whole generation batch: splitting a micro-batch is exact as is.
GLOBAL_NORM = frozenset({"dapo", "cispo", "vespo"})
# Losses averaged over the micro-batch's rows: each part is re-weighted by its share of the rows.
ROW_MEAN = frozenset({"grpo", "sapo", "dr_grpo", "luspo"})
# Losses averaged over the micro-batch's completion tokens: each part is re-weighted by its share of the tokens.
TOKEN_MEAN = frozenset({"bnpo"})


# CUDA running out of memory outside PyTorch's caching allocator raises a RuntimeError, not a torch.OutOfMemoryError:
# cuBLAS or cuDNN failing to allocate a handle or workspace (cublasCreate's CUBLAS_STATUS_ALLOC_FAILED), or the
# CUDA runtime's cudaErrorMemoryAllocation (torch.AcceleratorError, a RuntimeError). These are their messages;
# scripts/gpu_check.py's errors stage records what a real GPU raises.
OUT_OF_MEMORY_MESSAGES = ("CUBLAS_STATUS_ALLOC_FAILED", "CUDNN_STATUS_ALLOC_FAILED", "CUDA error: out of memory")


def is_out_of_memory(err: BaseException) -> bool:
    """A CUDA out-of-memory error, from the caching allocator or from a CUDA library (see ``OUT_OF_MEMORY_MESSAGES``)."""
    return isinstance(err, torch.OutOfMemoryError) or (isinstance(err, RuntimeError) and any(m in str(err) for m in OUT_OF_MEMORY_MESSAGES))


class OutOfMemoryAtChunkOne(RuntimeError):
    """Even one completion per forward/backward pass does not fit."""


class GenerationOutOfMemory(RuntimeError):
    """Generation ran out of memory; halving the training chunk would not help."""


def generation_oom_message(global_step: int, prompts_per_step: int | None, num_generations: int, max_completion_length: int) -> str:
    """What to say when generation (not training) runs out of memory, and what helps."""
    prompts = f"prompts_per_step={prompts_per_step}" if prompts_per_step else "fewer prompts per step"
    return (
        f"out of memory while GENERATING completions at global step {global_step}. The whole generation batch is "
        f"generated at once, so a smaller training chunk does not help. What does: fewer prompts per step (now {prompts}; "
        f"keep num_generations={num_generations}, the group GAPO needs), fast_inference=True (vLLM generation, with "
        f"gpu_memory_utilization for its share), or shorter completions (max_completion_length={max_completion_length}). "
        "`gapo-lite plan` shows the generation phase's estimate."
    )


class PreparedPart:
    """A slice of an already prepared (generated and scored) micro-batch; bypasses generation."""

    def __init__(self, inputs: dict[str, Any]) -> None:
        self.inputs = inputs


def rows(inputs: dict[str, Any]) -> int:
    """Completions in a prepared micro-batch."""
    return int(inputs["completion_ids"].shape[0])


def slice_rows(inputs: dict[str, Any], start: int, stop: int) -> dict[str, Any]:
    """Rows ``start:stop`` of every per-row entry; batch-level entries (e.g. ``num_items_in_batch``) are kept."""
    n = rows(inputs)
    out: dict[str, Any] = {}
    for key, value in inputs.items():
        if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape[0] == n:
            out[key] = value[start:stop]
        elif isinstance(value, list) and len(value) == n:
            out[key] = value[start:stop]
        else:
            out[key] = value
    return out


def split_bounds(n: int, parts: int) -> list[int]:
    """Boundaries cutting ``n`` rows into ``parts`` near-equal consecutive slices."""
    return [round(i * n / parts) for i in range(parts + 1)]


def part_weight(loss_type: str, part: dict[str, Any], whole: dict[str, Any]) -> float:
    """Factor that makes the parts' losses sum to the whole micro-batch's loss (see the module docstring)."""
    if loss_type in GLOBAL_NORM:
        return 1.0
    if loss_type in ROW_MEAN:
        return rows(part) / rows(whole)
    if loss_type in TOKEN_MEAN:
        return float(part["completion_mask"].sum()) / max(1.0, float(whole["completion_mask"].sum()))
    raise ValueError(f"out-of-memory back-off does not know how to split loss_type={loss_type!r}")
