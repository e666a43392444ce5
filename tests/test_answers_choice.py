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


# Replies sampled from SmolLM2-135M-Instruct by `gapo-lite eval --suite lists --n 100` (held-out lists),
# with the answer a reader gives them.
REAL = [
    (["Othello", "Macbeth", "Dracula", "Hamlet", "Pinocchio", "Dune"], "Othello, not Macbeth, not Dracula, not Hamlet, not Pinocchio.", "Othello"),
    (["Callisto", "Enceladus", "Triton", "Charon"], "Callisto is a planetoid, not Enceladus.", "Callisto"),
    (["Midge", "Grasshopper", "Firefly", "Hornet"], "Midge, not a grasshopper.", "Midge"),
    (["Midge", "Grasshopper", "Firefly", "Hornet"], "The item I am examining is a Cucurbita Cucurba, not a firefly.", None),
    (["Dune", "Othello", "Atonement", "Hamlet"], "No, I am not a Dune, I am simply a fish.", None),
    (["Dune", "Othello", "Atonement", "Hamlet"], "In this case, the item is not Dune, Othello, Atonement, Hamlet", None),
    (["Midge", "Hornet", "Flea"], "Midge, Midge, Midge, Midge, Midge, Hornet, Hornet, Hornet,", None),
    (["Midge", "Hornet", "Flea"], "The item you are referring to is a flea.", "Flea"),
    (["Belt", "Hat", "Socks", "Hoodie"], "The item you are looking for is a hat.", "Hat"),
    (["Belt", "Hat", "Socks", "Hoodie"], "Hats.", "Hat"),
    (["Belt", "Hat", "Socks", "Hoodie"], "Belt, Trousers, Socks, Hat, Sweater, Hats, Hats, Hats,", None),
    (["Tuba", "Flute", "Mandolin"], "A) Flute\nYou are correct, I placed the item from the specified list at random.", "Flute"),
    (["Tuba", "Flute", "Mandolin"], "1. Mandolin\n2. Tuba\n3. Flute", None),
    (["Cumin", "Sage", "Basil"], "Cumin, Sage, or Basil.", None),
]


@pytest.mark.parametrize("items, completion, expected", REAL)
def test_real_replies(items, completion, expected):
    assert parse_choice(completion, items) == expected


def test_plural_maps_back_to_the_listed_spelling():
    assert parse_choice("boxes", ["Box", "Axe"]) == "Box"
    assert parse_choice("two axes", ["Box", "Axe"]) == "Axe"
    assert parse_choice("Sea lions!", ITEMS) == "Sea lion"
