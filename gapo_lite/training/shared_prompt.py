"""Each prompt computed once per group, in generation and in the loss forward: GAPO's G completions share it.

TRL scores a micro-batch by running every row, prompt and completion, through the model. In a GAPO group
the G rows carry the same prompt, so G - 1 of those prompt forwards (and their backwards) are the same
work again: with 1 prompt x 16 completions of 8 tokens after a 75-token prompt, 1328 tokens go through the
model where 75 + 16 x 8 = 203 would do. :class:`SharedPromptMixin` runs each distinct prompt once (its KV
cache kept in the autograd graph), hands the cache to the prompt's completions and runs only their tokens.
Positions, masks and the log-softmax are TRL's own, so the log-probabilities, entropies and gradients are
the same up to float rounding (``tests/test_shared_prompt.py``), with gradient checkpointing on or off.

Under gradient checkpointing a layer's forward runs a second time in the backward; the cache that carries the
prompt is written once and only read after that, so every rerun sees what the first run saw. That cache, and
every other use of transformers' internals, is :mod:`gapo_lite.upstream.transformers`; TRL's method this replaces
(``_full_logits_logps``) is reached through :mod:`gapo_lite.upstream.trl` as ``completion_logps``.

The mixin stands aside, handing the batch to TRL's path, for anything but plain text (images, MoE auxiliary
losses), when no two rows share a prompt, and where the cache could not carry the gradient exactly
(:func:`~gapo_lite.upstream.transformers.prompt_cache_is_exact`). :func:`share_prompts_in_generation` does the same for TRL's ``generate``
call (:func:`gapo_lite.sampling.generate_shared_prefix`).
"""
from __future__ import annotations

import logging
from typing import Any

import torch

from gapo_lite.sampling import generate_shared_prefix, prompt_groups
from gapo_lite.upstream.transformers import PromptCache, layers_keep_cache, model_config, prompt_cache_is_exact
from gapo_lite.upstream.trl import token_logps, token_logps_and_entropies

__all__ = ["SharedPromptMixin", "prompt_groups", "share_prompts_in_generation"]

logger = logging.getLogger("gapo_lite")


class SharedPromptMixin:
    """Layered over a GRPOTrainer class (see :func:`gapo_lite.training.gapo_trainer.gapo_trainer_class`); on when
    ``self.gapo.share_prompts``."""

    def completion_logps(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None, compute_entropy=False,
                         compute_aux_loss=False, **extra: Any):
        plain = compute_aux_loss or not self.gapo.share_prompts or any(v is not None for v in extra.values())
        prompt_length = input_ids.size(1) - logits_to_keep
        groups = [] if plain or prompt_length < 1 else prompt_groups(input_ids, attention_mask, prompt_length)
        if plain or len(groups) == input_ids.size(0) or not self._prompt_cache_is_exact(model):
            return super().completion_logps(model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,
                                            compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **extra)
        size = batch_size or input_ids.size(0)
        order, logps, entropies = [], [], []
        for rows in groups:
            for part in rows.split(size):
                logits = self._shared_prompt_logits(model, input_ids[part], attention_mask[part], prompt_length)
                ids, mask = input_ids[part, prompt_length:], attention_mask[part, prompt_length:]
                if compute_entropy:
                    lp, ent = token_logps_and_entropies(logits, ids, entropy_requires_grad=self.entropy_bonus_enabled,
                                                        temperature=self.temperature, row_mask=mask)
                    entropies.append(ent)
                else:
                    lp = token_logps(logits, ids, temperature=self.temperature, row_mask=mask)
                logps.append(lp)
                order.append(part)
        back = torch.argsort(torch.cat(order))  # the rows in their original order
        return torch.cat(logps)[back], (torch.cat(entropies)[back] if compute_entropy else None), None

    def _prompt_cache_is_exact(self, model) -> bool:
        """:func:`~gapo_lite.upstream.transformers.prompt_cache_is_exact`, saying once (in the log) when it sends the
        loss forward to TRL's path."""
        if prompt_cache_is_exact(model):
            return True
        if not self.gapo.said_plain:
            self.gapo.said_plain = True
            logger.warning("gapo-lite: prompts are not shared in the loss forward (reentrant gradient checkpointing, or a cache "
                           "layer the shared prompt does not know): each row runs its prompt, as in TRL")
        return False

    @staticmethod
    def _shared_prompt_logits(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, prompt_length: int) -> torch.Tensor:
        """Logits predicting each completion token of rows that share one prompt: (rows, completion length, vocab)."""
        rows, completion = input_ids.size(0), input_ids.size(1) - prompt_length
        cache = PromptCache(model_config(model))  # given, not asked for: use_cache=False (the model makes and returns none)
        with layers_keep_cache(model):
            head = model(input_ids=input_ids[:1, :prompt_length], attention_mask=attention_mask[:1, :prompt_length],
                         past_key_values=cache, use_cache=False, logits_to_keep=1)
            written = cache.positions_written()
            if written != [prompt_length] * len(written):
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
