"""Prompts of several kinds in one run (list selection beside open-ended naming): each group is scored by the
scorer of its ``task`` column, so one GRPO run can train a model to spread its answers on both."""
from __future__ import annotations

from collections.abc import Hashable, Mapping

from gapo_lite.rewards.group import Group, GroupScorer


class TaskScorer:
    """Dispatch each group to ``scorers[group.columns[column]]``.

    >>> from gapo_lite.rewards import FrequencyScorer, OpenEndedFrequencyScorer
    >>> scorer = TaskScorer({"list": FrequencyScorer(), "open": OpenEndedFrequencyScorer(["Apple", "Pear"])})
    >>> scorer(Group("p0", "Pick one: Owl, Cat.", ["Owl", "Cat"], {"task": "list", "items": ["Owl", "Cat"]}))
    [1.0, 1.0]
    >>> scorer(Group("p1", "Name a fruit.", ["Apple", "Apple"], {"task": "open"}))
    [0.5, 0.5]
    """

    name = "gapo_tasks"

    def __init__(self, scorers: Mapping[str, GroupScorer], *, column: str = "task") -> None:
        if not scorers:
            raise ValueError("TaskScorer needs at least one scorer")
        self.scorers = dict(scorers)
        self.column = column

    def scorer_for(self, group: Group) -> GroupScorer:
        if self.column not in group.columns:
            raise KeyError(f"TaskScorer needs the dataset column {self.column!r}; columns seen: {sorted(group.columns)}")
        task = group.columns[self.column]
        if task not in self.scorers:
            raise KeyError(f"no scorer for task {task!r} (group {group.key!r}); known: {', '.join(sorted(self.scorers))}")
        return self.scorers[task]

    def answers(self, group: Group) -> list[Hashable | None]:
        return list(self.scorer_for(group).answers(group))

    def __call__(self, group: Group) -> list[float]:
        return list(self.scorer_for(group)(group))
