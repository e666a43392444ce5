"""GAPO's group scorer for list-selection prompts: which item each reply chose, scored with the frequency reward."""
from __future__ import annotations

from collections.abc import Callable, Sequence

from gapo_lite.answers.choice import parse_choice
from gapo_lite.answers.clean import clean_choice
from gapo_lite.rewards.frequency import frequency_aware_rewards
from gapo_lite.rewards.group import Group

Parser = Callable[[str, Sequence[str]], "str | None"]


def choice_parser(clean: bool = True) -> Parser:
    """How a completion's list item is read: the reply must be the item alone (:func:`clean_choice`), or with
    ``clean=False`` the one item it mentions, whatever else it says (:func:`parse_choice`)."""
    return clean_choice if clean else parse_choice


class FrequencyScorer:
    """GAPO: parse each completion's chosen list item, then score the group with the frequency reward.

    ``clean`` (default): only a reply that is the item alone counts (``gapo_lite.answers.clean``), so a
    run-on "Cat Cat Cat" or "Owl, Cat" scores invalid; ``parse`` replaces the parser altogether.

    >>> from gapo_lite.rewards import Group
    >>> group = Group("p0", "Pick one: Owl, Cat, Dog.", ["Owl", "Owl.", "Cat", "Cat Cat Cat"], {"items": ["Owl", "Cat", "Dog"]})
    >>> [round(r, 3) for r in FrequencyScorer()(group)], [round(r, 3) for r in FrequencyScorer(clean=False)(group)]
    ([0.667, 0.667, 1.0, -1.0], [0.833, 0.833, 0.833, 0.833])
    """

    name = "gapo_frequency"

    def __init__(self, items_column: str = "items", parse: Parser | None = None, invalid_reward: float = -1.0, clean: bool = True) -> None:
        self.items_column = items_column
        self.parse = parse or choice_parser(clean)
        self.invalid_reward = invalid_reward

    def _items(self, group: Group) -> list[str]:
        if self.items_column not in group.columns:
            raise KeyError(
                f"{type(self).__name__} needs the dataset column {self.items_column!r} (the prompt's valid answers); "
                f"columns seen: {sorted(group.columns)}"
            )
        return list(group.columns[self.items_column])

    def answers(self, group: Group) -> list[str | None]:
        items = self._items(group)
        return [self.parse(c, items) for c in group.completions]

    def __call__(self, group: Group) -> list[float]:
        return frequency_aware_rewards(self.answers(group), self._items(group), invalid_reward=self.invalid_reward)
