"""Each prompt computed once per group, in generation and in the loss forward: GAPO's G completions share it.

TRL scores a micro-batch by running every row, prompt and completion, through the model. In a GAPO group
the G rows carry the same prompt, so G - 1 of those prompt forwards (and their backwards) are the same
work again: with 1 prompt x 16 completions of 8 tokens after a 75-token prompt, 1328 tokens go through the
model where 75 + 16 x 8 = 203 would do. :class:`SharedPromptMixin` runs each distinct prompt once (its KV
cache kept in the autograd graph), hands the cache to the prompt's completions and runs only their tokens.
Positions, masks and the log-softmax are TRL's own, so the log-probabilities, entropies and gradients are
the same up to float rounding (``tests/test_shared_prompt.py``), with gradient checkpointing on or off.

Under gradient checkpointing a layer's forward runs a second time in the backward. transformers therefore
drops the cache of a checkpointed layer (``GradientCheckpointingLayer``: a cache written twice would hold the
prompt twice). :class:`PromptCache` is written once, by the prompt's first forward, and only read after that,
so every rerun sees what the first run saw; the layers are told they may keep it
(``_can_checkpoint_with_cache``, transformers' switch for caches that are only read) for these forwards only.

The mixin stands aside, handing the batch to TRL's path, for anything but plain text (images, MoE auxiliary
losses), when no two rows share a prompt, and where the cache could not carry the gradient exactly
(:func:`shared_cache_is_exact`). :func:`share_prompts_in_generation` does the same for TRL's ``generate``
call (:func:`gapo_lite.sampling.generate_shared_prefix`).
"""
from __future__ import annotations

import contextlib
import copy
import logging
from collections.abc import Iterator
from typing import Any

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer
from transformers.modeling_layers import GradientCheckpointingLayer

from gapo_lite.sampling import generate_shared_prefix, prompt_groups

__all__ = ["PromptCache", "SharedPromptMixin", "prompt_groups", "share_prompts_in_generation", "shared_cache_is_exact"]

logger = logging.getLogger("gapo_lite")


class PromptCache(DynamicCache):
    """One prompt's keys and values: written by the prompt's forward, then only read.

    Until :meth:`hand_over` it stores what each layer gives it, as a ``DynamicCache`` does. ``hand_over(rows)``
    returns the completions' cache: the prompt's states expanded to ``rows`` rows (views, not copies), whose
    ``update`` returns them followed by the new states and stores nothing. This cache is left read-only and
    empty: a checkpointed prompt layer rerun in the backward gets its states back as they came, which is what
    the first run's write returned (the prompt's states after nothing).
    """

    def __init__(self, config: Any) -> None:
        super().__init__(config=config)
        self.read_only = False

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args: Any, **kwargs: Any):
        if not self.read_only:
            return super().update(key_states, value_states, layer_idx, *args, **kwargs)
        layer = self.layers[layer_idx]
        if not layer.is_initialized:
            return key_states, value_states
        return torch.cat([layer.keys, key_states], dim=-2), torch.cat([layer.values, value_states], dim=-2)

    def hand_over(self, rows: int) -> "PromptCache":
        """The completions' read-only cache, ``rows`` rows sharing this prompt; this cache becomes read-only and empty."""
        shared = copy.copy(self)
        shared.layers = [copy.copy(layer) for layer in self.layers]
        for layer in shared.layers:
            layer.keys, layer.values = layer.keys.expand(rows, -1, -1, -1), layer.values.expand(rows, -1, -1, -1)
        for layer in self.layers:
            layer.keys, layer.values, layer.is_initialized = None, None, False
        shared.read_only = self.read_only = True
        return shared


def shared_cache_is_exact(model: Any) -> bool:
    """True where a :class:`PromptCache` gives TRL's gradients: its layers are ``DynamicLayer`` s (full or sliding
    attention: what ``update`` returns is the stored states followed by the new ones) and, while training with
    gradient checkpointing, every checkpointed layer is a ``GradientCheckpointingLayer`` run by non-reentrant
    checkpointing. Reentrant checkpointing runs the forward without grad, so the cache it wrote would carry no
    gradient from the completions back to the prompt; a layer class transformers does not manage would drop
    the cache or write it twice."""
    config = _config(model)
    if config is None or not all(type(layer) in (DynamicLayer, DynamicSlidingWindowLayer) for layer in DynamicCache(config=config).layers):
        return False
    checkpointed = [m for m in model.modules() if getattr(m, "gradient_checkpointing", False) is True and m.training]
    if not checkpointed:
        return True
    layers = [m for m in checkpointed if isinstance(m, GradientCheckpointingLayer)]
    return bool(layers) and not any(_reentrant(m._gradient_checkpointing_func) for m in layers)


def _config(model: Any) -> Any:
    """The model's config, through a DistributedDataParallel wrapper (None when there is none)."""
    return getattr(model, "config", None) or getattr(getattr(model, "module", None), "config", None)


