"""TRL's private names that gapo-lite uses, all of them, read from trl 1.14.2 (``trl/trainer/grpo_trainer.py``).

``GRPOTrainer`` has no public hook for what the kit's two features need, so they go through its private methods
and attributes:

* the OOM back-off (:mod:`gapo_lite.training.backoff`) reruns a micro-step's forward and backward from the
  generation batch TRL generated, scored and buffered. It needs that buffer (``_buffered_inputs``: the batch,
  prepared and cut into ``steps_per_generation`` micro-batches), TRL's micro-step counter (``_step``), the method
  that fills the buffer (``_prepare_inputs``), and the one that generates (``_generate_and_score_completions``),
  to tell an OOM while generating from one while training;
* the shared prompt (:mod:`gapo_lite.training.shared_prompt`) replaces how a micro-batch's per-token
  log-probabilities are computed (``_full_logits_logps``), with TRL's own log-softmax helpers
  (``trl.trainer.utils``) and its entropy switch (``_entropy_bonus_enabled``).

:class:`TRLHooks` is the only code that overrides or reads them. It hands each private method over to a method
with a public name that does the same job (TRL's own, until a mixin of the kit overrides it and calls
``super()``), and gives the attributes public names. :func:`missing` names what the installed TRL lacks.
"""
from __future__ import annotations

import importlib
import inspect
from typing import Any

READ_FROM = "1.14.2"

# GRPOTrainer's private methods the kit overrides, with the leading parameters it relies on.
METHODS: dict[str, tuple[str, ...]] = {
    "_generate_and_score_completions": ("self", "inputs"),
    "_prepare_inputs": ("self", "generation_batch"),
    "_full_logits_logps": ("self", "model", "input_ids", "attention_mask", "logits_to_keep", "batch_size", "compute_entropy", "compute_aux_loss"),
}
# Attributes GRPOTrainer sets on itself (in __init__ and its training step) that the kit reads or sets.
ATTRIBUTES = ("_buffered_inputs", "_step", "_entropy_bonus_enabled")
# TRL's internal log-softmax helpers (not exported by ``trl``), with the keywords the kit passes.
HELPERS: dict[str, tuple[str, ...]] = {
    "selective_log_softmax": ("logits", "index", "temperature", "row_mask"),
    "selective_log_softmax_and_entropy": ("logits", "index", "entropy_requires_grad", "temperature", "row_mask"),
}
HELPERS_MODULE = "trl.trainer.utils"
PRIVATE_NAMES = (*METHODS, *ATTRIBUTES)  # tests/test_upstream.py checks that no other module of gapo-lite uses them


class TRLHooks:
    """Placed right above TRL's ``GRPOTrainer`` in the kit's trainer class (:mod:`gapo_lite.training.gapo_trainer`).

    Each private method of TRL is handed to a public method of the same job; those call TRL's own through
    ``super()``, and the kit's mixins, placed before this class, override them."""

    # TRL calls these; each hands over to the public method below.
    def _generate_and_score_completions(self, inputs):
        return self.generate_and_score(inputs)

    def _prepare_inputs(self, generation_batch):
        return self.prepare_inputs(generation_batch)

    def _full_logits_logps(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None, compute_entropy=False,
                           compute_aux_loss=False, **extra: Any):
        return self.completion_logps(model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size, compute_entropy=compute_entropy,
                                     compute_aux_loss=compute_aux_loss, **extra)

    # TRL's behaviour under public names.
    def generate_and_score(self, inputs):
        """Generate the completions of a generation batch and score them (TRL's ``_generate_and_score_completions``)."""
        return super()._generate_and_score_completions(inputs)  # type: ignore[misc]

    def prepare_inputs(self, generation_batch):
        """This micro-step's prepared rows; at the start of a generation batch TRL generates, scores and buffers it
        first (TRL's ``_prepare_inputs``)."""
        return super()._prepare_inputs(generation_batch)  # type: ignore[misc]

    def completion_logps(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None, compute_entropy=False,
                         compute_aux_loss=False, **extra: Any):
        """The completion tokens' log-probabilities, entropies (or None) and auxiliary loss (or None): TRL's
        ``_full_logits_logps``, the prompt and completion of every row through the model."""
        return super()._full_logits_logps(model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,  # type: ignore[misc]
                                          compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **extra)

    @property
    def micro_step(self) -> int:
        """Micro-steps done (TRL's ``_step``); ``micro_step % steps_per_generation`` is the place in the buffer."""
        return self._step

    @micro_step.setter
    def micro_step(self, value: int) -> None:
        self._step = value

    @property
    def buffered_micro_batches(self) -> list[dict[str, Any]] | None:
        """The current generation batch, prepared and cut into ``steps_per_generation`` micro-batches (TRL's
        ``_buffered_inputs``); None before the first."""
        return getattr(self, "_buffered_inputs", None)

    @property
    def entropy_bonus_enabled(self) -> bool:
        """Whether the loss has an entropy term, so entropies need a gradient (TRL's ``_entropy_bonus_enabled``)."""
        return bool(self._entropy_bonus_enabled)


def token_logps(logits: Any, ids: Any, *, temperature: float, row_mask: Any) -> Any:
    """Log-probabilities of ``ids`` under ``logits`` at ``temperature``, as TRL computes them (``selective_log_softmax``)."""
    from trl.trainer.utils import selective_log_softmax

    return selective_log_softmax(logits, ids, temperature=temperature, row_mask=row_mask)


def token_logps_and_entropies(logits: Any, ids: Any, *, entropy_requires_grad: bool, temperature: float, row_mask: Any) -> tuple[Any, Any]:
    """:func:`token_logps` and each position's entropy, as TRL computes them (``selective_log_softmax_and_entropy``)."""
    from trl.trainer.utils import selective_log_softmax_and_entropy

    return selective_log_softmax_and_entropy(logits, ids, entropy_requires_grad=entropy_requires_grad, temperature=temperature, row_mask=row_mask)


def missing() -> list[str]:
    """What the kit relies on that the installed TRL lacks, one line each (empty: everything is there)."""
    import trl

    where = f"trl {trl.__version__} (gapo_lite/upstream/trl.py was read from {READ_FROM})"
    problems = []
    for name, wanted in METHODS.items():
        method = getattr(trl.GRPOTrainer, name, None)
        if method is None:
            problems.append(f"{where} has no GRPOTrainer.{name}")
        elif tuple(inspect.signature(method).parameters)[: len(wanted)] != wanted:
            problems.append(f"{where}: GRPOTrainer.{name}{inspect.signature(method)} no longer starts with {wanted}")
    source = inspect.getsource(trl.GRPOTrainer)
    problems += [f"{where}: GRPOTrainer no longer sets self.{name}" for name in ATTRIBUTES if f"self.{name} =" not in source]
    helpers = importlib.import_module(HELPERS_MODULE)
    for name, wanted in HELPERS.items():
        function = getattr(helpers, name, None)
        if function is None:
            problems.append(f"{where} has no {HELPERS_MODULE}.{name}")
        elif not set(wanted) <= set(inspect.signature(function).parameters):
            problems.append(f"{where}: {HELPERS_MODULE}.{name}{inspect.signature(function)} lacks one of {wanted}")
    return problems
