"""``GAPOTrainer``: TRL's GRPOTrainer (Unsloth's, once Unsloth patched it) with the kit's two features, the
out-of-memory back-off (:mod:`gapo_lite.training.backoff`) and the shared prompt
(:mod:`gapo_lite.training.shared_prompt`), reaching TRL's internals only through :mod:`gapo_lite.upstream.trl`.

Everything the kit's trainer holds beyond TRL's is one object, declared once: :class:`GAPOState`, the
trainer's ``gapo``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from gapo_lite.memory import MemoryPlan
from gapo_lite.runplan import RunPlan
from gapo_lite.training.backoff import BackoffMixin
from gapo_lite.training.shared_prompt import SharedPromptMixin
from gapo_lite.upstream.trl import TRLHooks


@dataclass
class GAPOState:
    """What ``GAPOTrainer`` knows beyond TRL's arguments (``trainer.gapo``)."""

    # How the run was planned (build_trainer sets them).
    run_plan: RunPlan | None = None
    memory_plan: MemoryPlan | None = None  # on CUDA; its table ends the back-off's last error
    prompts_per_step: int | None = None  # named in the message of an OOM while generating
    share_prompts: bool = True  # each group's prompt through the model once (gapo_lite.training.shared_prompt)
    # The back-off's progress (gapo_lite.training.backoff).
    splits: int = 1  # passes each of TRL's micro-batches is cut into
    part_weight: float = 1.0  # the weight of the pass running now
    window_start: int | None = None  # the micro-step at which the buffered generation batch was generated
    backoffs: list[dict[str, int]] = field(default_factory=list)  # {"global_step", "chunk_size"} of each halving
    # The shared prompt's one log line, when it hands a forward to TRL's path.
    said_plain: bool = False


class GAPOTrainerMixin(BackoffMixin, SharedPromptMixin, TRLHooks):
    """What ``GAPOTrainer`` adds to a GRPOTrainer class; ``gapo`` is its :class:`GAPOState`."""

    def __init__(self, *args: Any, gapo: GAPOState | None = None, **kwargs: Any) -> None:
        self.gapo = gapo if gapo is not None else GAPOState()
        super().__init__(*args, **kwargs)


@lru_cache(maxsize=4)
def _trainer_class(base: type) -> type:
    return type("GAPOTrainer", (GAPOTrainerMixin, base), {"__doc__": __doc__})


def gapo_trainer_class() -> type:
    """``GAPOTrainer`` built on whatever ``trl.GRPOTrainer`` is now (Unsloth rebinds it when imported first)."""
    import trl

    return _trainer_class(trl.GRPOTrainer)
