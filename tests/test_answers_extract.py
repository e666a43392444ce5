"""``extract_answer`` / ``is_valid_answer`` and the open suite's valid Unique@N, on replies written like
SmolLM2-135M-Instruct's (hand-written expected answers)."""
from __future__ import annotations

import pytest

from gapo_lite.answers.extract import extract_answer, is_short_answer, is_valid_answer
from gapo_lite.eval.open_suite import score_answers

CITIES = ["Paris", "London", "Dublin", "Istanbul", "New York City"]


@pytest.mark.parametrize(
    ("reply", "noun", "expected"),
    [
        ("The city I'm referring to is Nova Haven.", "city", "Nova Haven"),
        ("City is Dublin, Ireland", "city", "Dublin"),
        ("The city I mentioned is Istanbul, Turkey.", "city", "Istanbul"),
        ("Here's a possible answer: New York City, New York\n\nThis is", "city", "New York City"),
        ("The City of Azura is a fictional world in the Fallout universe created by", "city", "Azura"),
        ("The country I'm thinking of is Japan.", "country", "Japan"),
        ("A famous celebrity is Tom Hanks.", "celebrity", "Tom Hanks"),
        ("My favorite animal is the red panda.", "animal", "the red panda"),
        ("I chose Canada.", "country", "Canada"),
        ("The colour I'd choose is blue.", "colour", "blue"),
        ("Name: Emma", "first name", "Emma"),
        ("Sure! **Paris.**", None, "Paris"),
        ("Paris", "city", "Paris"),
        ("1000000000", "city", "1000000000"),
        ("I'm sorry for any misunderstanding but as an", "country", None),
        ("As an AI, I don't have personal preferences.", "food", None),
        ("What a perceptive one. It's a perfect example of the power of human", "city", None),
        ("", "city", None),
        # from `gapo-lite eval --suite open --n 20` on SmolLM2-135M-Instruct
        ("The name is Sarah, but that's not correct. The correct name is Sarah", "first name", "Sarah"),
        ("No, I'm sorry for the misunderstanding. I'm here to help you craft", "first name", None),
        ("A: Suspect\nWhat is a first name in a world of multiple names", "first name", "Suspect"),
        ('Claire Kasper: A self-proclaimed "celebrity" in', "celebrity", "Claire Kasper"),
        ('The answer to this question is "Kristen Bell" by Nikolai', "celebrity", "Kristen Bell"),
        ('The name of a profession is "Dharma-hacker" but not', "profession", "Dharma-hacker"),
        ('The film I\'m referring to is "Top Gear" is a 20', "movie", "Top Gear"),
        ("Movie: 3D Surf (2019)", "movie", "3D Surf"),
        ("The sport you're referring to is called rugby football (Rugby Union)", "sport", "rugby football"),
        ("The city I am referring to is Cape Town, South Africa.", "city", "Cape Town"),
        ("A colour: red", "colour", "red"),
        ("The movie is actually titled The Big Sleep.", "movie", "The Big Sleep"),
    ],
)
def test_extract_answer_from_real_looking_replies(reply, noun, expected):
    assert extract_answer(reply, noun) == expected


def test_validity_by_word_list_or_short_answer_rule():
    assert is_valid_answer("Dublin", CITIES) and is_valid_answer("new york city", CITIES)
    assert not is_valid_answer("Nova Haven", CITIES)  # a closed list: not in it, not valid
    assert not is_valid_answer(None, CITIES) and not is_valid_answer(None)
    assert is_valid_answer("Tom Hanks") and is_short_answer("Nova Haven")
    assert not is_short_answer("1000000000")  # no letter
    assert not is_short_answer("a fictional world in the Fallout universe")  # a phrase, not a name
    assert not is_short_answer("my favourite")  # first person
    assert not is_short_answer("This") and not is_short_answer("In this case")  # what is left of a sentence
    assert is_short_answer("The Night of the Elgar Miners")  # five words: a title still counts
    with pytest.raises(TypeError):
        extract_answer(None)  # type: ignore[arg-type]


def test_valid_unique_at_n_counts_answers_not_sentences():
    replies = [
        "The city I'm referring to is Dublin.",
        "City is Dublin, Ireland",
        "Dublin",
        "The city I'm referring to is Nova Haven.",
        "I'm sorry for any misunderstanding but as an AI",
        "1000000000",
        "Istanbul.",
        "London",
    ]
    r = score_answers(replies, noun="city", vocabulary=CITIES, clean=False)  # the first answer found counts
    assert r["unique"] == 8 and r["answer_rate"] == 1.0  # raw: every sentence is its own "answer"
    assert r["valid"] == ["dublin", "dublin", "dublin", None, None, None, "istanbul", "london"]
    assert r["unique_valid"] == 3 and r["valid_rate"] == pytest.approx(5 / 8)
    assert r["top_valid"][0] == {"answer": "dublin", "count": 3, "share": 3 / 8}
    assert r["validator"] == "word list (5 items)"
    short = score_answers(replies, noun="city", clean=False)  # no word list: Nova Haven is a valid name
    assert short["unique_valid"] == 4 and short["validator"] == "short answer"
    # The clean rule: "Dublin, Ireland" carries more than the answer; the lenient figure is kept beside it.
    clean = score_answers(replies, noun="city", vocabulary=CITIES)
    assert clean["valid"] == ["dublin", None, "dublin", None, None, None, "istanbul", "london"]
    assert clean["valid_rate"] == pytest.approx(4 / 8) and clean["lenient_valid_rate"] == pytest.approx(5 / 8)
    assert clean["lenient_unique_valid"] == 3 and "end_rate" not in clean  # no end flags given: all taken as ended
    cut = score_answers(replies, noun="city", vocabulary=CITIES, ended=[True, True, False, True, True, True, True, False])
    assert cut["valid"] == ["dublin", None, None, None, None, None, "istanbul", None] and cut["end_rate"] == pytest.approx(6 / 8)
