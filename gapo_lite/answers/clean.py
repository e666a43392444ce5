"""The clean-answer rule: a reply counts only when it is ONE answer and nothing more.

A reward only defends what it checks. The lenient parsers read the first answer they find, so a truncated
"Cat Cat Cat Cat" or "China, India, Nepal India" still scores as one valid item, and RL on such rewards
taught a small model to stop ending its turn. Under this rule a reply is clean when it has one line of
content that is a lead-in at most ("Sure! ", "The city I'm referring to is"), the answer, and closing
punctuation: the item repeated, further items, a qualifier after a comma or chatter after the answer make
it no answer. Whether the reply *ended* (its end-of-turn token inside the length limit) is the other half
of the rule; only the caller knows it (the GRPO hook from TRL's completion ids, the suites from sampling).

>>> single_answer("Sure! **Paris.**"), single_answer("The city I'm referring to is Nova Haven.", "city")
('Paris', 'Nova Haven')
>>> single_answer("Paris, France"), single_answer("Canada\\n\\nThis country is Canada"), single_answer("Owl is my choice")
(None, None, None)
>>> clean_choice("Owl.", ["Cat", "Owl"]), clean_choice("Owl Owl", ["Cat", "Owl"]), clean_choice("Owls", ["Cat", "Owl"])
('Owl', None, 'Owl')
"""
from __future__ import annotations

from collections.abc import Sequence

from gapo_lite.answers.canonical import canonicalize
from gapo_lite.answers.extract import extract_answer

_DOUBLE_QUOTES = "\"“”«»„"


def _content_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if any(ch.isalnum() for ch in line)]


def single_answer(reply: str, noun: str | None = None) -> str | None:
    """The answer of ``reply`` (original spelling) when the reply is that answer alone, else ``None``.

    The answer is :func:`~gapo_lite.answers.extract_answer`'s (lead-ins about ``noun`` removed); the reply is
    clean when it has one line with content and nothing but punctuation follows the answer on it.
    """
    if not isinstance(reply, str):
        raise TypeError(f"single_answer expects a string, got {type(reply).__name__}")
    lines = _content_lines(reply)
    if len(lines) != 1:
        return None
    line = lines[0]
    answer = extract_answer(line, noun)
    if answer is None:
        return None
    if any(ch in _DOUBLE_QUOTES for ch in answer):  # a quote left inside: the quoted answer had more after it
        return None
    at = line.find(answer)
    if at < 0:  # the answer was re-spaced on the way: clean only if the whole line says the same
        return answer if canonicalize(line) == canonicalize(answer) else None
    tail = line[at + len(answer):]
    return None if any(ch.isalnum() for ch in tail) else answer


def clean_choice(reply: str, items: Sequence[str]) -> str | None:
    """The item of ``items`` that ``reply`` is, alone (case, markdown, a lead-in, closing punctuation and a
    plural tolerated), in its listed spelling; ``None`` when the reply is anything more or anything else."""
    answer = single_answer(reply)
    if answer is None:
        return None
    key = canonicalize(answer, fold_plurals=True)
    for item in items:
        if key is not None and canonicalize(item, fold_plurals=True) == key:
            return item
    return None
