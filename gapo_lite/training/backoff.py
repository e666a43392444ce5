"""Out-of-memory back-off: a CUDA out-of-memory error inside a training step halves the completions per
forward/backward pass and redoes the step, so large groups (G = 32 and more) train on whatever memory is left.

:class:`BackoffMixin` (layered over TRL's GRPOTrainer by :mod:`gapo_lite.training.gapo_trainer`) cuts each of
TRL's micro-batches into ``splits`` passes and, after an OOM, redoes the current optimizer step's accumulated
micro-batches from the generation batch TRL buffered, so no gradient is lost or counted twice. The ``except``
block only decides (halve, or give up); the memory is freed and the window redone after it, once the failed
step's traceback, frames and activations are gone, and an OOM during the redo backs off again. At one completion
per pass it stops with the memory plan's table. An OOM while *generating* is reported as
:class:`GenerationOutOfMemory`: a smaller training chunk does not shrink generation. TRL's buffer and step
counter are reached through :mod:`gapo_lite.upstream.trl` (``buffered_micro_batches``, ``micro_step``).

Splitting a micro-batch into parts must leave the optimizer step's gradient unchanged. How each part's gradient
is weighted (:func:`part_weight`, applied to the parameters' gradients by :func:`weighted_gradients`) depends on
how the loss type is normalised, the same in TRL 1.14's ``GRPOTrainer._compute_loss`` and in Unsloth's
``grpo_compute_loss`` (unsloth_zoo 2026.10.9 ~L1223-1247, which runs each micro-batch as one chunk):

* ``dapo``, ``cispo``, ``vespo``: divided by ``num_items_in_batch``, a token count over the whole generation
  batch that every slice keeps, so the parts already add up (weight 1);
* ``grpo``, ``sapo``, ``luspo``: a mean over the micro-batch's rows, and ``dr_grpo``: a sum divided by rows x
  ``max_completion_length``; a part of ``k`` of ``n`` rows is weighted ``k / n``;
* ``bnpo``: a mean over the micro-batch's completion tokens; a part is weighted by its share of the tokens.
"""
from __future__ import annotations

import contextlib
import gc
import logging
from collections.abc import Iterator
from typing import Any

import torch

logger = logging.getLogger("gapo_lite")

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


