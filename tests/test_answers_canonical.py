"""canonicalize: one spelling per short answer."""
import pytest

from gapo_lite.answers.canonical import canonicalize, fold_plural


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Paris", "paris"),
        ("PARIS", "paris"),
        ("Paris.", "paris"),
        ("**Paris**", "paris"),
        ("__Paris__", "paris"),
        ("`Paris`", "paris"),
        ('"Paris"', "paris"),
        ("“Paris”", "paris"),
        ("'Paris'", "paris"),
        ("  Paris  ", "paris"),
        ("New   York", "new york"),
        ("New\tYork City", "new york city"),
        ("The Beatles", "beatles"),
        ("the eiffel tower", "eiffel tower"),
        ("A dog", "dog"),
        ("An owl", "owl"),
        ("Theodore", "theodore"),  # 'the' only as a whole word
        ("Anna", "anna"),
        ("Sure! Paris", "paris"),
        ("Sure, Paris.", "paris"),
        ("Okay! London", "london"),
        ("Certainly! Rome", "rome"),
        ("Of course! Tokyo", "tokyo"),
        ("Here's a city: Lima", "lima"),
        ("Here is one: Oslo", "oslo"),
        ("Answer: Cairo", "cairo"),
        ("My answer is Kyiv.", "kyiv"),
        ("I'd say Berlin.", "berlin"),
        ("I choose Madrid", "madrid"),
        ("I'll go with Vienna!", "vienna"),
        ("How about Dublin?", "dublin"),
        ("Sure! Here's a city:\n\nTokyo", "tokyo"),
        ("Tokyo\nIt is the capital of Japan.", "tokyo"),
        ("\n\n  Tokyo  \n", "tokyo"),
        ("1. Tokyo", "tokyo"),
        ("- Tokyo", "tokyo"),
        ("# Tokyo", "tokyo"),
        ("Tokyo. It is big.", "tokyo"),
        ("Paris - the city of light", "paris"),
        ("Paris — the city of light", "paris"),
        ("New York (USA)", "new york"),
        ("St. Louis", "st louis"),
        ("Mt. Everest", "mt everest"),
        ("J. K. Rowling", "j k rowling"),
        ("Spider-Man", "spider man"),
        ("Spider Man", "spider man"),
        ("McDonald's", "mcdonalds"),
        ("São Paulo", "sao paulo"),
        ("Zürich", "zurich"),
        ("東京", "東京"),
        ("Great Britain", "great britain"),  # an interjection word without punctuation is part of the answer
        ("Well, Wellington", "wellington"),
    ],
)
def test_canonicalize(text, expected):
    assert canonicalize(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "\n\n", "...", "**", "Sure!", "Here's a city:", "\"\""])
def test_nothing_left_is_none(text):
    assert canonicalize(text) is None


def test_same_answer_many_spellings_collapse():
    spellings = ["Paris", "paris.", "**Paris**", "Sure! Paris", "Here's a city: Paris!", "\"Paris\"", "1. Paris\n2. Lyon"]
    assert {canonicalize(s) for s in spellings} == {"paris"}


def test_fold_plurals_is_opt_in():
    assert canonicalize("Cats") == "cats"
    assert canonicalize("Cats", fold_plurals=True) == "cat"
    assert canonicalize("Red Pandas", fold_plurals=True) == "red panda"
    assert canonicalize("the Foxes.", fold_plurals=True) == "fox"


@pytest.mark.parametrize(
    "word, singular",
    [
        ("cats", "cat"), ("foxes", "fox"), ("boxes", "box"), ("churches", "church"), ("dishes", "dish"),
        ("glasses", "glass"), ("berries", "berry"), ("puppies", "puppy"), ("mice", "mouse"), ("geese", "goose"),
        ("wolves", "wolf"), ("glass", "glass"), ("cactus", "cactus"), ("paris", "paris"), ("gas", "gas"),
        ("dog", "dog"), ("ties", "tie"), ("pies", "pie"),
    ],
)
def test_fold_plural(word, singular):
    assert fold_plural(word) == singular


def test_accent_folding_can_be_turned_off():
    assert canonicalize("São Paulo", fold_accents=False) == "são paulo"


def test_rejects_non_string():
    with pytest.raises(TypeError, match="string"):
        canonicalize(None)  # type: ignore[arg-type]
