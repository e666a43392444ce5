"""``canonicalize``: one spelling per answer, so that "**Paris.**", "Sure! Paris" and "paris" count as one.

Used by Unique@N on open-ended prompts and by the open-ended scorers, which compare short free-text answers.
"""
from __future__ import annotations

import re
import unicodedata

# Lead-ins removed from the start of a line (applied repeatedly, case-insensitive).
_LEAD_INS = [
    r"(?:sure|okay|ok|certainly|of course|absolutely|alright|all right|great|well|hmm+|yes|fine)\s*[,!.:;…\-–—]+\s*",
    r"here(?:'s| is| are|’s)\b[^:\n]*:\s*",
    r"how about\s+",
    r"(?:my |the |final )*answer(?:\s+is\b|\s*:)\s*",
    r"i(?:'d|’d| would| will|'ll|’ll)?\s+(?:say|choose|pick|go with|name|suggest)\b[\s:\-–—]*",
    r"let(?:'s|’s| me)\s+(?:go with|say|pick|choose)\b[\s:\-–—]*",
]
_LEAD_IN = re.compile(r"^(?:" + "|".join(_LEAD_INS) + r")", re.IGNORECASE)
_LIST_MARKER = re.compile(r"^\s*(?:[-*+•>#]+|\d+[.)])\s+")
_MARKDOWN = re.compile(r"[*_`~#]+")
_QUOTES = "\"'“”‘’«»„‚‹›"
# Where a short answer stops: a spaced dash, an opening parenthesis or a sentence end (checked by _first_clause).
_CLAUSE_END = re.compile(r"\s+[-–—]\s+|\s*\(|[.!?;…](?=\s|$)")
_ABBREVIATIONS = {"st", "mt", "ft", "dr", "mr", "mrs", "ms", "jr", "sr", "prof", "gen", "col", "sgt", "rev", "vs", "no", "co"}
_ARTICLE = re.compile(r"^(?:a|an|the)\s+")
_IRREGULAR_PLURALS = {
    "mice": "mouse", "geese": "goose", "people": "person", "children": "child", "men": "man", "women": "woman",
    "teeth": "tooth", "feet": "foot", "oxen": "ox", "wolves": "wolf", "knives": "knife", "leaves": "leaf",
    "loaves": "loaf", "halves": "half", "wives": "wife", "lives": "life", "cacti": "cactus", "fungi": "fungus",
}


def _fold_accents(text: str) -> str:
    """Drop accents from Latin letters ("São" -> "Sao"); other scripts keep their marks."""
    out: list[str] = []
    for ch in unicodedata.normalize("NFKD", text):
        if unicodedata.combining(ch) and out and out[-1].isascii():
            continue
        out.append(ch)
    return unicodedata.normalize("NFKC", "".join(out))


def _strip_punctuation(text: str) -> str:
    """Apostrophes vanish ("McDonald's" -> "McDonalds"); every other punctuation mark or symbol becomes a space."""
    chars: list[str] = []
    for ch in text:
        if ch in "'’‘`":
            continue
        category = unicodedata.category(ch)
        chars.append(" " if category[0] in "PS" else ch)
    return "".join(chars)


def fold_plural(word: str) -> str:
    """A simple English singular for one lowercase word: cats -> cat, foxes -> fox, berries -> berry, mice -> mouse.

    Words ending in -ss, -us, -is or shorter than four letters are left alone ("glass", "cactus", "paris", "gas").
    """
    if word in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[word]
    if len(word) < 4 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _answer_line(text: str) -> str | None:
    """The first line that still has a letter or digit once lead-ins and list markers are removed."""
    for line in text.splitlines():
        line = line.strip()
        previous = None
        while line and line != previous:
            previous = line
            line = _LIST_MARKER.sub("", line)
            line = _MARKDOWN.sub("", line).strip().strip(_QUOTES).strip()
            line = _LEAD_IN.sub("", line).strip()
        if any(ch.isalnum() for ch in line):
            return line
    return None


def _first_clause(line: str) -> str:
    """``line`` up to its first clause end; a dot after an initial ("J. K.") or an abbreviation ("St.") is no end."""
    for match in _CLAUSE_END.finditer(line):
        if match.start() == 0:
            continue
        if match.group(0) == ".":
            words = line[: match.start()].split()
            before = words[-1].lower().strip(_QUOTES) if words else ""
            if len(before) == 1 or before in _ABBREVIATIONS:
                continue
        return line[: match.start()]
    return line


def canonicalize(text: str, *, fold_plurals: bool = False, fold_accents: bool = True) -> str | None:
    """The canonical form of a short answer, or ``None`` when nothing is left.

    Steps: take the first line with content; remove lead-ins ("Sure! ", "Here's a city:", "I'd say",
    "Answer:"), list markers, markdown and quotes; keep the first clause (stop at " - ", "(", or a sentence end
    that is not an abbreviation like "St."); fold accents on Latin letters; lowercase; apostrophes vanish and
    other punctuation becomes spaces; drop one leading article (a/an/the); collapse spaces. With
    ``fold_plurals`` the last word is made singular by :func:`fold_plural` ("Red Pandas" -> "red panda").
    """
    if not isinstance(text, str):
        raise TypeError(f"canonicalize expects a string, got {type(text).__name__}")
    line = _answer_line(text)
    if line is None:
        return None
    line = _first_clause(line)
    if fold_accents:
        line = _fold_accents(line)
    line = " ".join(_strip_punctuation(line.lower()).split())
    line = _ARTICLE.sub("", line)
    if not line:
        return None
    if fold_plurals:
        words = line.split()
        words[-1] = fold_plural(words[-1])
        line = " ".join(words)
    return line


def canonical_answer(text: str) -> str | None:
    """The open-ended scorers' default canonical form: :func:`canonicalize` with plurals folded
    ("Sure! The Red Pandas." -> "red panda"); ``None`` when nothing is left."""
    return canonicalize(text, fold_plurals=True)
