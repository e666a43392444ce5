"""Open-ended prompts of several categories ("Name a fruit.", "Name a city."): one open-ended scorer per
category, picked by the group's ``category`` column."""
from __future__ import annotations

from collections.abc import Hashable, Sequence

from gapo_lite.rewards.group import Group
from gapo_lite.rewards.open_scorer import OpenEndedFrequencyScorer


class CategoryScorer:
    """GAPO for open-ended prompts of several categories: each group is scored by the
    :class:`OpenEndedFrequencyScorer` of its ``category`` column (validator = that category's vocabulary,
    L = its size; ``nouns``: category -> what its prompt asks for, read as the scorer's ``noun``)."""

    name = "gapo_categories"

    def __init__(self, vocabularies_by_category: dict[str, Sequence[str]], *, column: str = "category", invalid_reward: float = -1.0,
                 clean: bool = True, nouns: dict[str, str] | None = None) -> None:
        if not vocabularies_by_category:
            raise ValueError("CategoryScorer needs at least one category vocabulary")
        self.column = column
        self.scorers = {c: OpenEndedFrequencyScorer(list(v), invalid_reward=invalid_reward, clean=clean, noun=(nouns or {}).get(c))
                        for c, v in vocabularies_by_category.items()}

    def scorer_for(self, group: Group) -> OpenEndedFrequencyScorer:
        if self.column not in group.columns:
            raise KeyError(f"CategoryScorer needs the dataset column {self.column!r}; columns seen: {sorted(group.columns)}")
        category = group.columns[self.column]
        if category not in self.scorers:
            raise KeyError(f"no vocabulary for category {category!r} (group {group.key!r}); known: {', '.join(sorted(self.scorers))}")
        return self.scorers[category]

    def answers(self, group: Group) -> list[Hashable | None]:
        return self.scorer_for(group).answers(group)

    def __call__(self, group: Group) -> list[float]:
        return self.scorer_for(group)(group)


def open_ended_scorer(split: str = "all", invalid_reward: float = -1.0, names: Sequence[str] | None = None, clean: bool = True,
                      vocabulary: str = "word_lists") -> CategoryScorer:
    """A :class:`CategoryScorer` over the word-list categories ``names`` (default: every category of ``split``);
    ``clean``: an answer counts only when the reply is that answer alone; ``vocabulary``: ``"word_lists"`` (each
    category's 25 items) or ``"wordnet"`` (with the nouns WordNet files under it:
    :func:`gapo_lite.data.open_prompts.open_vocabulary`)."""
    from gapo_lite.data.list_prompts import categories
    from gapo_lite.data.open_prompts import category_vocabularies

    pool = categories(split)  # type: ignore[arg-type]
    unknown = [c for c in names or () if c not in pool]
    if unknown:
        raise ValueError(f"categories {unknown} are not in split {split!r}; known: {', '.join(sorted(pool))}")
    chosen = names if names is not None else sorted(pool)
    return CategoryScorer(category_vocabularies(chosen, vocabulary), invalid_reward=invalid_reward, clean=clean)
