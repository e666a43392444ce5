"""``parse_choice``: which single list item a completion chose."""
from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

_DECORATION = re.compile(r"[*_`~\"“”‘’]|(?<!\w)'|'(?!\w)")
# A mention ruled out by the reply itself: "Othello, not Macbeth", "anything except the Owl".
_NEGATION = r"(?:not|never|except|excluding|rather\s+than|instead\s+of)\s+(?:(?:a|an|the)\s+)?"


@lru_cache(maxsize=4096)
def _item_patterns(items: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(any item, optionally plural; an item right after a negation). Longest first, so that at any
    position "sea lion" wins over "sea"."""
    alternatives = sorted({i.strip() for i in items if i.strip()}, key=len, reverse=True)
    body = "|".join(r"\s+".join(re.escape(w) for w in item.split()) for item in alternatives)
    mention = rf"(?<!\w)(?:{body})(?:e?s)?(?!\w)"
    return re.compile(mention, re.IGNORECASE), re.compile(rf"(?<!\w){_NEGATION}{mention}", re.IGNORECASE)


def _listed(found: str, canonical: dict[str, str]) -> str | None:
    """The listed item a matched mention stands for: itself, or its singular ("hats" -> "hat", "boxes" -> "box")."""
    for cut in (0, 1, 2):
        key = found[: len(found) - cut] if cut else found
        if key in canonical:
            return canonical[key]
    return None


def parse_choice(completion: str, items: Sequence[str]) -> str | None:
    """The one item of ``items`` named in ``completion``, in its listed spelling; ``None`` if none or several.

    Tolerates case, quotes, markdown emphasis, trailing punctuation, a lead-in ("I'll pick: Owl."), a
    plural ("Owls") and repeats ("Owl, Owl"); a mention the reply rules out ("Othello, not Macbeth",
    "not Dune") does not count. When items contain each other ("Sea" / "Sea lion") the longer match wins.
    """
    if not isinstance(completion, str):
        raise TypeError(f"completion must be a string, got {type(completion).__name__}")
    if not items:
        return None
    canonical = {" ".join(i.split()).lower(): i for i in items}
    mention, negated = _item_patterns(tuple(items))
    text = negated.sub(" ", _DECORATION.sub(" ", completion))
    found = {_listed(" ".join(m.group(0).split()).lower(), canonical) for m in mention.finditer(text)}
    found.discard(None)
    if len(found) != 1:
        return None
    return found.pop()
