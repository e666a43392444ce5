"""What scorers and the hook share: a ``Group`` of completions, the one scorer protocol (:class:`GroupScorer`), and
the per-group diversity metrics the hook logs. Imports no scorer and not the hook."""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
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
    """What every scorer of the kit is, and what :class:`~gapo_lite.rewards.GroupReward` hands each group to.

    The convention is TRL's, one level up: a TRL *reward function* (the hook, ``GroupReward``) is called with
    the rows of a generation batch and returns one float per completion; a *group scorer* is called with one
    :class:`Group` (a prompt's completions) and returns one float per completion of it, in order. ``answers``
    says which answer each completion gave (``None``: invalid), which the hook's metrics and the wrappers
    (``ValidityScorer``, ``InvalidBelowMode``) read; ``name`` prefixes the hook's logged metrics."""

    name: str

    def __call__(self, group: Group) -> Sequence[float]: ...

    def answers(self, group: Group) -> Sequence[Hashable | None]: ...


class FunctionScorer:
    """A plain function ``group -> rewards`` (or a scorer lacking ``name`` or ``answers``) as a :class:`GroupScorer`:
    named "gapo" unless it says otherwise; without ``answers`` of its own, each completion's answer is its stripped,
    lower-cased text (an empty one is no answer), for the hook's metrics."""

    def __init__(self, score: Callable[[Group], Sequence[float]], name: str = "gapo",
                 answers: Callable[[Group], Sequence[Hashable | None]] | None = None) -> None:
        self.score = score
        self.name = name
        self._answers = answers

    def __call__(self, group: Group) -> Sequence[float]:
        return self.score(group)

    def answers(self, group: Group) -> list[Hashable | None]:
        if self._answers is not None:
            return list(self._answers(group))
        return [c.strip().lower() or None for c in group.completions]


def as_group_scorer(scorer: GroupScorer | Callable[[Group], Sequence[float]]) -> GroupScorer:
    """``scorer`` itself when it is a :class:`GroupScorer`, else wrapped in a :class:`FunctionScorer`."""
    if isinstance(scorer, GroupScorer):
        return scorer
    return FunctionScorer(scorer, getattr(scorer, "name", None) or "gapo", getattr(scorer, "answers", None))


def entropy_bits(answers: Sequence[Hashable]) -> float:
    """Shannon entropy (bits) of the empirical distribution of ``answers`` (0 for an empty list)."""
    return entropy(answers, base=2)


def favourite_pressure(answers: Sequence[Hashable | None], rewards: Sequence[float]) -> float | None:
    """The group's own mode pressure: its most frequent valid answer's reward minus the group's mean reward.

    GRPO's advantage of the favourite has this sign: negative, the step pushes the favourite down (GAPO
    spreads); positive, being valid pays more than being rare and the step sharpens the mode
    (:mod:`gapo_lite.diagnostics` derives it for a large group). ``None`` when no answer is valid.

    >>> favourite_pressure(["owl", "owl", "cat", "dog"], [0.75, 0.75, 1.0, 1.0])
    -0.125
    >>> round(favourite_pressure(["owl", "owl", "cat", None], [2 / 3, 2 / 3, 1.0, -1.0]), 3)
    0.333
    """
    if len(answers) != len(rewards):
        raise ValueError(f"got {len(answers)} answers but {len(rewards)} rewards")
    valid = [a for a in answers if a is not None]
    if not valid:
        return None
    favourite = Counter(valid).most_common(1)[0][0]
    mine = [r for a, r in zip(answers, rewards) if a == favourite]
    return sum(mine) / len(mine) - sum(rewards) / len(rewards)


def group_metrics(groups: Sequence[Sequence[Hashable | None]], rewards: Sequence[Sequence[float]] | None = None) -> dict[str, float]:
    """Mean distinct valid answers per group, valid rate, mean group entropy (bits) of valid answers, and with
    ``rewards`` (one list per group) the mean :func:`favourite_pressure` over groups with a valid answer."""
    n = sum(len(g) for g in groups)
    valid = [[a for a in g if a is not None] for g in groups]
    metrics = {
        "distinct_per_group": sum(len(set(v)) for v in valid) / len(groups),
        "valid_rate": sum(len(v) for v in valid) / n if n else 0.0,
        "group_entropy": sum(entropy_bits(v) for v in valid) / len(groups),
    }
    if rewards is not None:
        pressures = [p for g, r in zip(groups, rewards, strict=True) if (p := favourite_pressure(g, r)) is not None]
        if pressures:
            metrics["mode_pressure"] = sum(pressures) / len(pressures)
    return metrics
