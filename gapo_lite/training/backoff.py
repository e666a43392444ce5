"""``GAPOTrainer``: TRL's GRPOTrainer (Unsloth's, once patched) with out-of-memory back-off.

A CUDA out-of-memory error inside a training step halves the number of completions per forward/backward
pass and redoes the current optimizer step's accumulated micro-batches from the buffered generation batch,
so no gradient is lost or counted twice. At one completion per pass it stops with the memory plan's table.
"""
from __future__ import annotations

import gc
import logging
from functools import lru_cache
from typing import Any

import torch

logger = logging.getLogger("gapo_lite")

# Losses normalised by a count that spans the whole generation batch: splitting a micro-batch is exact as is.
_GLOBAL_NORM = {"dapo", "cispo", "vespo"}
# Losses averaged over the micro-batch's rows (or tokens for bnpo): each part is re-weighted by its share.
_ROW_MEAN = {"grpo", "sapo", "dr_grpo", "luspo"}


class OutOfMemoryAtChunkOne(RuntimeError):
    """Even one completion per forward/backward pass does not fit."""


class PreparedPart:
    """A slice of an already prepared (generated and scored) micro-batch; bypasses generation."""

    def __init__(self, inputs: dict[str, Any]) -> None:
        self.inputs = inputs


def _rows(inputs: dict[str, Any]) -> int:
    return int(inputs["completion_ids"].shape[0])


def slice_rows(inputs: dict[str, Any], start: int, stop: int) -> dict[str, Any]:
    """Rows ``start:stop`` of every per-row entry; batch-level entries (e.g. ``num_items_in_batch``) are kept."""
    n = _rows(inputs)
    out: dict[str, Any] = {}
    for key, value in inputs.items():
        if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape[0] == n:
            out[key] = value[start:stop]
        elif isinstance(value, list) and len(value) == n:
            out[key] = value[start:stop]
        else:
            out[key] = value
    return out


def part_weight(loss_type: str, part: dict[str, Any], whole: dict[str, Any]) -> float:
    """Factor that makes the parts' losses sum to the whole micro-batch's loss."""
    if loss_type in _GLOBAL_NORM:
        return 1.0
    if loss_type in _ROW_MEAN:
        return _rows(part) / _rows(whole)
    if loss_type == "bnpo":
        return float(part["completion_mask"].sum()) / max(1.0, float(whole["completion_mask"].sum()))
    raise ValueError(f"out-of-memory back-off does not know how to split loss_type={loss_type!r}")


class _BackoffMixin:
    gapo_plan_table: str | None = None

    def _gapo_init(self) -> None:
        if not hasattr(self, "_gapo_splits"):
            self._gapo_splits = 1
            self._gapo_weight = 1.0
            self.gapo_backoffs: list[dict[str, int]] = []

    @property
    def gapo_chunk_size(self) -> int:
        self._gapo_init()
        return max(1, self.args.per_device_train_batch_size // self._gapo_splits)

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
        return loss * self._gapo_weight if self._gapo_weight != 1.0 else loss

    def training_step(self, model, inputs, num_items_in_batch=None):
        self._gapo_init()
        while True:
            try:
                if self._gapo_splits == 1:
                    return super().training_step(model, inputs, num_items_in_batch)
                return self._split_step(model, self._current_micro_batch(inputs), num_items_in_batch)
            except torch.OutOfMemoryError as err:
                self._back_off(err)
                self._redo_window(model, num_items_in_batch)

    def _split_step(self, model, prepared: dict[str, Any], num_items_in_batch) -> torch.Tensor:
        """One micro-step as ``_gapo_splits`` smaller forward/backward passes whose gradients add up exactly."""
        step0 = self._step
        n = _rows(prepared)
        bounds = [round(i * n / self._gapo_splits) for i in range(self._gapo_splits + 1)]
        total = None
        try:
            for start, stop in zip(bounds, bounds[1:]):
                part = slice_rows(prepared, start, stop)
                self._gapo_weight = part_weight(self.loss_type, part, prepared)
                loss = super().training_step(model, PreparedPart(part), num_items_in_batch)
                self._step = step0
                total = loss.detach() if total is None else total + loss.detach()
        finally:
            self._gapo_weight = 1.0
            self._step = step0
        self._step = step0 + 1
        return total

    def _back_off(self, err: BaseException) -> None:
        chunk = self.args.per_device_train_batch_size // self._gapo_splits
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        if chunk <= 1:
            table = f"\n{self.gapo_plan_table}" if self.gapo_plan_table else ""
            raise OutOfMemoryAtChunkOne(
                f"out of memory at global step {self.state.global_step} even with 1 completion per forward/backward "
                f"pass; reduce max_completion_length, num_generations or prompts_per_step, or use a smaller model.{table}"
            ) from err
        self._gapo_splits *= 2
        new_chunk = self.gapo_chunk_size
        self.gapo_backoffs.append({"global_step": int(self.state.global_step), "chunk_size": new_chunk})
        message = f"gapo-lite: out of memory at step {self.state.global_step}; chunk {chunk} -> {new_chunk} completions, retrying the step"
        logger.warning(message)
        print(message)

    def _redo_window(self, model, num_items_in_batch) -> None:
        """Zero the gradients and redo this optimizer step's finished micro-steps at the new chunk size."""
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
    return type("GAPOTrainer", (_BackoffMixin, base), {"__doc__": __doc__})


def gapo_trainer_class() -> type:
    """``GAPOTrainer`` built on whatever ``trl.GRPOTrainer`` is now (Unsloth rebinds it when imported first)."""
    import trl

    return _trainer_class(trl.GRPOTrainer)
