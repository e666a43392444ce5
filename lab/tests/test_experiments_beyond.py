"""The lab's miniatures beyond the paper: arithmetic data and format clusters, and the open-ended and accuracy experiments (quick mode)."""
from __future__ import annotations

import json
import math
import random

import pytest

from gapo_lite.data.open_prompts import (
    open_prompt,
    vocabularies,
)
from gapo_lite.rewards import AccuracyDiversityScorer, Group
from lab.arithmetic import (
    FORMATS,
    arithmetic_words,
    build_arithmetic_dataset,
    format_clusterer,
    format_of,
    format_signature,
    problems,
    solution,
    strict_answer,
)


def _resample(folder, prompts, *, n, temperature, max_new_tokens, seed):
    """Samples from a saved model with the sampler settings the experiments' ``measure`` uses."""
    from gapo_lite.models import load_model
    from gapo_lite.sampling import sample_completions

    model, tok = load_model(folder, lora=None)
    return sample_completions(model, tok, prompts, n=n, temperature=temperature, max_new_tokens=max_new_tokens,
                              batch_size=1024, seed=seed, progress=False)


def _simple_open_answer(text: str, vocabulary: list[str]) -> str | None:
    """A second, simpler reading of a tiny-model answer: the whole text, spaces collapsed, trailing full stop
    dropped, lowercased, if that is a vocabulary item (the tiny model writes items verbatim)."""
    answer = " ".join(text.split()).rstrip(".").lower()
    return answer if answer in {v.lower() for v in vocabulary} else None


def _simple_correct(text: str, a: int, op: str, b: int) -> str | None:
    """Which correct format ``text`` is in for the problem ``a op b``, by string comparison (a simpler checker)."""
    text = " ".join(text.split())
    c = a + b if op == "+" else a - b
    if text == str(c):
        return "bare"
    if text == f"The answer is {c}":
        return "sentence"
    parts = text.split(" ")
    if len(parts) == 5 and parts[1] in "+-" and parts[3] == "=" and all(p.lstrip("-").isdigit() for p in parts[::2]):
        x, y, z = int(parts[0]), int(parts[2]), int(parts[4])
        return "equation" if z == c and (x + y if parts[1] == "+" else x - y) == z else None
    return None


# ---------------------------------------------------------------- arithmetic data


def test_problems_and_formats():
    pool = problems(9)
    assert len(pool) == 100 + 55  # every a + b, and a - b with a >= b
    assert all(a >= b for a, op, b in pool if op == "-")
    assert [solution((3, "+", 4), f) for f in FORMATS] == ["7", "3 + 4 = 7", "The answer is 7"]
    assert [format_of(solution((9, "-", 2), f)) for f in FORMATS] == list(FORMATS)
    assert format_of("3 + 4 = 8") is None  # a false equation is not a solution
    assert format_of("7 7") is None and format_of("+ 7") is None and format_of("") is None
    assert strict_answer("  3  +  4 =  7 ") == 7.0 and strict_answer("The answer is 12") == 12.0
    assert strict_answer("7 7") is None
    assert format_signature("13 - 4 = 9") == "N - N = N"
    assert {"What", "is", "?", "+", "-", "=", "The", "answer", "0", "18"} <= set(arithmetic_words(9))
    with pytest.raises(ValueError, match="unknown operator"):
        problems(3, ops=("/",))


def test_arithmetic_dataset_rows():
    ds = build_arithmetic_dataset(20, max_operand=3, seed=1)
    assert set(ds.column_names) == {"prompt", "question", "answer", "prompt_id"}
    assert len(set(ds["prompt_id"])) == 20
    for row in ds:
        a, op, b = row["question"].split()[2:5]
        assert row["answer"] == (int(a) + int(b) if op == "+" else int(a) - int(b))
        assert row["prompt"] == [{"role": "user", "content": row["question"]}]


