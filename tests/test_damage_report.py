"""The damage report (``gapo_lite.eval.damage``; ``gapo-lite eval --compare``): it warns on a model whose
replies run on and whose guard accuracy fell, and stays quiet on an identical model. The guard suite's grading."""
from __future__ import annotations

import json

import pytest

from gapo_lite.data.guard_set import guard_items
from gapo_lite.eval.damage import damage, warning_lines
from gapo_lite.eval.guard_suite import guard_answer, score_guard
from gapo_lite.eval.list_suite import reply_form
from gapo_lite.eval.open_suite import PROMPTS, score_open

SOUND_OPEN = ["Paris", "London", "Tokyo", "Rome", "Lima"] * 20
RUN_ON_OPEN = ["Paris Chernobyl Sandstone City Buildings Smith Ava", "Canada, Canada\n\n\nThis country is Canada", "Tokyo", "Rome", "Lima"] * 20


def _suites(open_replies: list[str], open_ended: list[bool], guard_right: int) -> dict:
    """Suite results as the eval writes them, scored from replies by the kit's own scorers."""
    items = guard_items()
    replies = [i.answer if k < guard_right else "I do not know the answer to this question at all" for k, i in enumerate(items)]
    lists = {"mean_valid_rate": 0.9, **reply_form(["Owl"] * 900 + ["Owl Cat Dog"] * 100, [True] * 1000)}
    completions = {name: open_replies for name in PROMPTS}
    open_scores = score_open(completions, PROMPTS, ended={name: open_ended for name in PROMPTS})
    return {"lists": lists, "open": open_scores, "guard": score_guard(items, replies, [True] * len(items))}


def test_damage_flags_a_run_on_model_and_not_an_identical_one():
    sound = _suites(SOUND_OPEN, [True] * 100, guard_right=60)
    damaged = _suites(RUN_ON_OPEN, [False, True, True, True, True] * 20, guard_right=30)
    assert not [f for f in damage(sound, sound) if f.worse] and warning_lines(damage(sound, sound)) == []
    worse = {f.metric for f in damage(sound, damaged) if f.worse}
    assert worse == {"open: replies that end their turn", "open: mean reply length (words)", "open: valid rate", "guard: accuracy"}
    lines = warning_lines(damage(sound, damaged))
    assert lines[0].startswith("WARNING: the trained model is worse than the reference beyond the noise on 4 check(s)")
    assert any("guard: accuracy: 0.667 -> 0.333" in line for line in lines)


def test_damage_threshold_is_the_noise_of_a_rate_with_a_floor():
    """A drop of 0.06 in a rate over 1000 replies each is beyond 2 standard errors of the difference (about 0.044)
    and the 0.02 floor; over 100 replies it is within the noise (about 0.14)."""
    big = lambda rate: {"guard": {"accuracy": rate, "n": 1000, "end_rate": 1.0}}
    small = lambda rate: {"guard": {"accuracy": rate, "n": 100, "end_rate": 1.0}}
    assert [f.worse for f in damage(big(0.50), big(0.44)) if f.metric == "guard: accuracy"] == [True]
    assert [f.worse for f in damage(small(0.50), small(0.44)) if f.metric == "guard: accuracy"] == [False]
    assert [f.worse for f in damage(big(0.50), big(0.55)) if f.metric == "guard: accuracy"] == [False]  # better is never a warning


@pytest.mark.parametrize(("reply", "expected"), [
    ("Paris", "Paris"), ("The capital of France is Paris.", "Paris"), ("27 + 14 = 41", "41"), ("41.", "41"),
    ("The first letter of the word 'banana' is 'B'.", "'B'"), ('The correct answer is "receive"', '"receive"'), ("", None),
])
def test_guard_reads_the_stated_answer(reply, expected):
    assert guard_answer(reply) == expected


def test_guard_grades_capability_and_the_end_of_turn():
    items = guard_items()
    assert len(items) == 90 and {i.kind for i in items} == {"arithmetic", "capital", "spelling"}
    assert all(i.answer == str(eval(i.prompt.split("is ")[1].split("?")[0].replace("plus", "+").replace("times", "*"))) for i in items if i.kind == "arithmetic")
    replies = [f"The answer is {i.answer}." for i in items]
    right = score_guard(items, replies, [True] * 90)
    assert right["accuracy"] == 1.0 and right["by_kind"] == {"arithmetic": 1.0, "capital": 1.0, "spelling": 1.0}
    cut = score_guard(items, replies, [k % 2 == 0 for k in range(90)])
    assert cut["accuracy"] == pytest.approx(0.5) and cut["lenient_accuracy"] == 1.0 and cut["end_rate"] == pytest.approx(0.5)
    assert cut["accuracy_se"] == pytest.approx((0.25 / 90) ** 0.5)
    with pytest.raises(ValueError, match="one reply and one end flag per item"):
        score_guard(items, replies[:3], [True] * 3)


def test_eval_compare_is_quiet_on_an_identical_model(tmp_path, capsys):
    """A LoRA adapter whose B matrices are zero leaves the model as it was: the damage check finds nothing."""
    from gapo_lite.cli import main
    from gapo_lite.demo.tiny import build_tiny_model
    from gapo_lite.models import LoraSettings, load_model

    model_dir = build_tiny_model(tmp_path / "model")
    model, _ = load_model(model_dir, lora=LoraSettings(r=4, alpha=8, dropout=0.0))
    model.save_pretrained(tmp_path / "adapter")
    out = tmp_path / "out"
    argv = ["eval", "--model", str(model_dir), "--adapter", str(tmp_path / "adapter"), "--out", str(out), "--suite", "lists,open,guard",
            "--n", "4", "--max-new-tokens", "4", "--num-lists", "2", "--no-progress"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "damage check (adapter against base):" in printed and "no check is worse beyond the noise" in printed and "WARNING" not in printed
    results = json.loads((out / "results.json").read_text())
    assert results["damage"]["warnings"] == [] and len(results["damage"]["findings"]) == 8
    assert "## Damage check: adapter against base" in (out / "report.md").read_text()
    assert (out / results["variants"]["base"]["guard"]["samples_file"]).is_file()
