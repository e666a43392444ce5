"""The guard set: ordinary instructions with one short, checkable answer, written here (no download), so that
"more diverse" is never read without "still as capable". Three kinds of 30 items each: two-number
arithmetic, capitals of well-known countries, and spelling (a word's first letter; the correctly spelled
word of a pair). Each prompt asks for the answer alone, like the diversity suites do.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

ANSWER_ONLY = " Answer with the {what} only."

CAPITALS: tuple[tuple[str, str], ...] = (
    ("France", "Paris"), ("Japan", "Tokyo"), ("Italy", "Rome"), ("Germany", "Berlin"), ("Spain", "Madrid"),
    ("the United Kingdom", "London"), ("Russia", "Moscow"), ("China", "Beijing"), ("Egypt", "Cairo"), ("Canada", "Ottawa"),
    ("Australia", "Canberra"), ("Brazil", "Brasilia"), ("Mexico", "Mexico City"), ("Greece", "Athens"), ("Portugal", "Lisbon"),
    ("the Netherlands", "Amsterdam"), ("Sweden", "Stockholm"), ("Norway", "Oslo"), ("Ireland", "Dublin"), ("Poland", "Warsaw"),
    ("Turkey", "Ankara"), ("Argentina", "Buenos Aires"), ("Kenya", "Nairobi"), ("South Korea", "Seoul"), ("Thailand", "Bangkok"),
    ("Austria", "Vienna"), ("Cuba", "Havana"), ("Peru", "Lima"), ("Chile", "Santiago"), ("Finland", "Helsinki"),
)
FIRST_LETTER_WORDS: tuple[str, ...] = (
    "banana", "elephant", "guitar", "window", "orange", "mountain", "pencil", "zebra", "kitchen", "umbrella",
    "yellow", "rabbit", "island", "doctor", "violin",
)
SPELLING_PAIRS: tuple[tuple[str, str], ...] = (  # (correct, misspelled)
    ("receive", "recieve"), ("separate", "seperate"), ("definitely", "definately"), ("believe", "beleive"), ("tomorrow", "tommorow"),
    ("beginning", "begining"), ("necessary", "neccessary"), ("friend", "freind"), ("weird", "wierd"), ("calendar", "calender"),
    ("library", "libary"), ("address", "adress"), ("government", "goverment"), ("business", "buisness"), ("truly", "truely"),
)


@dataclass(frozen=True)
class GuardItem:
    """One instruction: its kind ("arithmetic", "capital", "spelling"), the prompt and the one right answer."""

    kind: str
    prompt: str
    answer: str


def arithmetic_items(n: int = 30, seed: int = 0) -> list[GuardItem]:
    """``n`` sums and products of small numbers (two thirds sums of 2-digit numbers, one third 1-digit products)."""
    rng = random.Random(f"gapo-lite/guard/arithmetic/{seed}")
    items = []
    for i in range(n):
        if i % 3 == 2:
            a, b = rng.randint(2, 9), rng.randint(2, 9)
            items.append(GuardItem("arithmetic", f"What is {a} times {b}?" + ANSWER_ONLY.format(what="number"), str(a * b)))
        else:
            a, b = rng.randint(10, 49), rng.randint(10, 49)
            items.append(GuardItem("arithmetic", f"What is {a} plus {b}?" + ANSWER_ONLY.format(what="number"), str(a + b)))
    return items


def guard_items(seed: int = 0) -> list[GuardItem]:
    """The 90 guard instructions, in a fixed order (``seed`` only draws the arithmetic's numbers)."""
    capitals = [GuardItem("capital", f"What is the capital of {country}?" + ANSWER_ONLY.format(what="name"), city) for country, city in CAPITALS]
    letters = [GuardItem("spelling", f"What is the first letter of the word '{w}'?" + ANSWER_ONLY.format(what="letter"), w[0]) for w in FIRST_LETTER_WORDS]
    pairs = []
    for k, (right, wrong) in enumerate(SPELLING_PAIRS):
        shown = (right, wrong) if k % 2 == 0 else (wrong, right)  # the right one first or second, half each
        pairs.append(GuardItem("spelling", f"Which is spelled correctly: '{shown[0]}' or '{shown[1]}'?" + ANSWER_ONLY.format(what="word"), right))
    return arithmetic_items(seed=seed) + capitals + letters + pairs
