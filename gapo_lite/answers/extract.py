"""The answer inside a real model's reply to an open prompt ("Name a city."), and whether it is a valid one.

A small instruct model rarely answers with the name alone: "The city I'm referring to is Nova Haven.",
"City is Dublin, Ireland", "I'm sorry for any misunderstanding but as an AI ...". :func:`extract_answer`
strips the sentence around the name; :func:`is_valid_answer` checks it against a word list when there is
one, else against a short-answer rule, so Unique@N can count distinct *valid* answers rather than distinct
sentences.
"""
from __future__ import annotations

import re
from collections.abc import Collection

from gapo_lite.answers.canonical import _answer_line, _first_clause, canonicalize

# Replies that decline or talk about the task instead of answering it.
_REFUSAL = re.compile(
    r"^(?:i'?m sorry|i am sorry|sorry\b|i apologi[sz]e|as an ai\b|i (?:can ?not|can'?t|don'?t|do not|am unable|'m unable|am not able)\b"
    r"|unfortunately\b|i'?m not (?:sure|able)\b|there (?:is|are) (?:no|many)\b|what a\b|no\s*[,.!])",
    re.IGNORECASE,
)
# Lead-ins that name the speaker's choice: "the one I'm referring to is", "I chose", "my pick is".
_CHOICE_LEAD = (
    r"(?:i'?m|i am|i was|i'?ve been|i have been) (?:referring to|thinking (?:of|about)|talking about)|i (?:have|had) in mind"
    r"|i (?:chose|picked|selected|named|mentioned)|(?:that )?comes? to mind|i(?:'d| would) (?:like to )?(?:recommend|suggest)"
)
_GENERIC_LEAD = re.compile(rf"^(?:[\w'’]+\s+){{0,5}}?(?:{_CHOICE_LEAD})\s*(?:is|would be|was)?\s*[:,\-–—]?\s*", re.IGNORECASE)
_FIRST_PERSON = re.compile(r"\b(?:i|im|ive|id|ill|me|my|you|your|we|our)\b")
_TRAILING_FILLER = re.compile(r"\s+(?:is|was|would be)\s+(?:a|an|the|my|one)\b.*$", re.IGNORECASE)


_NAME_LEAD = re.compile(
    r"^(?:(?:answer|name|response|reply|a)\s*:\s*"
    r"|(?:(?:the|my|a|an)\s+)?(?:answer|name|response)\b[^:.!?\n]{0,40}?\s(?:is|would be)\s+(?:indeed\s+|simply\s+|called\s+)?)",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"^[\"“'‘]([^\"”'’\n]{1,60})[\"”'’]")
# Words a name does not start with: what is left when a sentence was not an answer ("This is a hint.").
_NOT_A_NAME = {"this", "that", "it", "its", "there", "here", "in", "what", "which", "when", "no", "yes", "to", "as", "for", "if"}


def _noun_of(noun: str) -> re.Pattern[str]:
    """ "The City of Azura is ..." -> "Azura": a capitalised name after "<noun> of"."""
    words = r"\s+".join(re.escape(w) for w in noun.split())
    return re.compile(rf"^(?:[Tt]he\s+)?(?i:{words})\s+of\s+([A-Z][\w'’\-]*(?:\s+[A-Z][\w'’\-]*)*)")


def _noun_lead(noun: str) -> re.Pattern[str]:
    """ "The city I'm referring to is ", "City is ", "A famous city would be ", "City: " for ``noun``."""
    words = r"\s+".join(re.escape(w) for w in noun.split())
    return re.compile(
        rf"^(?:(?:the|a|an|one|my|your|some)\s+)?(?:[\w'’\-]+\s+){{0,3}}?{words}(?:\s+name)?s?\b"
        rf"(?:\s*:\s*|[^:.!?\n]{{0,40}}?\s(?:is|would be|could be|was)\b\s*(?:(?:actually|indeed|simply)\s+)?(?:(?:called|named|titled)\s+)?[:\-–—]?\s*)",
        re.IGNORECASE,
    )


def extract_answer(reply: str, noun: str | None = None) -> str | None:
    """The short answer in ``reply`` (original spelling), or ``None`` for a refusal or an empty reply.

    Takes the first line with content, drops the lead-ins :func:`~gapo_lite.answers.canonicalize` knows
    ("Sure! ", "Here's a city:") and the ones real replies use ("The city I'm referring to is", "City is",
    "I chose"), then keeps the first clause up to a comma ("Dublin, Ireland" -> "Dublin").
    """
    if not isinstance(reply, str):
        raise TypeError(f"extract_answer expects a string, got {type(reply).__name__}")
    line = _answer_line(reply)
    if line is None or _REFUSAL.match(line):
        return None
    previous = None
    while line and line != previous:
        previous = line
        line = _NAME_LEAD.sub("", line, count=1)
        if noun:
            named = _noun_of(noun).match(line)
            if named:
                return named.group(1)
            line = _noun_lead(noun).sub("", line, count=1).strip()
        line = _GENERIC_LEAD.sub("", line, count=1).strip()
        quoted = _QUOTED.match(line)
        if quoted:  # '"Kristen Bell" by Nikolai' -> 'Kristen Bell'
            return quoted.group(1).strip() or None
        stripped = _answer_line(line)
        line = stripped if stripped is not None else ""
    if not line or _REFUSAL.match(line):
        return None
    answer = re.split(r"[,:]", _first_clause(line))[0]
    answer = _TRAILING_FILLER.sub("", answer).strip(" \t\"'“”‘’*_")
    return answer or None


def is_short_answer(answer: str | None, max_words: int = 5) -> bool:
    """The rule for categories with no word list: 1 to ``max_words`` words, with a letter, no first or
    second person ("I", "my", "you"), not starting like a sentence ("This", "In"), as a name would be."""
    canonical = canonicalize(answer) if answer else None
    if not canonical:
        return False
    words = canonical.split()
    return (len(words) <= max_words and any(ch.isalpha() for ch in canonical) and not _FIRST_PERSON.search(canonical)
            and words[0] not in _NOT_A_NAME)


class CanonicalSet(frozenset):
    """A vocabulary stored in canonical form (plurals folded), canonicalised once: membership of a raw answer
    is one canonicalisation and a set look-up, which a vocabulary of 100,000 names needs."""

    def __new__(cls, items: Collection[str]) -> "CanonicalSet":
        return super().__new__(cls, (canonicalize(item, fold_plurals=True) for item in items))

    def __contains__(self, answer: object) -> bool:
        return isinstance(answer, str) and frozenset.__contains__(self, canonicalize(answer, fold_plurals=True))


def is_valid_answer(answer: str | None, vocabulary: Collection[str] | None = None, *, max_words: int = 5) -> bool:
    """True when ``answer`` is an item of ``vocabulary`` (compared in canonical form, plurals folded), or,
    with no vocabulary, passes :func:`is_short_answer`."""
    if answer is None:
        return False
    if vocabulary is None:
        return is_short_answer(answer, max_words)
    if isinstance(vocabulary, CanonicalSet):
        return answer in vocabulary
    allowed = {canonicalize(item, fold_plurals=True) for item in vocabulary}
    return canonicalize(answer, fold_plurals=True) in allowed
