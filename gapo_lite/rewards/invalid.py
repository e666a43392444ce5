"""An invalid answer scored just below the group's most frequent valid answer, instead of at a constant.

GAPO's constant ``invalid_reward`` (the paper's -1) does two jobs at once: it pushes invalid answers down, and,
because the most frequent valid answer scores well above it, it pays the safe favourite. Below a validity
threshold the second job wins and GAPO sharpens the mode it should spread (``gapo_lite.diagnostics``). Scoring an
invalid answer at the group's lowest valid reward (the favourite's) minus a ``margin`` keeps it below every valid
answer, and keeps the favourite from gaining much on it: the favourite's advantage is
``v (r_mode - mean of the valid rewards) + (1 - v) margin``, below zero at any valid rate v when the margin is 0.
The margin is the push towards valid answers (and the reply's form, under the clean-answer rule): at 0 there is
none beyond the favourite's own.

>>> from gapo_lite.rewards import FrequencyScorer, Group
>>> group = Group("p0", "Pick one: Owl, Cat, Dog.", ["Owl", "Owl", "Cat", "Bat"], {"items": ["Owl", "Cat", "Dog"]})
>>> [round(r, 3) for r in FrequencyScorer(invalid_reward=-1.0)(group)]
[0.667, 0.667, 1.0, -1.0]
>>> [round(r, 3) for r in InvalidBelowMode(FrequencyScorer(invalid_reward=-1.0), margin=0.25)(group)]
[0.667, 0.667, 1.0, 0.417]
"""
from __future__ import annotations

from collections.abc import Hashable

from gapo_lite.rewards.group import Group, GroupScorer


def lifted(invalid: float, lowest_valid: float, margin: float) -> float:
    """An invalid answer's reward under a margin: the lowest valid reward minus ``margin``, never below ``invalid``
    (:class:`InvalidBelowMode` scores by it, and :mod:`gapo_lite.diagnostics` reads the reward trained with through it).

    >>> lifted(-1.0, 0.75, 0.25), lifted(-1.0, 0.75, 2.0)
    (0.5, -1.0)
    """
    return max(invalid, lowest_valid - margin)


class InvalidBelowMode:
    """``scorer``'s rewards, each invalid answer (``scorer.answers`` gives ``None``) lifted to the group's lowest
    valid reward minus ``margin`` (never below what ``scorer`` gave it); a group with no valid answer keeps
    ``scorer``'s rewards (all invalid: one value, no gradient)."""

    def __init__(self, scorer: GroupScorer, margin: float = 0.0) -> None:
        if margin < 0:
            raise ValueError(f"margin must be >= 0 (an invalid answer never scores above a valid one), got {margin}")
        self.scorer = scorer
        self.margin = margin
        self.name = scorer.name

    def answers(self, group: Group) -> list[Hashable | None]:
        return list(self.scorer.answers(group))

    def __call__(self, group: Group) -> list[float]:
        rewards = list(self.scorer(group))
        valid = [a is not None for a in self.answers(group)]
        if not any(valid):
            return rewards
        lowest = min(r for r, ok in zip(rewards, valid) if ok)
        return [r if ok else lifted(r, lowest, self.margin) for r, ok in zip(rewards, valid)]
