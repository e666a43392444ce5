"""Beyond the paper: open-ended data, the scorers and the three recipes that use them."""
from __future__ import annotations

import pytest

from gapo_lite.data.gsm8k import gsm8k_rows
from gapo_lite.data.open_prompts import (
    EVAL_SUITE_OVERLAP,
    build_open_ended_dataset,
    open_prompt,
    prompt_words,
    vocabularies,
)
from gapo_lite.rewards import AccuracyDiversityScorer, CategoryScorer, Group, OpenEndedFrequencyScorer, SemanticScorer, open_ended_scorer

# ---------------------------------------------------------------- open-ended data


def test_open_prompt_articles_and_nouns():
    assert open_prompt("animals") == "Name an animal."
    assert open_prompt("fruits") == "Name a fruit."
    assert open_prompt("furniture", suffix=" Answer with the name only.") == "Name a piece of furniture. Answer with the name only."
    assert open_prompt("instruments") == "Name a musical instrument."
    with pytest.raises(KeyError, match="no singular noun"):
        open_prompt("dinosaurs")


def test_every_category_has_a_noun_and_prompt_words_cover_items():
    words = set(prompt_words("all"))
    for category, items in vocabularies("all").items():
        open_prompt(category)
        assert set(items) <= words
    assert {"Name", "a", "an", "fruit", "piece", "of"} <= words


def test_open_ended_dataset_balanced_and_unique_ids():
    ds = build_open_ended_dataset(45, split="train", seed=3)
    assert set(ds.column_names) == {"prompt", "category", "prompt_id"}
    assert len(set(ds["prompt_id"])) == 45
    counts = {c: ds["category"].count(c) for c in set(ds["category"])}
    assert len(counts) == 20 and set(counts.values()) <= {2, 3}  # 45 rows over 20 categories: two full passes + 5
    row = ds[0]
    assert row["prompt"][0]["content"] == open_prompt(row["category"])
    assert build_open_ended_dataset(45, split="train", seed=3)["category"] == ds["category"]  # deterministic
    with pytest.raises(ValueError, match="not in split 'train'"):
        build_open_ended_dataset(4, split="train", names=["planets_and_moons"])


def test_category_scorer_hand_computed():
    scorer = open_ended_scorer("train")
    group = Group("g", None, ["Apple", "Sure! Apples.", "Banana", "Dragonfruit"], {"category": "fruits"})
    assert scorer.answers(group) == ["apple", "apple", "banana", None]
    L = 24  # fruits has 24 items
    expected = [1 - 2 / 3 + 1 / L, 1 - 2 / 3 + 1 / L, 1 - 1 / 3 + 1 / L, -1.0]
    assert scorer(group) == pytest.approx(expected)
    # the same answer is invalid for another category's prompt
    assert scorer.answers(Group("h", None, ["Apple"], {"category": "birds"})) == [None]
    with pytest.raises(KeyError, match="no vocabulary for category 'instruments'"):
        scorer(Group("x", None, ["Piano"], {"category": "instruments"}))
    with pytest.raises(KeyError, match="needs the dataset column 'category'"):
        scorer(Group("x", None, ["Apple"], {}))
    with pytest.raises(ValueError, match="at least one category"):
        CategoryScorer({})


# ---------------------------------------------------------------- arithmetic data


def test_gsm8k_rows():
    rows = gsm8k_rows([{"question": "Tom has 3 apples and buys 4. How many?", "answer": "3 + 4 = 7\n#### 7"}])
    assert rows[0]["prompt"][-1] == {"role": "user", "content": "Tom has 3 apples and buys 4. How many?"}
    assert rows[0]["prompt"][0]["role"] == "system" and "####" in rows[0]["prompt"][0]["content"]
    assert rows[0]["answer"] == "3 + 4 = 7\n#### 7" and rows[0]["prompt_id"] == "gsm8k-train-00000"
    with pytest.raises(KeyError, match="lacks 'question' or 'answer'"):
        gsm8k_rows([{"question": "x"}])


# ---------------------------------------------------------------- recipes


def _check_gpu_config(config, output_dir):
    assert config.model == "Qwen/Qwen2.5-7B-Instruct"
    assert config.backend == "auto" and config.load_in_4bit and config.use_lora
    assert config.num_generations == 32 and config.prompts_per_step == 8 and config.learning_rate == 1e-5
    assert config.output_dir == output_dir


def _check_rows(dataset, config, extra=()):
    assert {"prompt", "prompt_id", *extra} <= set(dataset.column_names)
    assert len(set(dataset["prompt_id"])) == len(dataset) >= config.prompts_per_step
    assert dataset[0]["prompt"][-1]["role"] == "user"


def test_recipe_open_ended_names():
    from gapo_lite.training.recipes import load_recipe_file

    recipe = load_recipe_file("open_ended_names")
    recipe.scorer, recipe.train_dataset = recipe.build("scorer"), recipe.build("train_dataset")
    _check_gpu_config(recipe.config, "runs/open_ended_names")
    _check_rows(recipe.train_dataset, recipe.config, extra=("category",))
    trained = set(recipe.train_dataset["category"])
    assert trained == set(recipe.scorer.scorers)
    assert not trained & set(EVAL_SUITE_OVERLAP) and "numbers" not in trained and len(trained) == 12
    assert all(isinstance(s, OpenEndedFrequencyScorer) for s in recipe.scorer.scorers.values())
    row = recipe.train_dataset[0]
    assert row["prompt"][0]["content"].endswith("Answer with the name only.")
    first = vocabularies("train")[row["category"]][0]
    rewards = recipe.scorer(Group("g", row["prompt"], [first, first, "zzz"], {"category": row["category"]}))
    assert rewards[2] == -1.0 and rewards[0] == rewards[1] > 0


