"""WordNet's nouns as open vocabularies: the builder (scripts/build_open_vocab.py), the shipped file, the
eval's "wordnet" validator and the mixed arm's reward over them (TrainConfig.open_vocabulary)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from gapo_lite.data.open_prompts import OPEN_VOCAB_FILE, category_vocabularies, open_vocabulary, vocabularies
from gapo_lite.eval import open_suite

ROOT = Path(__file__).resolve().parents[1]


def builder():
    spec = importlib.util.spec_from_file_location("build_open_vocab", ROOT / "scripts" / "build_open_vocab.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fake_wordnet(folder: Path) -> Path:
    """A WordNet in miniature, in the files' own format: animal > dog > puppy, animal ~i Laika (an instance), cat."""
    lines = [
        "  1 This software and database is being provided to you",  # the license header, skipped
        "00000001 03 n 02 animal 0 beast 0 003 ~ 00000002 n 0000 ~ 00000004 n 0000 ~i 00000005 n 0000 | a living organism",
        "00000002 05 n 01 dog 0 002 @ 00000001 n 0000 ~ 00000003 n 0000 | a domestic animal",
        "00000003 05 n 01 puppy(a) 0 001 @ 00000002 n 0000 | a young dog",
        "00000004 05 n 01 house_cat 0 001 @ 00000001 n 0000 | a cat",
        "00000005 18 n 01 Laika 0 001 @i 00000001 n 0000 | the first dog in orbit",
    ]
    (folder / "data.noun").write_text("\n".join(lines) + "\n", encoding="latin-1")
    (folder / "index.noun").write_text("  1 license\nanimal n 1 2 @ ~ 1 1 00000001  \ndog n 1 2 @ ~ 1 1 00000002  \n", encoding="latin-1")
    (folder / "LICENSE").write_text("WordNet Release 3.0 (test copy)\n")
    return folder


def test_builder_follows_hyponyms_down_and_leaves_instances_out(tmp_path, monkeypatch):
    module = builder()
    monkeypatch.setattr(module, "ROOTS", {"animals": [("animal", 1)], "dogs": [("dog", 1)]})
    built = module.build(fake_wordnet(tmp_path))
    assert built["categories"]["animals"] == ["dog", "house cat", "puppy"]  # not the root ("animal", "beast"), not "Laika"; "puppy(a)" read as "puppy"
    assert built["categories"]["dogs"] == ["puppy"]
    assert built["roots"] == {"animals": ["animal.n.01"], "dogs": ["dog.n.01"]}
    assert built["license"].startswith("WordNet Release 3.0")  # the license travels with the nouns


def test_builder_refuses_a_folder_without_wordnet_in_one_line(tmp_path, capsys):
    module = builder()
    with pytest.raises(SystemExit) as exc:
        import sys

        argv, sys.argv = sys.argv, ["build_open_vocab.py", str(tmp_path)]
        try:
            module.main()
        finally:
            sys.argv = argv
    assert exc.value.code == 2
    assert "holds no data.noun, index.noun, LICENSE" in capsys.readouterr().err


def test_the_shipped_file_is_the_builders_and_carries_the_license():
    shipped = json.loads(OPEN_VOCAB_FILE.read_text())
    roots = {c: [f"{lemma}.n.{sense:02d}" for lemma, sense in r] for c, r in builder().ROOTS.items()}
    assert shipped["roots"] == roots and set(shipped["categories"]) == set(roots)
    assert "Copyright 2006 by Princeton University" in shipped["license"]
    assert OPEN_VOCAB_FILE.stat().st_size < 1_000_000  # a data file of the repo stays small
    assert set(shipped["categories"]) <= set(vocabularies("all"))  # each one a category of the word lists


def test_open_vocabulary_keeps_the_word_list_and_adds_real_nouns():
    fruits, words = open_vocabulary("fruits"), vocabularies("all")["fruits"]
    assert list(fruits[: len(words)]) == words and len(fruits) > 10 * len(words)
    assert {"mango", "papaya", "durian"} <= set(fruits)
    assert open_vocabulary("numbers") == tuple(vocabularies("all")["numbers"])  # no WordNet roots: the word list alone
    with pytest.raises(KeyError, match="unknown category 'dragons'"):
        open_vocabulary("dragons")
    with pytest.raises(ValueError, match="vocabulary must be one of"):
        category_vocabularies(["fruits"], "everything")


