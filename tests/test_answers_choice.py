"""parse_choice: which single list item a completion names."""
import pytest

from gapo_lite.answers import parse_choice

ITEMS = ["Owl", "Cat", "Sea", "Sea lion", "Red panda"]


@pytest.mark.parametrize(
    "completion, expected",
    [
        ("Owl", "Owl"),
        ("owl", "Owl"),
        ("OWL.", "Owl"),
        ('"Owl"', "Owl"),
        ("'Owl'", "Owl"),
        ("**Owl**", "Owl"),
        ("_Owl_!", "Owl"),
        ("`Owl`", "Owl"),
        ("I'll pick: Owl.", "Owl"),
        ("My choice is **cat**", "Cat"),
        ("Sea lion", "Sea lion"),
        ("sea   lion!", "Sea lion"),
        ("The sea.", "Sea"),
        ("red panda", "Red panda"),
        ("Owl, definitely Owl.", "Owl"),
    ],
)
def test_parses(completion, expected):
    assert parse_choice(completion, ITEMS) == expected


@pytest.mark.parametrize("completion", ["", "   ", "Dog", "Owl or Cat", "Sea lion and Sea", "Owlish", "Bobcat", "Catalog"])
def test_rejects(completion):
    assert parse_choice(completion, ITEMS) is None


def test_empty_items_and_bad_type():
    assert parse_choice("Owl", []) is None
    with pytest.raises(TypeError):
        parse_choice(None, ITEMS)  # type: ignore[arg-type]