def test_accuracy_diversity_with_format_clusters_hand_computed():
    scorer = AccuracyDiversityScorer(extract_answer=strict_answer, cluster=format_clusterer)
    group = Group("g", None, ["7", "7", "3 + 4 = 7", "The answer is 7", "8", "3 + 4 = 8"], {"answer": 7})
    # correct: 0-3; clusters N (2 of 4), equation (1 of 4), sentence (1 of 4); L = G = 6
    expected = [1 - 0.5 + 1 / 6, 1 - 0.5 + 1 / 6, 1 - 0.25 + 1 / 6, 1 - 0.25 + 1 / 6, -1.0, -1.0]
    assert scorer(group) == pytest.approx(expected)


# ---------------------------------------------------------------- experiments


def test_apply_overrides():
    from gapo_lite.overrides import apply_overrides
    from lab.accuracy import AccuracySettings

    s = apply_overrides(AccuracySettings(), ["rl_steps=7", "baseline=false", "format_shares=0.5,0.25,0.25", "rl_lr=1e-3"])
    assert (s.rl_steps, s.baseline, s.format_shares, s.rl_lr) == (7, False, (0.5, 0.25, 0.25), 1e-3)
    with pytest.raises(ValueError, match="unknown setting 'steps'"):
        apply_overrides(s, ["steps=3"])
    with pytest.raises(ValueError, match="bad value for baseline"):
        apply_overrides(s, ["baseline=maybe"])


def test_score_samples_hand_computed():
    from lab.accuracy import score_samples

    out = score_samples([(7, ["7", "7", "3 + 4 = 7", "3 + 4 = 8"]), (5, ["5", "5", "6", "1 + 4 = 5 5"])])
    assert out["accuracy"] == pytest.approx(5 / 8)
    assert out["lenient_accuracy"] == pytest.approx(6 / 8)  # "1 + 4 = 5 5" ends in the right number but is malformed
    assert out["formats_per_problem"] == pytest.approx((2 + 1) / 2)
    h1 = -(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3)) / math.log(3)
    assert out["format_entropy"] == pytest.approx((h1 + 0.0) / 2)
    assert out["format_shares"] == pytest.approx({"bare": 4 / 5, "equation": 1 / 5, "sentence": 0.0})
    assert out["attempt_shares"] == pytest.approx({"bare": 5 / 8, "equation": 2 / 8, "sentence": 0.0})
    assert out["format_accuracy"]["bare"] == pytest.approx(4 / 5) and out["format_accuracy"]["equation"] == pytest.approx(1 / 2)
    assert math.isnan(out["format_accuracy"]["sentence"])


def test_pretrain_draws_follow_the_shares():
    from lab.accuracy import AccuracySettings, pretrain_draw
    from lab.open_ended import pretrain_draw as open_draw

    rng = random.Random(0)
    draw = open_draw(0.8)
    category_of = {open_prompt(c): c for c in vocabularies("all")}
    pairs = [(category_of[m[0]["content"]], a) for m, a in (draw(rng) for _ in range(2000))]
    assert all(a in vocabularies("all")[c] for c, a in pairs)
    assert sum(a == vocabularies("all")[c][0] for c, a in pairs) / 2000 == pytest.approx(0.8, abs=0.03)
    draw = pretrain_draw(AccuracySettings(format_shares=(0.0, 1.0, 0.0)))
    messages, text = draw(rng)
    assert format_of(text) == "equation" and strict_answer(text) is not None
    with pytest.raises(ValueError, match="format_shares must be 3"):
        pretrain_draw(AccuracySettings(format_shares=(1.0, 0.0)))


