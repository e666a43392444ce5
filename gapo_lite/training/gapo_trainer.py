"""``GAPOTrainer``: TRL's GRPOTrainer (Unsloth's, once patched) with out-of-memory back-off.

A CUDA out-of-memory error inside a training step halves the number of completions per forward/backward
pass and redoes the current optimizer step's accumulated micro-batches from the buffered generation batch,
so no gradient is lost or counted twice. The ``except`` block only decides (halve, or give up); the memory
is freed and the window redone after it, once the failed step's traceback, frames and activations are
gone, and an OOM during the redo backs off again. At one completion per pass it stops with the memory
plan's table. An OOM while *generating* is reported as :class:`GenerationOutOfMemory`: a smaller training
chunk does not shrink generation.
"""
from __future__ import annotations

import contextlib
import gc
import logging
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import torch

from gapo_lite.training.backoff import (
    GenerationOutOfMemory,
    OutOfMemoryAtChunkOne,
    PreparedPart,
    generation_oom_message,
    is_out_of_memory,
    part_weight,
    rows,
    slice_rows,
    split_bounds,
)
from gapo_lite.training.shared_prompt import SharedPromptMixin

logger = logging.getLogger("gapo_lite")


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
    """The back-off, layered over a GRPOTrainer class by :func:`gapo_trainer_class`."""

    gapo_plan_table: str | None = None
    gapo_prompts_per_step: int | None = None

    def _gapo_init(self) -> None:
        if not hasattr(self, "_gapo_splits"):
            self._gapo_splits = 1
            self._gapo_weight = 1.0
            self.gapo_backoffs: list[dict[str, int]] = []

    @property
    def gapo_chunk_size(self) -> int:
        self._gapo_init()
        return max(1, self.args.per_device_train_batch_size // self._gapo_splits)

    def _generate_and_score_completions(self, inputs):
        try:
            return super()._generate_and_score_completions(inputs)
        except RuntimeError as err:
            if not is_out_of_memory(err):
                raise
            message = generation_oom_message(
                int(self.state.global_step), self.gapo_prompts_per_step, self.args.num_generations, self.args.max_completion_length
            )
            raise GenerationOutOfMemory(message) from err

    def _prepare_inputs(self, generation_batch):
        if isinstance(generation_batch, PreparedPart):
            return generation_batch.inputs
        before = getattr(self, "_buffered_inputs", None)
        prepared = super()._prepare_inputs(generation_batch)
        if getattr(self, "_buffered_inputs", None) is not before:
            self._gapo_window_start = self._step  # a new generation batch was generated and buffered
        return prepared

    def _current_micro_batch(self, inputs):
        """This micro-step's prepared rows, from the buffer when this window was already generated."""
        spg = self.args.steps_per_generation
        if self._buffered_inputs is not None and getattr(self, "_gapo_window_start", None) == self._step - self._step % spg:
            return self._buffered_inputs[self._step % spg]
        return self._prepare_inputs(inputs)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        loss = super().compute_loss(model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch)
        self._gapo_init()
        if self._gapo_weight == 1.0:
            return loss
        # A part's weight reaches the gradients through the parameters' hooks (weighted_gradients): Unsloth's GRPO
        # loss ignores the gradient it is handed. Here only the value is weighted, for the logged loss.
        return loss + (self._gapo_weight - 1.0) * loss.detach()

    def training_step(self, model, inputs, num_items_in_batch=None):
        self._gapo_init()
        redo = False
        while True:
            try:
                if redo:
                    self._redo_window(model, num_items_in_batch)
                if self._gapo_splits == 1:
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
        """One micro-step as ``_gapo_splits`` smaller forward/backward passes whose gradients add up exactly."""
        step0 = self._step
        bounds = split_bounds(rows(prepared), self._gapo_splits)
        total = None
        try:
            for start, stop in zip(bounds, bounds[1:]):
                part = slice_rows(prepared, start, stop)
                self._gapo_weight = part_weight(self.loss_type, part, prepared)
                with weighted_gradients(model, self._gapo_weight):
                    loss = super().training_step(model, PreparedPart(part), num_items_in_batch)
                self._step = step0
                total = loss.detach() if total is None else total + loss.detach()
        finally:
            self._gapo_weight = 1.0
            self._step = step0
        self._step = step0 + 1
        return total

    def _decide_back_off(self, err: BaseException) -> None:
        """Halve the chunk, or raise :class:`OutOfMemoryAtChunkOne` when it is already one completion."""
        chunk = self.gapo_chunk_size
        if chunk <= 1:
            table = f"\n{self.gapo_plan_table}" if self.gapo_plan_table else ""
            raise OutOfMemoryAtChunkOne(
                f"out of memory at global step {self.state.global_step} even with 1 completion per forward/backward "
                f"pass; reduce max_completion_length, num_generations or prompts_per_step, or use a smaller model.{table}"
            ) from err
        self._gapo_splits *= 2
        new_chunk = self.gapo_chunk_size
        self.gapo_backoffs.append({"global_step": int(self.state.global_step), "chunk_size": new_chunk})
        message = f"gapo-lite: out of memory at step {self.state.global_step}; chunk {chunk} -> {new_chunk} completions, redoing the step"
        logger.warning(message)
        print(message)

    def _redo_window(self, model, num_items_in_batch) -> None:
        """Zero the gradients and redo this optimizer step's finished micro-steps at the current chunk size."""
        model.zero_grad(set_to_none=True)
        done = self._step % self.args.steps_per_generation
        if done == 0 or self._buffered_inputs is None:
            return
        step0 = self._step
        for j in range(done):
            self._step = step0  # keep TRL's bookkeeping where it was
            self._split_step(model, self._buffered_inputs[j], num_items_in_batch)
        self._step = step0


@lru_cache(maxsize=4)
def _trainer_class(base: type) -> type:
    return type("GAPOTrainer", (BackoffMixin, SharedPromptMixin, base), {"__doc__": __doc__})


def gapo_trainer_class() -> type:
    """``GAPOTrainer`` built on whatever ``trl.GRPOTrainer`` is now (Unsloth rebinds it when imported first)."""
    import trl

    return _trainer_class(trl.GRPOTrainer)
