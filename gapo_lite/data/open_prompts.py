"""Open-ended "Name a fruit." prompts (no list in the prompt) built from the categories of ``wordlists.json``,
and the vocabularies that say which answers to them are valid.

Two vocabularies per category: its word list (25 items, closed: "Dragonfruit" is no fruit by it; what the
tiny word-level models of the tests and the demo can say) and :func:`open_vocabulary`, the word list together
with every noun WordNet 3.0 files under the category (``open_vocab.json``, built by
scripts/build_open_vocab.py: 485 fruits, 7647 animals), for real models, which name far more than 25 fruits.
The scorer for these prompts is :func:`gapo_lite.rewards.categories.open_ended_scorer`.
"""
from __future__ import annotations

import functools
import json
import random
from collections.abc import Sequence
from pathlib import Path

from gapo_lite.data.list_prompts import Split, categories

# What one item of each category is called ("Name a <noun>.").
NOUNS: dict[str, str] = {
    "animals": "animal", "emotions": "emotion", "numbers": "number", "foods": "food", "colors": "color",
    "fruits": "fruit", "vegetables": "vegetable", "countries": "country", "cities": "city", "sports": "sport",
    "jobs": "job", "tools": "tool", "vehicles": "vehicle", "birds": "bird", "trees": "tree", "flowers": "flower",
    "metals": "metal", "fabrics": "fabric", "drinks": "drink", "furniture": "piece of furniture",
    "planets_and_moons": "planet or moon", "instruments": "musical instrument", "books": "book",
    "gemstones": "gemstone", "dances": "dance", "spices": "spice", "insects": "insect", "clothing": "piece of clothing",
}
TEMPLATES: tuple[str, ...] = ("Name {article} {noun}.",)
# Training categories that the open-ended evaluation suite (gapo_lite/eval/open_suite.py: "Name a city.", ...)
# also asks about; a real-model recipe leaves them out so that suite stays unseen.
EVAL_SUITE_OVERLAP: tuple[str, ...] = ("animals", "cities", "colors", "countries", "foods", "jobs", "sports")
ANSWER_ONLY = " Answer with the name only."


def noun(category: str) -> str:
    """The singular noun for ``category`` ("fruits" -> "fruit")."""
    if category not in NOUNS:
        raise KeyError(f"no singular noun for category {category!r}; known: {', '.join(sorted(NOUNS))}")
    return NOUNS[category]


def open_prompt(category: str, template: str = TEMPLATES[0], suffix: str = "") -> str:
    """The prompt text: "Name an animal." (+ ``suffix``)."""
    word = noun(category)
    article = "an" if word[0].lower() in "aeiou" else "a"
    return template.format(article=article, noun=word) + suffix


def vocabularies(split: Split = "all") -> dict[str, list[str]]:
    """Category -> the items that count as a valid answer (the category's word list)."""
    return categories(split)


OPEN_VOCAB_FILE = Path(__file__).with_name("open_vocab.json")
VOCABULARIES = ("word_lists", "wordnet")  # which answers are valid: the closed word lists, or open_vocabulary


@functools.lru_cache(maxsize=1)
def _wordnet_nouns() -> dict[str, list[str]]:
    return json.loads(OPEN_VOCAB_FILE.read_text(encoding="utf-8"))["categories"]


@functools.lru_cache(maxsize=None)
def open_vocabulary(category: str) -> tuple[str, ...]:
    """The answers that count for a naming prompt about ``category``: its word list, then the nouns WordNet 3.0
    files under it (the word list alone where WordNet has none: numbers).

    >>> fruits = open_vocabulary("fruits")
    >>> "Apple" in fruits, "mango" in fruits, len(fruits) > len(vocabularies("all")["fruits"])
    (True, True, True)
    """
    words = vocabularies("all")
    if category not in words:
        raise KeyError(f"unknown category {category!r}; known: {', '.join(sorted(words))}")
    return tuple(dict.fromkeys([*words[category], *_wordnet_nouns().get(category, [])]))


