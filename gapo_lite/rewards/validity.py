"""The plain-GRPO baseline for any task: 1 for a valid answer, ``invalid_reward`` otherwise, per sample."""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Protocol

from gapo_lite.rewards.group import Group


class AnswerScorer(Protocol):
    """A group scorer that also says which answer each completion gave (``None``: invalid)."""

    def answers(self, group: Group) -> Sequence[Hashable | None]: ...


class ValidityReward:
    """Per-sample validity taken from ``scorer.answers``: no group awareness, so no push to diversity."""

    name = "validity"

    def __init__(self, scorer: AnswerScorer, invalid_reward: float = -1.0) -> None:
        self.scorer = scorer
        self.invalid_reward = invalid_reward

    def answers(self, group: Group) -> list[Hashable | None]:
        return list(self.scorer.answers(group))

    def __call__(self, group: Group) -> list[float]:
        return [1.0 if a is not None else float(self.invalid_reward) for a in self.answers(group)]
