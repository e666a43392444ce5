"""List-selection prompts ("pick one item from this list") built from the word lists in ``wordlists.json``."""
from __future__ import annotations

import json
import random
from functools import lru_cache
from importlib import resources
from typing import Literal

Split = Literal["train", "heldout", "all"]

TEMPLATES: tuple[str, ...] = (
    "Pick one item from this list at random: {items}. Answer with the item only.",
    "Here is a list of {category}: {items}. Choose one of them and reply with just that word.",
    "Select a single option from the following: {items}. Reply with the option only.",
)


@lru_cache(maxsize=1)
def _wordlists() -> dict[str, dict[str, list[str]]]:
    text = resources.files("gapo_lite.data").joinpath("wordlists.json").read_text(encoding="utf-8")
    return json.loads(text)


def categories(split: Split = "all") -> dict[str, list[str]]:
    """Category name -> items; ``train`` and ``heldout`` never share a category."""
    lists = _wordlists()
    if split == "all":
        return {**lists["train"], **lists["heldout"]}
    if split not in lists:
        raise ValueError(f"unknown split {split!r}; expected 'train', 'heldout' or 'all'")
    return dict(lists[split])


def vocabulary() -> list[str]:
    """Every word used by the prompts: template words, category names and items (sorted, unique)."""
    words: set[str] = set()
    for template in TEMPLATES:
        words.update(template.replace("{items}", " ").replace("{category}", " ").replace(".", " ").replace(",", " ").replace(":", " ").split())
    for name, items in categories("all").items():
        words.update(name.replace("_", " ").split())
        words.update(w for item in items for w in item.split())
    return sorted(words)


def format_prompt(items: list[str], category: str, template: str = TEMPLATES[0]) -> str:
    """One prompt's text."""
    return template.format(items=", ".join(items), category=category.replace("_", " "))


def make_example(items: list[str], category: str, template: str, prompt_id: str) -> dict:
    """One dataset row in TRL's conversational format."""
    return {
        "prompt": [{"role": "user", "content": format_prompt(items, category, template)}],
        "items": list(items),
        "category": category,
        "prompt_id": prompt_id,
    }


def build_list_dataset(
    num_prompts: int,
    *,
    split: Split = "train",
    min_items: int = 4,
    max_items: int = 12,
    seed: int = 0,
    templates: tuple[str, ...] = TEMPLATES,
):
    """A ``datasets.Dataset`` of list-selection prompts: ``prompt`` (chat messages), ``items``, ``category``, ``prompt_id``.

    Each row draws a category of ``split``, a list length in [min_items, max_items], that many distinct items
    in shuffled order, and a wording from ``templates``. The same arguments always give the same rows.
    """
    from datasets import Dataset

    if num_prompts < 1:
        raise ValueError(f"num_prompts must be >= 1, got {num_prompts}")
    if not 1 <= min_items <= max_items:
        raise ValueError(f"need 1 <= min_items <= max_items, got min_items={min_items}, max_items={max_items}")
    if not templates:
        raise ValueError("templates is empty; give at least one prompt wording")
    pool = categories(split)
    smallest = min(len(v) for v in pool.values())
    if max_items > smallest:
        raise ValueError(f"max_items={max_items} exceeds the smallest category of split {split!r} ({smallest} items)")
    rng = random.Random(f"gapo-lite/{split}/{seed}")
    names = sorted(pool)
    rows = []
    for i in range(num_prompts):
        category = rng.choice(names)
        k = rng.randint(min_items, max_items)
        items = rng.sample(pool[category], k)
        template = templates[rng.randrange(len(templates))]
        rows.append(make_example(items, category, template, f"{split}-{seed}-{i:06d}"))
    return Dataset.from_list(rows)