def _reentrant(checkpoint_function: Any) -> bool:
    """Whether transformers' checkpoint function (a ``functools.partial`` of ``torch.utils.checkpoint.checkpoint``)
    is the reentrant variant; torch picks it when ``use_reentrant`` is not given."""
    return getattr(checkpoint_function, "keywords", {}).get("use_reentrant", True) is not False


@contextlib.contextmanager
def _layers_keep_cache(model: Any) -> Iterator[None]:
    """Let checkpointed layers use the cache they are given (it is a :class:`PromptCache`: read-only after one write)."""
    layers = [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer) and not m._can_checkpoint_with_cache]
    for layer in layers:
        layer._can_checkpoint_with_cache = True
    try:
        yield
    finally:
        for layer in layers:
            del layer._can_checkpoint_with_cache  # back to the class's False


class SharedPromptMixin:
    """Layered over a GRPOTrainer class (see :func:`gapo_lite.training.gapo_trainer.gapo_trainer_class`)."""

    gapo_share_prompts: bool = True

    def _full_logits_logps(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None, compute_entropy=False,
                           compute_aux_loss=False, **extra: Any):
        plain = compute_aux_loss or not self.gapo_share_prompts or any(v is not None for v in extra.values())
        prompt_length = input_ids.size(1) - logits_to_keep
        groups = [] if plain or prompt_length < 1 else prompt_groups(input_ids, attention_mask, prompt_length)
        if plain or len(groups) == input_ids.size(0) or not self._shared_cache_is_exact(model):
            return super()._full_logits_logps(model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,
                                              compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **extra)
        from trl.trainer.utils import selective_log_softmax, selective_log_softmax_and_entropy

        size = batch_size or input_ids.size(0)
        order, logps, entropies = [], [], []
        for rows in groups:
            for part in rows.split(size):
                logits = self._shared_prompt_logits(model, input_ids[part], attention_mask[part], prompt_length)
                ids, mask = input_ids[part, prompt_length:], attention_mask[part, prompt_length:]
                if compute_entropy:
                    lp, ent = selective_log_softmax_and_entropy(logits, ids, entropy_requires_grad=self._entropy_bonus_enabled,
                                                                temperature=self.temperature, row_mask=mask)
                    entropies.append(ent)
                else:
                    lp = selective_log_softmax(logits, ids, temperature=self.temperature, row_mask=mask)
                logps.append(lp)
                order.append(part)
        back = torch.argsort(torch.cat(order))  # the rows in their original order
        return torch.cat(logps)[back], (torch.cat(entropies)[back] if compute_entropy else None), None

    def _shared_cache_is_exact(self, model) -> bool:
        """:func:`shared_cache_is_exact`, saying once (in the log) when it sends the loss forward to TRL's path."""
        if shared_cache_is_exact(model):
            return True
        if not getattr(self, "_gapo_said_plain", False):
            self._gapo_said_plain = True
            logger.warning("gapo-lite: prompts are not shared in the loss forward (reentrant gradient checkpointing, or a cache "
                           "layer the shared prompt does not know): each row runs its prompt, as in TRL")
        return False

    @staticmethod
    def _shared_prompt_logits(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, prompt_length: int) -> torch.Tensor:
        """Logits predicting each completion token of rows that share one prompt: (rows, completion length, vocab)."""
        rows, completion = input_ids.size(0), input_ids.size(1) - prompt_length
        cache = PromptCache(_config(model))  # given, not asked for: use_cache=False (the model makes and returns none)
        with _layers_keep_cache(model):
            head = model(input_ids=input_ids[:1, :prompt_length], attention_mask=attention_mask[:1, :prompt_length],
                         past_key_values=cache, use_cache=False, logits_to_keep=1)
            written = [layer.get_seq_length() for layer in cache.layers]
            if written != [prompt_length] * len(cache.layers):
                raise RuntimeError(f"shared prompt: the prompt's forward left {written} positions in its cache's layers, not "
                                   f"{prompt_length} in each; this model's attention does not write the cache it is given")
            completions_cache = cache.hand_over(rows)  # read-only from here on, the prompt's reruns in the backward included
            first = head.logits[:, -1:, :].expand(rows, 1, -1)  # the last prompt position predicts the first completion token
            if completion == 1:
                return first
            tail = model(input_ids=input_ids[:, prompt_length:-1], attention_mask=attention_mask[:, :-1],
                         past_key_values=completions_cache, use_cache=False)
        return torch.cat([first, tail.logits], dim=1)


def share_prompts_in_generation(model: Any) -> None:
    """Make ``model.generate`` prefill each distinct prompt of a batch once (plain text inputs; else as before).

    Generation stays outside bf16 autocast, as in TRL: under LoRA the base weights are frozen, and autocast
    caches its bf16 copies only of tensors that require grad, so every decoded token would re-cast every
    weight (measured slower than fp32 on a SmolLM2 step, ``benchmarks/smollm2_step.py``)."""
    original = model.generate

    def generate(input_ids=None, attention_mask=None, **kwargs):
        if input_ids is None or attention_mask is None or set(kwargs) - {"generation_config", "disable_compile"}:
            return original(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        return generate_shared_prefix(model, input_ids, attention_mask, generate=original, **kwargs)

    model.generate = generate
