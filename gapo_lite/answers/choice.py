"""``parse_choice``: which single list item a completion chose."""
from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

_DECORATION = re.compile(r"[*_`~\"“”‘’]|(?<!\w)'|'(?!\w)")


@lru_cache(maxsize=4096)
def _item_pattern(items: tuple[str, ...]) -> re.Pattern[str]:
    # Longest first, so that at any position "sea lion" wins over "sea".
    alternatives = sorted({i.strip() for i in items if i.strip()}, key=len, reverse=True)
    body = "|".join(r"\s+".join(re.escape(w) for w in item.split()) for item in alternatives)
    return re.compile(rf"(?<!\w)(?:{body})(?!\w)", re.IGNORECASE)


def parse_choice(completion: str, items: Sequence[str]) -> str | None:
    """The one item of ``items`` named in ``completion``, in its listed spelling; ``None`` if none or several.

    Tolerates case, quotes, markdown emphasis, trailing punctuation and a lead-in ("I'll pick: Owl.").
    When items contain each other ("Sea" / "Sea lion") the longer match wins.
    """
    if not isinstance(completion, str):
        raise TypeError(f"completion must be a string, got {type(completion).__name__}")
    if not items:
        return None
    canonical = {" ".join(i.split()).lower(): i for i in items}
    text = _DECORATION.sub(" ", completion)
    found = {" ".join(m.group(0).split()).lower() for m in _item_pattern(tuple(items)).finditer(text)}
    if len(found) != 1:
        return None
    return canonical[found.pop()]
