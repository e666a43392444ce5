"""What scorers and the hook share: a ``Group`` of completions, the ``GroupScorer`` protocol, and the
per-group diversity metrics the hook logs. Imports no scorer and not the hook."""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from gapo_lite.metrics import entropy


@dataclass(frozen=True)
class Group:
    """All completions sampled for one prompt, with that prompt's dataset columns.

    ``ended`` says, per completion, whether it ended its turn inside the length limit (``None``: not known).
    :class:`~gapo_lite.rewards.GroupReward` hands a completion that did not end to the scorer as the empty
    reply, which every scorer of the kit scores invalid: a reply cut off mid-way is no answer."""

    key: str
    prompt: Any
    completions: list[str]
    columns: dict[str, Any] = field(default_factory=dict)
    ended: tuple[bool, ...] | None = None


@runtime_checkable
class GroupScorer(Protocol):
    """Scores a whole group at once: one float per completion, in order."""

    def __call__(self, group: Group) -> Sequence[float]: ...


def entropy_bits(answers: Sequence[Hashable]) -> float:
    """Shannon entropy (bits) of the empirical distribution of ``answers`` (0 for an empty list)."""
    return entropy(answers, base=2)


def group_metrics(groups: Sequence[Sequence[Hashable | None]]) -> dict[str, float]:
    """Mean distinct valid answers per group, valid rate, and mean group entropy (bits) of valid answers."""
    n = sum(len(g) for g in groups)
    valid = [[a for a in g if a is not None] for g in groups]
    return {
        "distinct_per_group": sum(len(set(v)) for v in valid) / len(groups),
        "valid_rate": sum(len(v) for v in valid) / n if n else 0.0,
        "group_entropy": sum(entropy_bits(v) for v in valid) / len(groups),
    }
