"""List-selection data: word lists, split, determinism, columns."""
import pytest

from gapo_lite.data import TEMPLATES, build_list_dataset, categories, vocabulary


def test_word_lists_size_and_split():
    train, held = categories("train"), categories("heldout")
    assert len(train) + len(held) >= 24
    assert all(len(v) >= 20 for v in {**train, **held}.values())
    assert not set(train) & set(held)
    assert {"planets_and_moons", "instruments", "books"} <= set(held)
    for items in {**train, **held}.values():
        assert len({i.lower() for i in items}) == len(items)


def test_dataset_columns_lengths_and_split():
    ds = build_list_dataset(200, split="train", seed=3)
    assert set(ds.column_names) == {"prompt", "items", "category", "prompt_id"}
    assert len(set(ds["prompt_id"])) == 200
    train = categories("train")
    for row in ds:
        assert 4 <= len(row["items"]) <= 12
        assert row["category"] in train
        assert set(row["items"]) <= set(train[row["category"]])
        assert len(set(row["items"])) == len(row["items"])
        msg = row["prompt"]
        assert msg[0]["role"] == "user" and ", ".join(row["items"]) in msg[0]["content"]
    used = {t.split("{")[0] for t in TEMPLATES}
    assert sum(any(r["prompt"][0]["content"].startswith(u) for r in ds) for u in used) >= 3


def test_heldout_split_never_mixes_and_is_deterministic():
    a = build_list_dataset(50, split="heldout", seed=7)
    b = build_list_dataset(50, split="heldout", seed=7)
    c = build_list_dataset(50, split="heldout", seed=8)
    assert a.to_list() == b.to_list()
    assert a["items"] != c["items"]
    assert set(a["category"]) <= set(categories("heldout"))


def test_lists_are_shuffled():
    ds = build_list_dataset(100, seed=0)
    src = categories("train")
    in_source_order = sum(r["items"] == [i for i in src[r["category"]] if i in r["items"]] for r in ds)
    assert in_source_order < 10


def test_vocabulary_covers_items_and_prompt_words():
    vocab = set(vocabulary())
    for items in categories("all").values():
        assert set(items) <= vocab
    assert {"Pick", "list", "Answer"} <= vocab


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_prompts": 0}, "num_prompts"),
        ({"num_prompts": 2, "min_items": 5, "max_items": 4}, "min_items"),
        ({"num_prompts": 2, "max_items": 99}, "max_items"),
        ({"num_prompts": 2, "split": "test"}, "split"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        build_list_dataset(**kwargs)


def test_eval_suites_share_the_training_wording_and_categories():
    """The evaluation suites take their wording from data/ (not a copy), and the categories a recipe keeps out
    of training are exactly those the open-ended suite validates against."""
    from gapo_lite.data.list_prompts import TEMPLATES
    from gapo_lite.data.open_prompts import ANSWER_ONLY, EVAL_SUITE_OVERLAP
    from gapo_lite.eval.list_suite import DEFAULT_TEMPLATE
    from gapo_lite.eval.open_suite import SUFFIX, WORD_LISTS

    assert DEFAULT_TEMPLATE == TEMPLATES[0] and SUFFIX == ANSWER_ONLY
    assert set(EVAL_SUITE_OVERLAP) == set(WORD_LISTS.values())