def free_memory() -> None:
    """Collect garbage (the failed step's frames hold reference cycles) and return cached CUDA blocks."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


@contextlib.contextmanager
def weighted_gradients(model: torch.nn.Module, weight: float) -> Iterator[None]:
    """Every gradient reaching a trainable parameter of ``model`` in the block is multiplied by ``weight`` on its
    way into ``.grad`` (a tensor hook on a leaf runs before accumulation). Weighting the loss would not do on
    Unsloth: its GRPO loss's backward returns the gradient it computed in the forward and ignores the one it
    is given, unless DeepSpeed sets ``upstream_scale`` (unsloth_zoo/rl_replacements.py ~L1427-1431, ~L3752-3761
    in 2026.10.9), so a weighted loss changes the logged value and nothing else."""
    if weight == 1.0:
        yield
        return
    handles = [p.register_hook(lambda grad: grad * weight) for p in model.parameters() if p.requires_grad]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


class BackoffMixin:
    """The back-off, layered over a GRPOTrainer class (see :func:`gapo_lite.training.gapo_trainer.gapo_trainer_class`).
    Its state is the trainer's ``gapo`` (:class:`~gapo_lite.training.gapo_trainer.GAPOState`): ``splits``,
    ``part_weight``, ``window_start`` and the ``backoffs`` made."""

    @property
    def chunk_size(self) -> int:
        """Completions per forward/backward pass now: TRL's micro-batch, cut into ``gapo.splits`` passes."""
        return max(1, self.args.per_device_train_batch_size // self.gapo.splits)

    def generate_and_score(self, inputs):
        try:
            return super().generate_and_score(inputs)
        except RuntimeError as err:
            if not is_out_of_memory(err):
                raise
            message = generation_oom_message(
                int(self.state.global_step), self.gapo.prompts_per_step, self.args.num_generations, self.args.max_completion_length
            )
            raise GenerationOutOfMemory(message) from err

    def prepare_inputs(self, generation_batch):
        if isinstance(generation_batch, PreparedPart):
            return generation_batch.inputs
        before = self.buffered_micro_batches
        prepared = super().prepare_inputs(generation_batch)
        if self.buffered_micro_batches is not before:
            self.gapo.window_start = self.micro_step  # a new generation batch was generated and buffered
        return prepared

    def _current_micro_batch(self, inputs):
        """This micro-step's prepared rows, from the buffer when this window was already generated."""
        spg, step = self.args.steps_per_generation, self.micro_step
        if self.buffered_micro_batches is not None and self.gapo.window_start == step - step % spg:
            return self.buffered_micro_batches[step % spg]
        return self.prepare_inputs(inputs)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        loss = super().compute_loss(model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch)
        if self.gapo.part_weight == 1.0:
            return loss
        # A part's weight reaches the gradients through the parameters' hooks (weighted_gradients): Unsloth's GRPO
        # loss ignores the gradient it is handed. Here only the value is weighted, for the logged loss.
        return loss + (self.gapo.part_weight - 1.0) * loss.detach()

    def training_step(self, model, inputs, num_items_in_batch=None):
        redo = False
        while True:
            try:
                if redo:
                    self._redo_window(model, num_items_in_batch)
                if self.gapo.splits == 1:
                    return super().training_step(model, inputs, num_items_in_batch)
                return self._split_step(model, self._current_micro_batch(inputs), num_items_in_batch)
            except RuntimeError as err:
                if not is_out_of_memory(err):
                    raise
                self._decide_back_off(err)  # the decision only; raises when nothing smaller is left
            # Out of the except block: the traceback (and the failed step's frames and activations) is released.
            free_memory()
            redo = True

    def _split_step(self, model, prepared: dict[str, Any], num_items_in_batch) -> torch.Tensor:
        """One micro-step as ``gapo.splits`` smaller forward/backward passes whose gradients add up exactly."""
        step0 = self.micro_step
        bounds = split_bounds(rows(prepared), self.gapo.splits)
        total = None
        try:
            for start, stop in zip(bounds, bounds[1:]):
                part = slice_rows(prepared, start, stop)
                self.gapo.part_weight = part_weight(self.loss_type, part, prepared)
                with weighted_gradients(model, self.gapo.part_weight):
                    loss = super().training_step(model, PreparedPart(part), num_items_in_batch)
                self.micro_step = step0
                total = loss.detach() if total is None else total + loss.detach()
        finally:
            self.gapo.part_weight = 1.0
            self.micro_step = step0
        self.micro_step = step0 + 1
        return total

    def _decide_back_off(self, err: BaseException) -> None:
        """Halve the chunk, or raise :class:`OutOfMemoryAtChunkOne` when it is already one completion."""
        chunk = self.chunk_size
        if chunk <= 1:
            table = f"\n{self.gapo.memory_plan.format_table()}" if self.gapo.memory_plan is not None else ""
            raise OutOfMemoryAtChunkOne(
                f"out of memory at global step {self.state.global_step} even with 1 completion per forward/backward "
                f"pass; reduce max_completion_length, num_generations or prompts_per_step, or use a smaller model.{table}"
            ) from err
        self.gapo.splits *= 2
        new_chunk = self.chunk_size
        self.gapo.backoffs.append({"global_step": int(self.state.global_step), "chunk_size": new_chunk})
        message = f"gapo-lite: out of memory at step {self.state.global_step}; chunk {chunk} -> {new_chunk} completions, redoing the step"
        logger.warning(message)
        print(message)

    def _redo_window(self, model, num_items_in_batch) -> None:
        """Zero the gradients and redo this optimizer step's finished micro-steps at the current chunk size."""
        model.zero_grad(set_to_none=True)
        done = self.micro_step % self.args.steps_per_generation
        if done == 0 or self.buffered_micro_batches is None:
            return
        step0 = self.micro_step
        for j in range(done):
            self.micro_step = step0  # keep TRL's bookkeeping where it was
            self._split_step(model, self.buffered_micro_batches[j], num_items_in_batch)
        self.micro_step = step0
