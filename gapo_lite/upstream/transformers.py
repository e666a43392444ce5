"""transformers' private names that gapo-lite uses, all of them, read from transformers 5.17.0.

* The shared prompt (:mod:`gapo_lite.training.shared_prompt`) hands one prompt's keys and values to the group's
  completions in a :class:`PromptCache`, a ``DynamicCache`` written once and then only read. It relies on how a
  ``DynamicCache`` keeps each layer (``cache_utils.DynamicLayer`` and ``DynamicSlidingWindowLayer``, with
  ``keys``, ``values`` and ``is_initialized``) and, under gradient checkpointing, on
  ``modeling_layers.GradientCheckpointingLayer``: its class switch ``_can_checkpoint_with_cache`` (False: a
  checkpointed layer drops the cache it is given, since a cache written twice would hold the prompt twice) and
  the ``_gradient_checkpointing_func`` that ``gradient_checkpointing_enable`` sets on it (whether it reruns the
  forward with grad, which the cache's gradient needs).
* The GGUF conversion (:mod:`gapo_lite.gguf`) reads a model's ``_tied_weights_keys`` (the weights tied to
  others, absent from its state dict) and drops the config's quantization record, including the
  ``_pre_quantization_dtype`` older transformers set (5.17 sets none).

:func:`missing` names what the installed transformers lacks.
"""
from __future__ import annotations

import contextlib
import copy
import inspect
from collections.abc import Iterator
from typing import Any

import torch
from transformers import DynamicCache, PreTrainedModel
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer
from transformers.modeling_layers import GradientCheckpointingLayer

READ_FROM = "5.17.0"
# The private names this module uses (tests/test_upstream.py checks that no other module of gapo-lite does).
PRIVATE_NAMES = ("_can_checkpoint_with_cache", "_gradient_checkpointing_func", "_tied_weights_keys", "_pre_quantization_dtype")


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

    def positions_written(self) -> list[int]:
        """Positions each layer holds (the prompt's length in every layer, once the prompt's forward wrote it)."""
        return [layer.get_seq_length() for layer in self.layers]


def model_config(model: Any) -> Any:
    """The model's config, through a DistributedDataParallel wrapper (None when there is none)."""
    return getattr(model, "config", None) or getattr(getattr(model, "module", None), "config", None)


def prompt_cache_is_exact(model: Any) -> bool:
    """True where a :class:`PromptCache` gives the gradients of running every row whole: the config's cache layers
    are ``DynamicLayer`` s (full or sliding attention: what ``update`` returns is the stored states followed by
    the new ones) and, while training with gradient checkpointing, every checkpointed layer is a
    ``GradientCheckpointingLayer`` run by non-reentrant checkpointing. Reentrant checkpointing runs the forward
    without grad, so the cache it wrote would carry no gradient from the completions back to the prompt; a layer
    class transformers does not manage would drop the cache or write it twice."""
    config = model_config(model)
    if config is None or not all(type(layer) in (DynamicLayer, DynamicSlidingWindowLayer) for layer in DynamicCache(config=config).layers):
        return False
    checkpointed = [m for m in model.modules() if getattr(m, "gradient_checkpointing", False) is True and m.training]
    if not checkpointed:
        return True
    layers = [m for m in checkpointed if isinstance(m, GradientCheckpointingLayer)]
    return bool(layers) and not any(_reentrant(m._gradient_checkpointing_func) for m in layers)


def _reentrant(checkpoint_function: Any) -> bool:
    """Whether transformers' checkpoint function (a ``functools.partial`` of ``torch.utils.checkpoint.checkpoint``)
    is the reentrant variant; torch picks it when ``use_reentrant`` is not given."""
    return getattr(checkpoint_function, "keywords", {}).get("use_reentrant", True) is not False


@contextlib.contextmanager
def layers_keep_cache(model: Any) -> Iterator[None]:
    """Let checkpointed layers use the cache they are given (a :class:`PromptCache`: read-only after one write)."""
    layers = [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer) and not m._can_checkpoint_with_cache]
    for layer in layers:
        layer._can_checkpoint_with_cache = True
    try:
        yield
    finally:
        for layer in layers:
            del layer._can_checkpoint_with_cache  # back to the class's False


def drop_quantization_record(config: Any) -> None:
    """Remove what says ``config`` was loaded quantized (``quantization_config``; ``_pre_quantization_dtype`` where an
    older transformers set it), so the model built from it is a plain one that trains and saves."""
    for attribute in ("quantization_config", "_pre_quantization_dtype"):
        if hasattr(config, attribute):
            delattr(config, attribute)


def tied_weight_keys(model: Any) -> set[str]:
    """The parameters ``model`` ties to others (absent from a state dict it is loaded from)."""
    return set(getattr(model, "_tied_weights_keys", None) or ())


def missing() -> list[str]:
    """What the kit relies on that the installed transformers lacks, one line each (empty: everything is there)."""
    import transformers

    where = f"transformers {transformers.__version__} (gapo_lite/upstream/transformers.py was read from {READ_FROM})"
    problems = []
    if not hasattr(GradientCheckpointingLayer, "_can_checkpoint_with_cache"):
        problems.append(f"{where}: GradientCheckpointingLayer has no _can_checkpoint_with_cache switch")
    if "self._gradient_checkpointing_func =" not in inspect.getsource(PreTrainedModel._set_gradient_checkpointing):
        problems.append(f"{where}: gradient checkpointing no longer sets _gradient_checkpointing_func on the layers")
    if "_tied_weights_keys" not in vars(PreTrainedModel):
        problems.append(f"{where}: PreTrainedModel has no _tied_weights_keys")
    layer = DynamicLayer()
    if not all(hasattr(layer, name) for name in ("keys", "values", "is_initialized")):
        problems.append(f"{where}: DynamicLayer no longer keeps keys, values and is_initialized")
    if tuple(inspect.signature(DynamicCache.update).parameters)[:4] != ("self", "key_states", "value_states", "layer_idx"):
        problems.append(f"{where}: DynamicCache.update{inspect.signature(DynamicCache.update)} changed")
    return problems
