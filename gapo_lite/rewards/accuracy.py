"""Accuracy first, diversity second: GAPO for tasks with a checker (GSM8K-style numeric answers).

A completion whose final answer is wrong (or missing) scores ``invalid_reward``. The correct ones are
clustered by the meaning of their solution text (:class:`~gapo_lite.rewards.semantic.SemanticClusterer`
by default, or any ``cluster(texts) -> labels``) and scored with the frequency-aware reward over those
clusters, f taken among the correct completions and L = G (the group size):
``1 - f(cluster) + 1/G``, always in [1/G, 1] (1 for a lone solution when every completion is correct
and distinct; 1/G when all correct completions share one solution). ``invalid_reward`` must be <= 0,
so every correct completion scores strictly more than every wrong one.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from numbers import Real
from typing import Any

from gapo_lite.answers.numbers import answers_match, extract_number, reasoning_text
from gapo_lite.rewards.frequency import frequency_rewards_with_L
from gapo_lite.rewards.group import Group

Cluster = Callable[[list[str]], Sequence[Hashable]]


def group_reference(group: Group, column: str, extract_answer: Callable[[str], float | None], who: str = "scorer") -> float:
    """The reference answer of ``group`` as a number: a number column as is, a text column through ``extract_answer``."""
    if column not in group.columns:
        raise KeyError(f"{who} needs the dataset column {column!r} (the reference answer); columns seen: {sorted(group.columns)}")
    raw = group.columns[column]
    value = float(raw) if isinstance(raw, Real) and not isinstance(raw, bool) else None
    if value is None and isinstance(raw, str):
        value = extract_answer(raw)
    if value is None:
        raise ValueError(f"reference {raw!r} in column {column!r} of group {group.key!r} holds no number")
    return value


class AccuracyScorer:
    """Plain GRPO baseline for a task with a checker: 1 for a correct answer, ``wrong_reward`` otherwise, each
    completion on its own. ``label(text)`` names a correct answer for the group metrics (default: the text)."""

    name = "accuracy"

    def __init__(
        self,
        extract_answer: Callable[[str], float | None] = extract_number,
        reference_column: str = "answer",
        *,
        label: Callable[[str], Hashable] = str.strip,
        wrong_reward: float = 0.0,
    ) -> None:
        self.extract_answer = extract_answer
        self.reference_column = reference_column
        self.label = label
        self.wrong_reward = wrong_reward

    def answers(self, group: Group) -> list[Hashable | None]:
        """``label`` of each correct completion, ``None`` for a wrong one."""
        ref = group_reference(group, self.reference_column, self.extract_answer, type(self).__name__)
        return [self.label(c) if answers_match(self.extract_answer(c), ref) else None for c in group.completions]

    def __call__(self, group: Group) -> list[float]:
        return [float(self.wrong_reward) if a is None else 1.0 for a in self.answers(group)]


class AccuracyDiversityScorer:
    """Wrong answers get ``invalid_reward``; correct ones are rewarded for a rare solution (see module doc)."""

    name = "gapo_accuracy_diversity"

    def __init__(
        self,
        extract_answer: Callable[[str], float | None] = extract_number,
        reference_column: str = "answer",
        cluster: Cluster | None = None,
        invalid_reward: float = -1.0,
        *,
        reasoning: Callable[[str], str] = reasoning_text,
    ) -> None:
        if invalid_reward > 0:
            raise ValueError(
                f"invalid_reward must be <= 0 (got {invalid_reward}): correct answers score at least 1/G > 0, "
                "and every correct answer must score more than every wrong one"
            )
        if cluster is None:
            from gapo_lite.rewards.semantic import SemanticClusterer

            cluster = SemanticClusterer()
        self.extract_answer = extract_answer
        self.reference_column = reference_column
        self.cluster = cluster
        self.invalid_reward = invalid_reward
        self.reasoning = reasoning
        self._memo: tuple[tuple[Any, ...], list[Hashable | None]] | None = None

    def reference(self, group: Group) -> float:
        """The group's reference answer as a number (a number column, or text parsed by ``extract_answer``)."""
        return group_reference(group, self.reference_column, self.extract_answer, type(self).__name__)

    def correct(self, group: Group) -> list[bool]:
        reference = self.reference(group)
        return [answers_match(self.extract_answer(c), reference) for c in group.completions]

    def answers(self, group: Group) -> list[Hashable | None]:
        """Solution-cluster label of each correct completion, ``None`` for a wrong one."""
        key = (self.reference(group), tuple(group.completions))
        if self._memo is not None and self._memo[0] == key:
            return list(self._memo[1])
        ok = [i for i, good in enumerate(self.correct(group)) if good]
        labels: list[Hashable | None] = [None] * len(group.completions)
        clusters = list(self.cluster([self.reasoning(group.completions[i]) for i in ok])) if ok else []
        if len(clusters) != len(ok) or any(lab is None for lab in clusters):
            raise ValueError(f"cluster returned {clusters!r} for {len(ok)} texts; expected one non-None label per text")
        for i, lab in zip(ok, clusters):
            labels[i] = lab
        self._memo = (key, labels)
        return list(labels)

    def __call__(self, group: Group) -> list[float]:
        return frequency_rewards_with_L(self.answers(group), len(group.completions), invalid_reward=self.invalid_reward)