def test_recipe_semantic_creative():
    from gapo_lite.eval.creative import TASKS
    from gapo_lite.training.recipes import load_recipe_file

    recipe = load_recipe_file("semantic_creative")
    recipe.scorer, recipe.train_dataset = recipe.build("scorer"), recipe.build("train_dataset")
    _check_gpu_config(recipe.config, "runs/semantic_creative")
    _check_rows(recipe.train_dataset, recipe.config)
    assert isinstance(recipe.scorer, SemanticScorer)
    assert recipe.scorer.clusterer.threshold == 0.85 and recipe.scorer.max_chars == 400
    prompts = {r[0]["content"] for r in recipe.train_dataset["prompt"]}
    assert len(prompts) == 16 and not prompts & set(TASKS.values())  # the eval suite's tasks stay unseen
    assert not recipe.scorer.is_valid("") and not recipe.scorer.is_valid("x" * 401)


def test_recipe_gsm8k_accuracy_diversity(monkeypatch):
    import datasets

    from gapo_lite.training.recipes import load_recipe_file

    calls = []
    fake = datasets.Dataset.from_list([{"question": f"What is {i} + 1?", "answer": f"{i} + 1 = {i + 1}\n#### {i + 1}"} for i in range(30)])

    def load_dataset(name, config_name, split):
        calls.append((name, config_name, split))
        return fake

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    recipe = load_recipe_file("gsm8k_accuracy_diversity")
    assert calls == []  # nothing is downloaded before the final config is known
    recipe.scorer, recipe.train_dataset = recipe.build("scorer"), recipe.build("train_dataset")
    assert calls == [("openai/gsm8k", "main", "train")]
    _check_gpu_config(recipe.config, "runs/gsm8k_accuracy_diversity")
    assert recipe.config.max_completion_length >= 256
    _check_rows(recipe.train_dataset, recipe.config, extra=("answer",))
    assert len(recipe.train_dataset) == 30  # limit = max_steps * prompts_per_step = 2400 > 30 rows
    assert isinstance(recipe.scorer, AccuracyDiversityScorer) and recipe.scorer.reference_column == "answer"
    row = recipe.train_dataset[4]
    group = Group("g", row["prompt"], ["4 + 1 = 5\n#### 5", "#### 6"], {"answer": row["answer"]})
    assert recipe.scorer.reference(group) == 5.0 and recipe.scorer.correct(group) == [True, False]


# ---------------------------------------------------------------- experiments


def test_validity_baseline_ignores_the_group():
    from gapo_lite.rewards import ValidityScorer

    baseline = ValidityScorer(open_ended_scorer("train"))
    group = Group("g", None, ["Apple", "Apple", "Banana", "Dragonfruit"], {"category": "fruits"})
    assert baseline(group) == [1.0, 1.0, 1.0, -1.0]



def test_naming_recipes_train_the_suites_prompts_and_score_them_as_the_suite_reads_them():
    """recipes/smollm2_naming.py: the open suite's seven list-validated prompts, asked equally often; GAPO's frequency
    reward over each prompt's own valid answers, by the suite's clean rule; reward=validity is the baseline.
    recipes/qwen7b_naming.py: the same data and scorer with the paper's model, LoRA and learning rate."""
    import dataclasses
    from collections import Counter

    from gapo_lite.eval.open_suite import PROMPTS, SUFFIX, score_answers, vocabulary_for
    from gapo_lite.training.recipes import load_recipe_file

    recipe = load_recipe_file("smollm2_naming")
    config = dataclasses.replace(recipe.config, max_steps=7)
    rows = recipe.build("train_dataset", config)
    asked = Counter(r["category"] for r in rows)
    assert set(asked) == {"city", "country", "animal", "food", "colour", "profession", "sport"} and set(asked.values()) == {2}
    assert all(r["prompt"][0]["content"] == PROMPTS[r["category"]] + SUFFIX for r in rows)

    replies = ["Paris", "Paris.", "The city is Lyon.", "Narnia", "City", "Paris, London"]
    group = Group(key="p", prompt="Name a city.", completions=replies, columns={"category": "city"})
    gapo = recipe.build("scorer", config)
    suite = score_answers(replies, noun="city", vocabulary=vocabulary_for("city", "open"))["valid"]
    assert [a is not None for a in gapo.answers(group)] == [v is not None for v in suite] == [True, True, True, False, False, False]
    L = len(gapo.scorers["city"].vocabulary)  # every city of 15,000+ people: 1/L is almost 0
    expected = [1 - 2 / 3 + 1 / L] * 2 + [1 - 1 / 3 + 1 / L] + [config.invalid_reward] * 3
    assert gapo(group) == pytest.approx(expected)
    baseline = recipe.build("scorer", dataclasses.replace(config, reward="validity"))
    assert baseline(group) == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]

    twin = load_recipe_file("qwen7b_naming")
    c = twin.config
    assert (c.model, c.lora_r, c.lora_alpha, c.lora_dropout, c.learning_rate, c.num_generations, c.invalid_reward) == (
        "Qwen/Qwen2.5-7B-Instruct", 64, 32, 0.1, 1e-5, 32, -1.0)
    assert Counter(twin.build("train_dataset", dataclasses.replace(c, max_steps=1))["category"]) == Counter(
        recipe.build("train_dataset", dataclasses.replace(config, prompts_per_step=8, max_steps=1))["category"])