def test_the_wordnet_validator_counts_real_animals_the_word_list_misses():
    replies = {"animal": ["Snake", "Shark", "Lion", "Aardavus", "The African Elephant"], "movie": ["Titanic"]}
    by_words = open_suite.score_open(replies, open_suite.PROMPTS, validator="word_lists")
    by_wordnet = open_suite.score_open(replies, open_suite.PROMPTS, validator="wordnet")
    assert by_words["prompts"]["animal"]["unique_valid"] == 1  # Lion ("Elephant" is on the list, "African elephant" is not)
    assert by_wordnet["prompts"]["animal"]["unique_valid"] == 4  # and Snake, Shark, African elephant; not the made-up "Aardavus"
    assert open_suite.vocabulary_for("movie", "wordnet") is None  # no vocabulary: the short-answer rule, as before
    assert "Snake" in open_suite.vocabulary_for("animal", "wordnet") and "Snake" not in open_suite.vocabulary_for("animal", "open")


def test_the_mixed_reward_pays_a_real_fruit_outside_the_list_only_with_wordnet():
    from gapo_lite.rewards import Group
    from gapo_lite.training.config import TrainConfig
    from gapo_lite.training.trainer import make_scorer

    group = Group(key="p", prompt="Name a fruit.", completions=["Durian", "Durian", "Apple", "Jackfruit", "Dragon"], columns={"task": "open", "category": "fruits"})
    rewards = {v: make_scorer(TrainConfig(model="x", open_share=0.5, invalid_reward=0.0, open_vocabulary=v))(group) for v in ("word_lists", "wordnet")}
    assert rewards["word_lists"][3] == 0.0 and rewards["word_lists"][0] == 0.0 < rewards["word_lists"][2]  # of the three only Apple is on the list
    assert rewards["wordnet"][3] > rewards["wordnet"][0] > 0.0  # all three fruits; the rarer pays more
    assert rewards["wordnet"][4] == 0.0  # "Dragon" is no fruit either way
    with pytest.raises(ValueError, match="TrainConfig.open_vocabulary must be one of"):
        TrainConfig(model="x", open_vocabulary="open")


def test_the_lab_records_which_vocabulary_its_open_prompts_trained_on(tmp_path):
    from gapo_lite.demo.stages import RLRun
    from lab.smollm2 import SmolSettings, rl_config

    assert SmolSettings().open_vocabulary == "word_lists"  # the recorded runs' rule, so their commands still reproduce them
    config = rl_config(SmolSettings(open_share=0.5, open_vocabulary="wordnet"), tmp_path, tmp_path / "gapo", RLRun("gapo", "gapo"))
    assert config.open_vocabulary == "wordnet" and config.open_share == 0.5
    with pytest.raises(ValueError, match="open_vocabulary must be one of"):
        SmolSettings(open_vocabulary="nouns")



def test_the_category_itself_is_no_answer():
    """A model trained with "food" in the food vocabulary learned to answer "Name a food." with "Food": the builder
    leaves the roots' own lemmas out, and the clean rule counts the prompt's noun as no answer."""
    from gapo_lite.eval.vocab import wordnet_vocabulary

    assert "food" not in wordnet_vocabulary("foods") and "pizza" in wordnet_vocabulary("foods")
    assert "animal" not in wordnet_vocabulary("animals") and "colour" not in wordnet_vocabulary("colors")
    assert "fruit" not in open_vocabulary("fruits") and "beverage" not in open_vocabulary("drinks")
    replies = {"first_name": ["First name", "Anna", "first names"], "food": ["Food", "Pizza"], "celebrity": ["Celebrity", "Madonna"]}
    clean = open_suite.score_open(replies, open_suite.PROMPTS, validator="wordnet")
    assert {k: clean["prompts"][k]["unique_valid"] for k in replies} == {"first_name": 1, "food": 1, "celebrity": 1}
    lenient = open_suite.score_open(replies, open_suite.PROMPTS, validator="wordnet", clean=False)
    assert lenient["prompts"]["celebrity"]["unique_valid"] == 2  # the records made before keep their rule
