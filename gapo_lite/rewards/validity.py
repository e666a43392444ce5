"""The plain-GRPO baseline for any task: 1 for a valid answer, ``invalid_reward`` otherwise, per sample."""
from __future__ import annotations

from collections.abc import Hashable

from gapo_lite.rewards.group import Group, GroupScorer
from gapo_lite.rewards.list_scorer import FrequencyScorer


class ValidityScorer:
    """Per-sample validity as ``scorer`` reads the answers (default: GAPO's list scorer,
    :class:`~gapo_lite.rewards.FrequencyScorer`): no group awareness, so no push to diversity. With the same
    ``scorer`` as a GAPO run, it is that run's GRPO baseline.

    >>> from gapo_lite.rewards import Group
    >>> ValidityScorer()(Group("p0", "Pick one: Owl, Cat.", ["Owl", "Owl", "Bat"], {"items": ["Owl", "Cat"]}))
    [1.0, 1.0, -1.0]
    """

    name = "validity"

    def __init__(self, scorer: GroupScorer | None = None, invalid_reward: float = -1.0) -> None:
        self.scorer = scorer if scorer is not None else FrequencyScorer()
        self.invalid_reward = invalid_reward

    def answers(self, group: Group) -> list[Hashable | None]:
        return list(self.scorer.answers(group))

    def __call__(self, group: Group) -> list[float]:
        return [1.0 if a is not None else float(self.invalid_reward) for a in self.answers(group)]
