"""Open-ended GAPO: the frequency reward when the prompt carries no list, validity comes from a validator.

Choice of L (the number of valid answers) when it is not given
---------------------------------------------------------------
* validator is a vocabulary -> L = the number of distinct canonical entries of the vocabulary;
* otherwise -> L = G, the group size: the most distinct answers one group can show. A group of G
  distinct valid answers then scores exactly 1 each, and every valid reward lies in [1/G, 1].

Effect on GRPO advantages ((r - mean) / std within the group): a valid answer scores ``1 - f(o) + 1/L``,
so 1/L is one constant added to every *valid* reward of the group. Differences between valid answers
(``f(o') - f(o)``) do not depend on L; when the whole group is valid the shift cancels exactly; when
some answers are invalid, L only moves the valid-vs-invalid gap (``1 - f(o) + 1/L - invalid_reward``),
i.e. changing L is the same as changing ``invalid_reward`` by the opposite amount
(``tests/test_scorers_beyond.py`` checks all three).
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Union

from gapo_lite.answers.canonical import canonical_answer
from gapo_lite.answers.clean import single_answer
from gapo_lite.rewards.frequency import frequency_rewards_with_L
from gapo_lite.rewards.group import Group

__all__ = ["OpenEndedFrequencyScorer", "canonical_answer", "frequency_rewards_with_L", "load_vocabulary"]

Validator = Union[Collection[str], str, "os.PathLike[str]", "re.Pattern[str]", Callable[[str], bool]]


def _is_file(path: str | os.PathLike[str]) -> bool:
    try:
        return Path(path).is_file()
    except (OSError, ValueError):  # e.g. a long regex is not a valid file name
        return False


def load_vocabulary(path: str | os.PathLike[str]) -> list[str]:
    """One answer per line (blank lines and lines starting with '#' skipped)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"vocabulary file {str(p)!r} does not exist")
    entries = [line.strip() for line in p.read_text(encoding="utf-8").splitlines()]
    return [e for e in entries if e and not e.startswith("#")]


class OpenEndedFrequencyScorer:
    """GAPO for open-ended prompts ("name a fruit"): canonicalise each completion (``canonical``, default
    :func:`canonical_answer`: case, punctuation, lead-ins, articles, simple plurals), check it with a
    validator, score the group with the frequency reward (see the module docstring for L).

    ``validator`` is one of: a collection of answers (the vocabulary; canonicalised like the answers),
    a :class:`pathlib.Path` or a string naming an existing file (a vocabulary, one answer per line),
    a compiled regex or any other string (a pattern, ``fullmatch``-ed against the canonical answer), or
    a callable ``str -> bool`` (given the canonical answer). ``extract`` picks the answer text out of a
    completion (default: the whole completion). ``clean`` (default) counts that text only when it is one
    answer alone (:func:`~gapo_lite.answers.clean.single_answer`): "Paris, London" or "Paris is nice" is no answer.
    ``noun`` (what the prompt asks for: "city") lets the clean rule drop lead-ins about it ("The city is Paris.")
    and scores the noun itself as no answer ("City."), as the open-ended suite reads replies.
    """

    name = "gapo_open_ended"

    def __init__(
        self,
        validator: Validator,
        *,
        num_valid: int | None = None,
        canonical: Callable[[str], str | None] = canonical_answer,
        extract: Callable[[str], str | None] | None = None,
        invalid_reward: float = -1.0,
        clean: bool = True,
        noun: str | None = None,
    ) -> None:
        if num_valid is not None and num_valid < 1:
            raise ValueError(f"num_valid (L) must be >= 1, got {num_valid}")
        self.canonical = canonical
        self.extract = extract
        self.invalid_reward = invalid_reward
        self.clean = clean
        self.noun = noun
        self._echo = canonical(noun) if noun else None
        self.vocabulary: frozenset[str] | None = None
        self._check = self._build_check(validator)
        if num_valid is None and self.vocabulary is not None:
            num_valid = len(self.vocabulary)
        elif num_valid is not None and self.vocabulary is not None and num_valid < len(self.vocabulary):
            raise ValueError(f"num_valid={num_valid} is below the vocabulary size {len(self.vocabulary)}")
        self.num_valid = num_valid

    def _build_check(self, validator: Validator) -> Callable[[str], bool]:
        if isinstance(validator, (os.PathLike, str)) and _is_file(validator):
            return self._vocabulary_check(load_vocabulary(validator), source=f"file {str(validator)!r}")
        if isinstance(validator, os.PathLike):
            raise FileNotFoundError(f"vocabulary file {os.fspath(validator)!r} does not exist")
        if isinstance(validator, str):
            try:
                validator = re.compile(validator)
            except re.error as exc:
                raise ValueError(f"validator {validator!r} is neither an existing file nor a valid regex: {exc}") from exc
        if isinstance(validator, re.Pattern):
            pattern = validator
            return lambda answer: pattern.fullmatch(answer) is not None
        if callable(validator):
            return validator
        if isinstance(validator, Iterable):
            return self._vocabulary_check(validator, source="the vocabulary given")
        raise TypeError(
            f"validator of type {type(validator).__name__} is not a vocabulary, file path, regex or callable"
        )

    def _vocabulary_check(self, entries: Iterable[str], *, source: str) -> Callable[[str], bool]:
        canon = {self.canonical(str(e)) for e in entries}
        canon.discard(None)
        if not canon:
            raise ValueError(f"OpenEndedFrequencyScorer: {source} is empty; a vocabulary needs at least one answer")
        self.vocabulary = frozenset(canon)  # type: ignore[arg-type]
        vocab = self.vocabulary
        return lambda answer: answer in vocab

    def answers(self, group: Group) -> list[str | None]:
        """The canonical answer of each completion, or ``None`` when it is empty or invalid."""
        out: list[str | None] = []
        for completion in group.completions:
            text = self.extract(completion) if self.extract is not None else completion
            if self.clean and text is not None:
                text = single_answer(text, self.noun)
            answer = self.canonical(text) if text is not None else None
            out.append(answer if answer is not None and answer != self._echo and self._check(answer) else None)
        return out

    def __call__(self, group: Group) -> list[float]:
        num_valid = self.num_valid if self.num_valid is not None else len(group.completions)
        return frequency_rewards_with_L(self.answers(group), num_valid, invalid_reward=self.invalid_reward)
