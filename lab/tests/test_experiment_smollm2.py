"""The SmolLM2 experiment's parts (warm-up data, table, RL config) and the runner's adapter loading, on
hand-made replies and the tiny model. The real-model run itself is the slow test in test_smollm2.py."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gapo_lite.demo.stages import RLRun
from lab import smollm2


def frontier_module():
    from lab.scripts import smollm2_frontier

    return smollm2_frontier


def train_lists_module():
    from lab.scripts import smollm2_train_lists

    return smollm2_train_lists


def test_own_valid_answers_keeps_replies_that_name_exactly_one_item(monkeypatch):
    import gapo_lite.eval.settings as settings_module
    from gapo_lite.data import build_list_dataset

    s = smollm2.SmolSettings(warmup_prompts=3, warmup_samples=4)
    data = build_list_dataset(3, split="train", max_items=8, seed=s.seed + 7)

    def fake_sample(model, tokenizer, prompts, settings, n=None, seed_offset=0):
        assert prompts == [r["prompt"] for r in data] and settings.n == 4 and settings.max_new_tokens == s.warmup_tokens == 8
        return [[r["items"][0], f"I pick {r['items'][1]}.", f"{r['items'][0]}, {r['items'][1]}", "Qwertyuiop"] for r in data]

    monkeypatch.setattr(settings_module, "sample", fake_sample)
    pairs, share = smollm2.own_valid_answers(None, None, s)
    assert share == pytest.approx(6 / 12)  # a bare item and "I pick X." name one item; a pair and a non-item do not
    assert [a for _, a in pairs] == [x for r in data for x in (r["items"][0], r["items"][1])]
    assert [p for p, _ in pairs][::2] == [r["prompt"] for r in data]


@pytest.mark.parametrize("warmup_temperature, sampled_at", [(None, 0.7), (1.0, 1.0)])
def test_warm_up_samples_at_its_own_temperature_or_the_evaluations(monkeypatch, warmup_temperature, sampled_at):
    import gapo_lite.eval.settings as settings_module

    seen = []

    def fake_sample(model, tokenizer, prompts, settings, n=None, seed_offset=0):
        seen.append(settings.temperature)
        return [["x"] * settings.n for _ in prompts]

    monkeypatch.setattr(settings_module, "sample", fake_sample)
    smollm2.own_valid_answers(None, None, smollm2.SmolSettings(warmup_prompts=2, warmup_samples=2, warmup_temperature=warmup_temperature))
    assert seen == [sampled_at]


def test_warm_up_is_a_no_op_at_zero_steps_and_refuses_an_empty_answer_set(monkeypatch):
    from gapo_lite.errors import UserError

    assert smollm2.warm_up(None, None, smollm2.SmolSettings(warmup_steps=0)) == []
    monkeypatch.setattr(smollm2, "own_valid_answers", lambda model, tok, s: ([], 0.0))
    with pytest.raises(UserError, match="none of its replies"):
        smollm2.warm_up(None, None, smollm2.SmolSettings(warmup_steps=3))


def test_rl_config_is_the_recipe_with_this_runs_reward_and_length(tmp_path):
    from gapo_lite.training.recipes import load_recipe

    recipe = load_recipe("smollm2_lists")
    s = smollm2.SmolSettings(rl_steps=7, seed=3)
    gapo = smollm2.rl_config(s, tmp_path / "start", tmp_path / "out", RLRun("gapo", "GAPO"))
    base = smollm2.rl_config(s, tmp_path / "start", tmp_path / "out2", RLRun("grpo_baseline", "baseline"))
    assert (gapo.reward, base.reward) == ("gapo", "validity")
    assert gapo.model == str(tmp_path / "start") and gapo.max_steps == 7 and gapo.seed == 3
    assert (gapo.use_lora, gapo.lora_r, gapo.learning_rate, gapo.num_generations) == (recipe.use_lora, recipe.lora_r, recipe.learning_rate, recipe.num_generations)
    assert gapo.max_completion_length == s.completion_tokens


def test_table_shows_each_model_column_and_row():
    row = {"heldout_valid_rate": 0.31, "heldout_jsd": 0.2, "heldout_position_tv": 0.18, "dominant_share": 0.6, "pressure": 1.09, "threshold": 0.938}
    results = {"before": row, "gapo": {**row, "heldout_valid_rate": 0.5}, "grpo_baseline": {**row, "pressure": -0.5}}
    lines = smollm2.format_table(results).splitlines()
    assert lines[0].split()[1:] == ["start", "GAPO", "GRPO", "+", "validity", "reward"]
    valid = next(line for line in lines if line.startswith("held-out valid rate"))
    assert [float(x) for x in valid.split()[-3:]] == [0.31, 0.5, 0.31]
    pressure = next(line for line in lines if line.startswith("mode pressure"))
    assert [float(x) for x in pressure.split()[-3:]] == [1.09, 1.09, -0.5]


def test_missing_model_is_a_clear_error(tmp_path):
    from gapo_lite.errors import UserFileNotFoundError

    with pytest.raises(UserFileNotFoundError, match="get_smollm2.sh"):
        smollm2.run(tmp_path / "out", smollm2.SmolSettings(model=str(tmp_path / "nope.gguf")))


def _random_adapter(path, folder, seed):
    """A LoRA adapter with non-zero B on the tiny model, saved to folder; returns the adapted model's logits on one input."""
    import torch

    from gapo_lite.models import LoraSettings, load_model

    torch.manual_seed(seed)
    model, tok = load_model(path, lora=LoraSettings(r=4, alpha=8, dropout=0.0, target_modules=("q_proj", "v_proj")))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(std=0.5)  # a non-zero adapter, so that it changes the output
    model.save_pretrained(folder)
    ids = tok("Cat Dog Owl", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        return ids, model(input_ids=ids).logits


def test_load_trained_puts_a_lora_adapter_on_the_start(tiny_model_path, tmp_path):
    import torch

    from gapo_lite.demo.stages import load_trained

    ids, want = _random_adapter(tiny_model_path, tmp_path / "adapter", seed=0)
    loaded, _ = load_trained(tmp_path / "adapter", Path(tiny_model_path))
    plain, _ = load_trained(Path(tiny_model_path), Path(tiny_model_path))
    with torch.no_grad():
        got, base = loaded(input_ids=ids).logits, plain(input_ids=ids).logits
    assert torch.allclose(got, want, atol=1e-5)
    assert not torch.allclose(base, want, atol=1e-3)


def test_unknown_run_names_are_refused(tmp_path):
    from gapo_lite.errors import UserError

    with pytest.raises(UserError, match="runs must name"):
        smollm2.run(tmp_path / "out", smollm2.SmolSettings(runs=("gapo", "ppo")))


def test_recorded_settings_read_a_folders_settings_with_the_defaults_for_what_it_did_not_record(tmp_path):
    import json

    (tmp_path / "stages").mkdir()
    (tmp_path / "stages" / "settings.json").write_text(json.dumps({"seed": 1, "rl_seed": 2, "learning_rate": 3e-4, "runs": ["gapo_lists"]}))
    s = smollm2.recorded_settings(tmp_path)
    assert (s.seed, s.rl_seed, s.learning_rate, list(s.runs), s.lora_r) == (1, 2, 3e-4, ["gapo_lists"], None)
    (tmp_path / "stages" / "settings.json").write_text(json.dumps({"precision": "fp8"}))
    with pytest.raises(ValueError, match="precision"):
        smollm2.recorded_settings(tmp_path)


def test_rl_config_takes_the_settings_that_differ_from_the_recipe(tmp_path):
    from gapo_lite.models import LoraSettings
    from gapo_lite.training.recipes import load_recipe

    recipe = load_recipe("smollm2_lists")
    s = smollm2.SmolSettings(invalid_reward=0.0, num_generations=16, prompts_per_step=1, learning_rate=4e-4, rl_temperature=0.9, precision="fp32",
                             beta=0.04, lora_r=64, lora_alpha=32, lora_dropout=0.1)
    for name in ("gapo", "grpo_baseline"):
        c = smollm2.rl_config(s, tmp_path / "start", tmp_path / name, RLRun(name, name))
        assert (c.invalid_reward, c.num_generations, c.prompts_per_step, c.learning_rate, c.temperature, c.beta) == (0.0, 16, 1, 4e-4, 0.9, 0.04)
        assert c.lora_settings() == LoraSettings(64, 32, 0.1, recipe.lora_target_modules)
        assert c.precision == "fp32"
    plain = smollm2.rl_config(smollm2.SmolSettings(), tmp_path / "start", tmp_path / "p", RLRun("gapo", "GAPO"))
    assert (plain.invalid_reward, plain.num_generations, plain.learning_rate, plain.beta) == (recipe.invalid_reward, recipe.num_generations, recipe.learning_rate, 0.0)
    assert plain.lora_settings() == recipe.lora_settings() and (recipe.lora_r, recipe.lora_alpha, recipe.lora_dropout) == (16, 32, 0.0)
    assert smollm2.SmolSettings().trained_invalid_reward == -1.0 and s.trained_invalid_reward == 0.0


def test_the_mixed_recipe_trains_what_the_recorded_mixed_runs_trained():
    """recipes/smollm2_mixed.py claims docs/smollm2.md's mixed arm: its settings are that record's."""
    import json

    from gapo_lite.training.recipes import load_recipe

    recipe = load_recipe("smollm2_mixed")
    recorded = json.loads((Path(__file__).parents[2] / "docs" / "results" / "smollm2_clean.json").read_text())[0]["settings"]
    lab = smollm2.SmolSettings()  # the record predates open_vocabulary: the lab's default is what it ran
    assert (recipe.open_share, recipe.num_generations, recipe.prompts_per_step, recipe.learning_rate, recipe.temperature,
            recipe.invalid_reward, recipe.clean_answers) == (recorded["open_share"], recorded["num_generations"], recorded["prompts_per_step"],
                                                             recorded["learning_rate"], recorded["rl_temperature"], recorded["invalid_reward"],
                                                             recorded["clean_answers"])
    assert (recipe.open_vocabulary, recipe.max_completion_length) == (lab.open_vocabulary, lab.completion_tokens)


def test_table_adds_the_trained_reward_and_open_rows_only_when_every_column_has_them():
    row = {"heldout_valid_rate": 0.9, "heldout_jsd": 0.3, "heldout_position_tv": 0.2, "dominant_share": 0.6, "pressure": 0.03, "threshold": 0.93}
    newer = {**row, "trained_pressure": -0.2, "trained_threshold": 0.75, "open": {"mean_unique_valid": 12.5, "mean_valid_rate": 0.6, "mean_unique": 30.0}}
    both = smollm2.format_table({"before": newer, "gapo": {**newer, "open": {**newer["open"], "mean_unique_valid": 20.0}}})
    line = next(x for x in both.splitlines() if x.startswith("open: valid Unique@N"))
    assert [float(v) for v in line.split()[-2:]] == [12.5, 20.0]
    assert "pressure, reward trained with" in both
    mixed = smollm2.format_table({"before": newer, "gapo": row})
    assert "open:" not in mixed and "trained with" not in mixed


def test_measure_samples_in_the_settings_precision(monkeypatch):
    """The lists and open suites sample with SmolSettings.precision (fp32 reproduces a full-precision run)."""
    from gapo_lite.eval import list_suite as lists
    from gapo_lite.eval import open_suite as open_ended

    seen = []

    from gapo_lite.eval.list_suite import reply_form

    splits = []

    def fake_lists(model, tok, settings, num_lists, clean, split):
        seen.append((settings.precision, settings.max_new_tokens, clean))
        splits.append(split)
        return {"mean_jsd": 0.1, "mean_valid_rate": 1.0, "position_tv": 0.0, "position_shares": [], "pressure": {"mean": None, "verdict": "-"},
                "lists": [], "samples": [], "lenient": {}, **reply_form(["Owl"], [True])}

    replies = [["Paris"]] * len(open_ended.PROMPTS)

    def fake_open(model, tok, settings, validator, clean):
        seen.append((settings.precision, settings.max_new_tokens, clean))
        scored = open_ended.score_open(dict(zip(open_ended.PROMPTS, replies)), open_ended.PROMPTS, validator=validator, ended={k: [True] for k in open_ended.PROMPTS})
        return {**scored, "completions": replies, "ended": [[True]] * len(replies)}

    monkeypatch.setattr(lists, "run_lists", fake_lists)
    monkeypatch.setattr(lists, "pressure_by_prompt", lambda *a, **k: {"mean": None})
    monkeypatch.setattr(open_ended, "run_open", fake_open)
    measured = smollm2.measure(None, None, smollm2.SmolSettings(open_samples=2, precision="fp32", guard=False))
    assert seen == [("fp32", 16, True), ("fp32", 16, True)] and splits == ["heldout"]  # the lab measures held-out lists
    assert measured["open"]["old_rule"]["mean_valid_rate"] == pytest.approx(0.4)  # "Paris": on the city word list, and a name for the 3 short-answer prompts
    assert measured["heldout_end_rate"] == 1.0 and "guard" not in measured
    with pytest.raises(ValueError, match="precision must be"):
        smollm2.SmolSettings(precision="fp16")


def test_heldout_jsd_standard_error_is_zero_for_a_fixed_answer_and_shrinks_with_more_samples():
    """smollm2_report.heldout_jsd_se bootstraps each list's samples: no spread when every answer is the same."""
    import random

    from gapo_lite.eval.list_suite import make_eval_lists
    from lab.smollm2_report import heldout_jsd_se

    lists = make_eval_lists(10, 8, 4, 3, split="heldout")
    same = {"heldout_choices": [lst.items[0] for lst in lists for _ in range(20)]}
    assert heldout_jsd_se(same, seed=3, resamples=20) == 0.0
    rng = random.Random(1)
    few = {"heldout_choices": [rng.choice(lst.items[:3]) for lst in lists for _ in range(20)]}
    many = {"heldout_choices": [rng.choice(lst.items[:3]) for lst in lists for _ in range(500)]}
    assert 0 < heldout_jsd_se(many, seed=3, resamples=50) < heldout_jsd_se(few, seed=3, resamples=50)


def test_rl_seed_moves_only_the_rl_runs_seed(tmp_path):
    """rl_seed reseeds the RL runs (samples, prompt order, LoRA init); the held-out lists and the measurement's
    samples keep ``seed``, so runs with different RL seeds are measured on the same lists."""
    same = smollm2.rl_config(smollm2.SmolSettings(seed=1), tmp_path / "start", tmp_path / "a", RLRun("gapo", "GAPO"))
    other = smollm2.rl_config(smollm2.SmolSettings(seed=1, rl_seed=5), tmp_path / "start", tmp_path / "b", RLRun("gapo", "GAPO"))
    assert (same.seed, same.data_seed) == (1, 1) and (other.seed, other.data_seed) == (5, 5)


def test_the_lab_can_train_on_the_lenient_reward_and_measure_by_the_clean_rule(tmp_path):
    from gapo_lite.demo.stages import RLRun
    from lab.smollm2 import SmolSettings, rl_config

    run = RLRun("gapo_lists", "gapo_lists")
    assert rl_config(SmolSettings(), tmp_path, tmp_path / "r", run).clean_answers is True
    lenient = SmolSettings(reward_clean_answers=False)
    assert rl_config(lenient, tmp_path, tmp_path / "r", run).clean_answers is False and lenient.clean_answers is True  # measured clean


def test_training_category_script_refuses_a_folder_without_a_start_before_loading(tmp_path, capsys):
    """lab/scripts/smollm2_train_lists.py: a folder that is not an experiment folder with a start is one line, before any model loads."""
    (tmp_path / "half" / "stages").mkdir(parents=True)
    with pytest.raises(SystemExit) as stop:
        train_lists_module().main([str(tmp_path / "half")])
    assert stop.value.code == 2 and "not an experiment folder with a start" in capsys.readouterr().err


def test_training_category_table_rounds_each_row():
    rows = [{"model": "s: start", "train_jsd": 0.34649, "train_valid_rate": 0.8666}, {"model": "s/gapo_lists", "train_jsd": 0.2891, "train_valid_rate": 0.938}]
    assert train_lists_module().format_rows(rows).splitlines()[2:] == ["| s: start | 0.346 | 0.867 |", "| s/gapo_lists | 0.289 | 0.938 |"]


def _record(seed, start, runs, clean=True):
    """A report record of one seed: the start's and each run's held-out (JSD, valid)."""
    measured = lambda jsd, valid: {"heldout_jsd": jsd, "heldout_valid_rate": valid, **({"heldout_end_rate": 1.0} if clean else {})}
    results = {"settings": {"seed": seed, "runs": [name for name, _ in runs], "open_share": 0.5}, "before": measured(*start)}
    results.update({name: measured(*figures) for name, figures in runs})
    return [results]


def test_frontier_reads_each_clean_rule_model_once_and_fits_the_gapo_runs(tmp_path):
    """lab/scripts/smollm2_frontier.py: a model recorded twice counts once, records of the lenient rule are left out,
    the line is fitted to the GAPO runs only, and the target count and the best run with enough validity are right."""
    import doctest

    frontier = frontier_module()
    assert doctest.testmod(frontier).failed == 0
    a = tmp_path / "a.json"
    a.write_text(json.dumps(_record(0, (0.30, 0.92), [("gapo_lists", (0.25, 0.96)), ("gapo", (0.20, 0.86)), ("grpo_baseline", (0.60, 1.0))])))
    b = tmp_path / "b.json"
    b.write_text(json.dumps(_record(0, (0.30, 0.92), [("gapo_lists", (0.25, 0.96))]) + _record(1, (0.29, 0.84), [("gapo_lists", (0.14, 0.97))])))
    old = tmp_path / "old.json"
    old.write_text(json.dumps(_record(0, (0.31, 0.5), [("gapo_lists", (0.1, 0.99))], clean=False)))
    pts = frontier.points([a, b, old])
    assert sorted((p["seed"], p["kind"]) for p in pts) == [(0, "GAPO, lists + open"), (0, "GAPO, lists only"), (0, "GRPO + validity reward"), (0, "start"),
                                                           (1, "GAPO, lists only"), (1, "start")]
    lines = frontier.summary(pts).splitlines()
    assert lines[1] == "GAPO runs reaching held-out JSD <= 0.15 with valid >= 0.95: 1 of 3"
    f = frontier.fit([p for p in pts if p["kind"] in frontier.GAPO_KINDS])
    assert f["n"] == 3 and f"{f['a']:.3f} {f['b']:+.3f} x valid" in lines[2]
    assert lines[3].startswith("lowest held-out JSD with valid >= 0.95: 0.140 (seed 1")
    with pytest.raises(ValueError, match="at least 3 runs"):
        frontier.fit(pts[:2])
    assert frontier.plot(pts, tmp_path / "f.png").stat().st_size > 1000


def test_rl_on_fixed_lists_trains_on_the_suites_prompts_or_on_fixed_training_lists():
    """``rl_lists="measured"``: every row is one of the suite's 40 prompts (each held-out list in each order, the suite's
    wording), each as often as the others, in a seeded order; ``"fixed"``: ``fixed_lists`` lists of the training
    categories alike; other values, open prompts beside them and no fixed list are refused."""
    from collections import Counter

    from gapo_lite.data import categories, format_prompt
    from gapo_lite.eval.list_suite import DEFAULT_TEMPLATE, make_eval_lists
    from lab.smollm2 import SmolSettings, fixed_lists_dataset

    s = SmolSettings(seed=1, rl_lists="measured")
    rows = fixed_lists_dataset(s, 100)
    suite = {format_prompt(list(order), lst.category, DEFAULT_TEMPLATE): lst.items for lst in make_eval_lists(10, seed=1) for order in lst.orders}
    counts = Counter(r["prompt"][0]["content"] for r in rows)
    assert set(counts) == set(suite) and sorted(set(counts.values())) == [2, 3]  # 100 rows over 40 prompts: whole rounds first
    assert all(sorted(r["items"]) == sorted(suite[r["prompt"][0]["content"]]) for r in rows)
    assert list(fixed_lists_dataset(s, 100)["prompt_id"]) == list(rows["prompt_id"])
    assert list(fixed_lists_dataset(SmolSettings(seed=1, rl_seed=5, rl_lists="measured"), 100)["prompt_id"]) != list(rows["prompt_id"])
    fixed = fixed_lists_dataset(SmolSettings(seed=1, rl_lists="fixed", fixed_lists=2), 20)
    assert len(set(fixed["prompt_id"])) == 8 and set(fixed["category"]) <= set(categories("train")) and not set(fixed["category"]) & set(categories("heldout"))
    with pytest.raises(ValueError, match="draws a fresh list"):
        fixed_lists_dataset(SmolSettings(), 10)
    with pytest.raises(ValueError, match="rl_lists must be one of"):
        SmolSettings(rl_lists="heldout")
    with pytest.raises(ValueError, match="open_share=0"):
        SmolSettings(rl_lists="measured", open_share=0.5)
    with pytest.raises(ValueError, match="fixed_lists must be >= 1"):
        SmolSettings(rl_lists="fixed", fixed_lists=0)



@pytest.mark.slow  # about 20 s on 2 idle cores (five measurements of 31 prompts): the default run is near its 3 minutes
def test_the_naming_arm_runs_stage_by_stage_and_the_report_reads_every_stage(tiny_model_path, tmp_path):
    """`python -m lab.smollm2 --set runs=gapo_naming,grpo_naming --set measure_every=N` on the tiny model: each run is
    measured at each mark on the naming prompts, their rewordings and the open suite, resumed between marks, and the
    report's record holds the start and every stage, the trained prompts apart from the suite's other three."""
    from lab.smollm2 import SmolSettings, run
    from lab.smollm2_report import naming_record

    s = SmolSettings.quick()
    s = type(s)(**{**s.__dict__, "model": str(tiny_model_path), "runs": ("gapo_naming", "grpo_naming"), "rl_steps": 2, "measure_every": 1,
                   "num_generations": 2, "prompts_per_step": 1, "lists_suite": False, "guard": False, "reworded_samples": 2, "threads": 1})
    run(tmp_path / "exp", s)
    stages = sorted(p.name for p in (tmp_path / "exp" / "stages").glob("*.json"))
    assert stages == ["gapo_naming.json", "gapo_naming@1.json", "grpo_naming.json", "grpo_naming@1.json", "settings.json", "start.json"]
    record = naming_record(tmp_path / "exp")
    assert [(p["run"], p["steps"]) for p in record["points"]] == [("start", 0), ("gapo_naming", 1), ("gapo_naming", 2), ("grpo_naming", 1), ("grpo_naming", 2)]
    assert len(record["trained_prompts"]) == 7 and set(record["points"][0]["prompts"]) >= {"city", "celebrity", "city:1", "sport:3"}
    assert all("guard" not in p for p in record["points"])  # guard=False: nothing to read