def test_open_ended_experiment_recomputed(tmp_path):
    """The quick run's table, recomputed per category from fresh samples of the saved models with a simpler
    answer reader (pretraining lengthened so that some answers are valid)."""
    from lab.open_ended import main

    argv = ["--quick", "--set", "pretrain_steps=120", "--set", "pretrain_lr=1e-2", "--out", str(tmp_path)]
    assert main(argv) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["command"] == "python -m lab.open_ended " + " ".join(argv)
    s = results["settings"]
    assert set(results) >= {"before", "gapo", "wall_seconds", "settings"} and "baseline" not in results
    valid_seen = 0
    for model, folder in (("before", tmp_path / "pretrained"), ("gapo", tmp_path / "gapo" / "model")):
        for split in ("train", "heldout"):
            cell = results[model][f"T1/{split}"]
            names = sorted(vocabularies(split))
            prompts = [[{"role": "user", "content": open_prompt(c)}] for c in names]
            samples = _resample(folder, prompts, n=s["eval_samples"], temperature=1.0, max_new_tokens=3, seed=s["seed"] + 17)
            per = {}
            for category, texts in zip(names, samples):
                vocab = vocabularies("all")[category]
                answers = [_simple_open_answer(t, vocab) for t in texts]
                valid = [a for a in answers if a is not None]
                per[category] = (len(set(valid)), len(valid) / len(texts), answers.count(vocab[0].lower()) / len(texts))
                got = cell["per_category"][category]
                assert (got["unique"], got["valid_rate"], got["favourite_share"]) == pytest.approx(per[category]), (model, category)
                valid_seen += len(valid)
            for k, key in enumerate(("unique", "valid_rate", "favourite_share")):
                assert cell[key] == pytest.approx(sum(v[k] for v in per.values()) / len(per))
    assert valid_seen > 0  # the check above compared real answers, not only empty ones
    assert (tmp_path / "gapo" / "metrics.jsonl").read_text().strip()


def test_accuracy_experiment_recomputed(tmp_path):
    """Accuracy, formats per problem and format shares of the quick run, recomputed from fresh samples of the
    saved models with a string-comparison checker."""
    from lab.accuracy import AccuracySettings, eval_pool, main
    from lab.arithmetic import question

    argv = ["--quick", "--set", "pretrain_steps=200", "--set", "pretrain_lr=1e-2", "--out", str(tmp_path)]
    assert main(argv) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    s = results["settings"]
    pool = eval_pool(AccuracySettings(**{k: tuple(v) if isinstance(v, list) else v for k, v in s.items()}))
    prompts = [[{"role": "user", "content": question(p)}] for p in pool]
    correct_seen = 0
    for model, folder in (("before", tmp_path / "pretrained"), ("gapo", tmp_path / "gapo" / "model"), ("baseline", tmp_path / "baseline" / "model")):
        samples = _resample(folder, prompts, n=s["eval_samples"], temperature=1.0, max_new_tokens=s["max_completion_length"], seed=s["seed"] + 29)
        formats = [[_simple_correct(t, *p) for t in texts] for p, texts in zip(pool, samples)]
        correct = [f for per in formats for f in per if f is not None]
        cell = results[model]["T1"]
        assert cell["accuracy"] == pytest.approx(len(correct) / (len(pool) * s["eval_samples"]))
        assert cell["formats_per_problem"] == pytest.approx(sum(len({f for f in per if f}) for per in formats) / len(pool))
        for name in ("bare", "equation", "sentence"):
            assert cell["format_shares"][name] == pytest.approx(correct.count(name) / len(correct) if correct else 0.0)
        assert cell["examples"] == samples[0][:8]
        correct_seen += len(correct)
    assert correct_seen > 0


def test_accuracy_reward_is_per_sample():
    from gapo_lite.rewards import AccuracyScorer

    reward = AccuracyScorer(strict_answer, label=format_signature)
    group = Group("g", None, ["7", "3 + 4 = 7", "The answer is 8", "7 7"], {"answer": 7})
    assert reward(group) == [1.0, 1.0, 0.0, 0.0]
    assert reward.answers(group) == ["N", "N + N = N", None, None]
    text_reference = Group("g", None, ["so 72", "71"], {"answer": "48 + 24 = 72\n#### 72"})
    assert AccuracyScorer(wrong_reward=-1.0)(text_reference) == [1.0, -1.0]
    with pytest.raises(KeyError, match="needs the dataset column 'answer'"):
        reward(Group("g", None, ["7"], {}))