def category_vocabularies(names: Sequence[str], vocabulary: str = "word_lists") -> dict[str, Sequence[str]]:
    """Category -> its valid answers, by ``vocabulary`` (one of :data:`VOCABULARIES`)."""
    if vocabulary not in VOCABULARIES:
        raise ValueError(f"vocabulary must be one of {VOCABULARIES}, got {vocabulary!r}")
    words = vocabularies("all")
    return {c: open_vocabulary(c) if vocabulary == "wordnet" else words[c] for c in names}


def prompt_words(split: Split = "all", templates: Sequence[str] = TEMPLATES, suffix: str = "") -> list[str]:
    """Every word of every prompt of ``split`` and every vocabulary item (for a word-level tiny tokenizer)."""
    words: set[str] = set()
    for category, items in vocabularies(split).items():
        for template in templates:
            words.update(open_prompt(category, template, suffix).replace(".", " ").split())
        words.update(w for item in items for w in item.split())
    return sorted(words)


def build_open_ended_dataset(
    num_prompts: int,
    *,
    split: Split = "train",
    names: Sequence[str] | None = None,
    templates: Sequence[str] = TEMPLATES,
    suffix: str = "",
    seed: int = 0,
):
    """A ``datasets.Dataset`` of open-ended prompts: ``prompt`` (chat messages), ``category``, ``prompt_id``.

    Rows cycle through the categories (``names``, default all of ``split``) in a seeded shuffled order, one
    pass after another, so every category appears equally often; ``prompt_id`` is unique per row (the
    GAPO hook groups completions by it, so repeats of one prompt must not share an id).
    """
    from datasets import Dataset

    if num_prompts < 1:
        raise ValueError(f"num_prompts must be >= 1, got {num_prompts}")
    if not templates:
        raise ValueError("templates is empty; give at least one prompt wording")
    pool = vocabularies(split)
    chosen = sorted(pool) if names is None else list(names)
    unknown = [c for c in chosen if c not in pool]
    if unknown or not chosen:
        raise ValueError(f"categories {unknown or '(none)'} are not in split {split!r}; known: {', '.join(sorted(pool))}")
    rng = random.Random(f"gapo-lite/open/{split}/{seed}")
    rows, order = [], []
    for i in range(num_prompts):
        if not order:
            order = rng.sample(chosen, len(chosen))
        category = order.pop()
        template = templates[rng.randrange(len(templates))]
        rows.append(
            {
                "prompt": [{"role": "user", "content": open_prompt(category, template, suffix)}],
                "category": category,
                "prompt_id": f"open-{split}-{seed}-{i:06d}",
            }
        )
    return Dataset.from_list(rows)


def naming_dataset(prompts: dict[str, str], num_rows: int, *, seed: int = 0, suffix: str = ANSWER_ONLY):
    """A ``datasets.Dataset`` of ``num_rows`` rows asking your own ``prompts`` (key -> text) over and over, in a
    seeded shuffle of each pass so that every prompt is asked equally often: ``prompt`` (chat messages, the text
    + ``suffix``), ``category`` (the prompt's key: the scorer's column) and ``prompt_id``.

    >>> rows = naming_dataset({"city": "Name a city.", "fruit": "Name a fruit."}, 5)
    >>> len(rows), sorted(set(rows["category"])), rows[0]["prompt"][0]["content"].endswith("Answer with the name only.")
    (5, ['city', 'fruit'], True)
    """
    from datasets import Dataset

    if not prompts:
        raise ValueError("naming_dataset needs at least one prompt")
    if num_rows < 1:
        raise ValueError(f"num_rows must be >= 1, got {num_rows}")
    rng = random.Random(f"gapo-lite/naming/{seed}")
    keys: list[str] = []
    while len(keys) < num_rows:
        keys += rng.sample(sorted(prompts), len(prompts))
    return Dataset.from_list([{"prompt": [{"role": "user", "content": prompts[k] + suffix}], "category": k, "prompt_id": f"naming-{k}-{i:06d}"}
                              for i, k in enumerate(keys[:num_rows])])
