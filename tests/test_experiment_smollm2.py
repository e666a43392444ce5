"""The SmolLM2 experiment's parts (warm-up data, table, RL config) and the runner's adapter loading, on
hand-made replies and the tiny model. The real-model run itself is the slow test in test_smollm2.py."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from gapo_lite.lab import smollm2
from gapo_lite.lab.runner import RLRun


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


def test_load_trained_puts_a_lora_adapter_on_the_start(tiny_model_path, tmp_path):
    import torch

    from gapo_lite.lab.runner import load_trained

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
    recorded = json.loads((Path(__file__).parents[1] / "docs" / "results" / "smollm2_clean.json").read_text())[0]["settings"]
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


def test_longer_runs_order_each_seeds_stages_and_refuse_mixed_starts():
    from gapo_lite.lab.smollm2_report import column, longer_runs

    def folder(seed, steps, start_jsd, jsd):
        return {"settings": {"seed": seed, "rl_steps": steps}, "before": {"heldout_jsd": start_jsd}, "gapo": {"heldout_jsd": jsd}}

    runs = longer_runs([folder(1, 500, 0.30, 0.20), folder(0, 500, 0.31, 0.25), folder(0, 250, 0.31, 0.27), folder(1, 250, 0.30, 0.24)])
    assert {seed: [(column(n, schedule), m["heldout_jsd"]) for n, schedule, m in points] for seed, points in runs.items()} == {
        0: [("start", 0.31), ("250 steps", 0.27), ("500 steps", 0.25)],
        1: [("start", 0.30), ("250 steps", 0.24), ("500 steps", 0.20)]}
    annealed = folder(0, 1000, 0.31, 0.15)
    annealed["settings"]["rl_schedule"] = "linear"
    last = longer_runs([folder(0, 250, 0.31, 0.27), annealed])[0][-1]
    assert last[:2] == (1000, "linear") and column(*last[:2]) == "1000 linear"
    with pytest.raises(ValueError, match="seed 0: the folders do not share one start"):
        longer_runs([folder(0, 250, 0.31, 0.27), folder(0, 500, 0.29, 0.25)])


@pytest.mark.parametrize("script, args, env, message", [
    ("smollm2_longer.sh", [], {}, "usage: bash scripts/smollm2_longer.sh SEED"),
    ("smollm2_longer.sh", ["7"], {}, "runs/smollm2_spread_s7 holds no finished gapo run"),
    ("smollm2_longer.sh", ["7"], {"RUN": "grpo_baseline"}, "runs/smollm2_spread_s7 holds no finished grpo_baseline run"),
    ("smollm2_precision.sh", [], {}, "usage: bash scripts/smollm2_precision.sh EXPERIMENT_FOLDER"),
    ("smollm2_precision.sh", ["runs/nothing"], {}, "runs/nothing holds no measured start"),
])
def test_follow_up_scripts_refuse_missing_arguments_and_runs(tmp_path, script, args, env, message):
    """smollm2_longer.sh needs a seed and a finished first run of the run it continues; smollm2_precision.sh a
    folder with a measured start."""
    import os
    import subprocess

    path = Path(__file__).resolve().parents[1] / "scripts" / script
    done = subprocess.run(["bash", str(path), *args], cwd=tmp_path, capture_output=True, text=True, env={**os.environ, **env})
    assert done.returncode != 0 and message in done.stderr
    assert not (tmp_path / "runs").exists()  # refused before anything was written


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


def test_follow_up_scripts_keep_the_first_runs_recorded_settings(tmp_path):
    """scripts/smollm2_common.sh: the --set flags a follow-up run (longer, precision) takes from settings.json."""
    import json
    import subprocess
    import sys

    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"seed": 1, "learning_rate": 0.0003, "rl_temperature": None, "invalid_reward": 0.0, "threads": 1}))
    common = Path(__file__).resolve().parents[1] / "scripts" / "smollm2_common.sh"
    done = subprocess.run(["bash", "-c", f'source "{common}"; recorded_sets "{settings}" seed learning_rate rl_temperature invalid_reward'],
                          capture_output=True, text=True, env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["--set", "seed=1", "--set", "learning_rate=0.0003", "--set", "invalid_reward=0.0"]


def test_heldout_jsd_standard_error_is_zero_for_a_fixed_answer_and_shrinks_with_more_samples():
    """smollm2_report.heldout_jsd_se bootstraps each list's samples: no spread when every answer is the same."""
    import random

    from gapo_lite.eval.list_suite import make_eval_lists
    from gapo_lite.lab.smollm2_report import heldout_jsd_se

    lists = make_eval_lists(10, 8, 4, 3, split="heldout")
    same = {"heldout_choices": [lst.items[0] for lst in lists for _ in range(20)]}
    assert heldout_jsd_se(same, seed=3, resamples=20) == 0.0
    rng = random.Random(1)
    few = {"heldout_choices": [rng.choice(lst.items[:3]) for lst in lists for _ in range(20)]}
    many = {"heldout_choices": [rng.choice(lst.items[:3]) for lst in lists for _ in range(500)]}
    assert 0 < heldout_jsd_se(many, seed=3, resamples=50) < heldout_jsd_se(few, seed=3, resamples=50)


def test_the_longer_plot_names_each_experiments_step_shape():
    """The plot's x axis says what one step was: the experiment's settings, else the recipe's."""
    from gapo_lite.lab.smollm2_report import step_shape

    assert step_shape({"prompts_per_step": 1, "num_generations": 32}) == "1 prompt x 32"
    assert step_shape({"prompts_per_step": 2, "num_generations": 32}) == "2 prompts x 32"
    assert step_shape({"prompts_per_step": None, "num_generations": None}) == "2 prompts x 8"  # recipes/smollm2_lists.py


def test_rl_seed_moves_only_the_rl_runs_seed(tmp_path):
    """rl_seed reseeds the RL runs (samples, prompt order, LoRA init); the held-out lists and the measurement's
    samples keep ``seed``, so runs with different RL seeds are measured on the same lists."""
    same = smollm2.rl_config(smollm2.SmolSettings(seed=1), tmp_path / "start", tmp_path / "a", RLRun("gapo", "GAPO"))
    other = smollm2.rl_config(smollm2.SmolSettings(seed=1, rl_seed=5), tmp_path / "start", tmp_path / "b", RLRun("gapo", "GAPO"))
    assert (same.seed, same.data_seed) == (1, 1) and (other.seed, other.data_seed) == (5, 5)


def _precision_folder(precision, rl_seed, jsd, valid=0.9, seed=1, start_jsd=0.3):
    return {"settings": {"seed": seed, "rl_seed": rl_seed, "precision": precision, "rl_steps": 40},
            "before": {"heldout_jsd": start_jsd, "heldout_valid_rate": 0.9}, "gapo": {"heldout_jsd": jsd, "heldout_valid_rate": valid}}


def test_precision_pairs_match_each_rl_seed_and_refuse_what_does_not_pair():
    from gapo_lite.lab.smollm2_report import format_precision_table, precision_pairs

    folders = [_precision_folder("bf16", 1, 0.20), _precision_folder("fp32", 0, 0.25), _precision_folder("fp32", 1, 0.21), _precision_folder("bf16", 0, 0.23)]
    pairs = precision_pairs(folders)
    assert list(pairs) == [0, 1] and pairs[0]["fp32"]["heldout_jsd"] == 0.25 and pairs[1]["bf16"]["heldout_jsd"] == 0.20
    lines = {line[:40].strip(): [float(v) for v in line[40:].split()] for line in format_precision_table(pairs).splitlines()[2:]}
    assert lines["RL seed 0"] == pytest.approx([0.25, 0.23, -0.02]) and lines["RL seed 1"] == pytest.approx([0.21, 0.20, -0.01])
    assert lines["mean"] == pytest.approx([0.23, 0.215, -0.015], abs=1e-3)
    assert lines["standard deviation over the RL seeds"] == pytest.approx([0.028, 0.021, 0.007], abs=1e-3)
    assert lines["standard error of the mean"] == pytest.approx([0.020, 0.015, 0.005], abs=1e-3)
    with pytest.raises(ValueError, match=r"RL seeds \[0\] were not run in both precisions"):
        precision_pairs(folders[:3])
    with pytest.raises(ValueError, match="do not share one start"):
        precision_pairs([*folders, _precision_folder("fp32", 2, 0.2, start_jsd=0.31)])
    with pytest.raises(ValueError, match="RL seed 0 is given twice in fp32"):
        precision_pairs([*folders, _precision_folder("fp32", 0, 0.2)])
    with pytest.raises(ValueError, match="no finished fp32 or bf16 GAPO run"):
        precision_pairs([*folders, _precision_folder("auto", 2, 0.2)])


def test_precision_script_runs_each_rl_seed_in_both_precisions_on_the_experiments_lists(tmp_path):
    """scripts/smollm2_precision.sh: one folder per (precision, RL seed), each with the experiment's start and
    seed; the python it calls is replaced by a stand-in that records its arguments."""
    import json
    import os
    import subprocess

    exp = tmp_path / "runs" / "exp"
    (exp / "stages").mkdir(parents=True)
    (exp / "pretrained").mkdir()
    (exp / "pretrained" / "config.json").write_text("{}")
    (exp / "stages" / "start.json").write_text('{"before": {}}')
    (exp / "stages" / "settings.json").write_text(json.dumps({"seed": 1, "prompts_per_step": 2, "learning_rate": 0.0003, "num_generations": 32}))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real = subprocess.run(["bash", "-c", "command -v python3"], capture_output=True, text=True).stdout.strip()
    (bin_dir / "python").write_text(f'#!/bin/bash\nif [ "$1" = "-m" ]; then echo "$*" >> "{tmp_path}/calls"; else exec {real} "$@"; fi\n')
    (bin_dir / "python").chmod(0o755)
    script = Path(__file__).resolve().parents[1] / "scripts" / "smollm2_precision.sh"
    done = subprocess.run(["bash", str(script), "runs/exp", "20", "3", "4"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SETS": "--set prompts_per_step=1"})
    assert done.returncode == 0, done.stderr
    calls = (tmp_path / "calls").read_text().splitlines()
    assert [c.split("--out ")[1].split()[0] for c in calls] == [f"runs/smollm2_precision_{p}_r{r}" for r in (3, 4) for p in ("fp32", "bf16")]
    for call in calls:
        assert "--set seed=1 " in call and "--set rl_steps=20 " in call and "--set runs=gapo " in call
        assert call.index("--set prompts_per_step=2") < call.index("--set prompts_per_step=1")  # SETS comes last: it wins
    assert "--set rl_seed=3 " in calls[0] and "--set precision=bf16" in calls[1]
    for r in (3, 4):
        out = tmp_path / "runs" / f"smollm2_precision_bf16_r{r}"
        assert (out / "stages" / "start.json").read_text() == '{"before": {}}' and (out / "pretrained" / "config.json").is_file()


def test_longer_table_leaves_out_the_open_rows_when_a_point_was_measured_on_lists_only():
    from gapo_lite.lab.smollm2_report import format_longer_table

    lists = {"heldout_valid_rate": 0.9, "heldout_jsd": 0.3, "heldout_position_tv": 0.2, "dominant_share": 0.6, "trained_pressure": -0.1, "pressure": 0.1}
    text = format_longer_table([(0, None, {**lists, "open": {"completions": []}}), (40, None, {**lists, "heldout_jsd": 0.25})])
    assert "open:" not in text and [float(v) for v in text.splitlines()[3].split()[-2:]] == [0.3, 0.25]


def test_report_refuses_folders_that_do_not_fit_the_mode_in_one_line(tmp_path, capsys):
    """smollm2_report: a missing folder, or --precision folders that do not pair, is one line and exit 2, no record written."""
    import json

    from gapo_lite.lab.smollm2_report import main

    folder = tmp_path / "run"
    (folder / "stages").mkdir(parents=True)
    (folder / "stages" / "start.json").write_text(json.dumps({"before": {"heldout_jsd": 0.3, "heldout_valid_rate": 0.9}, "seconds": 1.0}))
    (folder / "stages" / "settings.json").write_text(json.dumps({"seed": 1, "rl_seed": 0, "precision": "fp32", "runs": ["gapo"], "rl_steps": 40}))
    (folder / "stages" / "gapo.json").write_text(json.dumps({"measured": {"heldout_jsd": 0.25, "heldout_valid_rate": 0.9}, "seconds": 1.0}))
    for args, message in ((["--precision", str(folder)], "RL seeds [0] were not run in both precisions"),
                          ([str(tmp_path / "nothing")], "holds neither results.json nor a measured start")):
        with pytest.raises(SystemExit) as stop:
            main([*args, "--record", str(tmp_path / "record.json")])
        assert stop.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "record.json").exists()


def _quantized_folder(tmp_path, load_in_4bit, jsd, step_times, start_jsd=0.3, **settings):
    import json

    run_dir = tmp_path / ("q4" if load_in_4bit else "q32") / "gapo_lists"
    run_dir.mkdir(parents=True)
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps({"step": i + 1, "step_time": t}) + "\n" for i, t in enumerate(step_times)))
    results = {"settings": {"seed": 0, "rl_steps": 100, "load_in_4bit": load_in_4bit, "threads": 1, "runs": ["gapo_lists"], **settings},
               "before": {"heldout_jsd": start_jsd, "heldout_valid_rate": 0.9}, "gapo_lists": {"heldout_jsd": jsd, "heldout_valid_rate": 0.95}}
    if load_in_4bit:
        results["before_nf4"] = {"heldout_jsd": start_jsd + 0.01, "heldout_valid_rate": 0.88}
    return results, run_dir.parent


def test_quantization_report_sets_the_nf4_run_beside_the_32bit_one_and_refuses_other_pairs(tmp_path):
    from gapo_lite.lab.smollm2_report import format_quantization_table, quantization_columns, step_seconds

    full, full_dir = _quantized_folder(tmp_path, False, 0.25, [4.0, 6.0])
    nf4, nf4_dir = _quantized_folder(tmp_path, True, 0.27, [9.0, 11.0])
    for results, folder in ((full, full_dir), (nf4, nf4_dir)):  # what report_quantization reads from each run's log
        results["seconds_per_step"] = {"gapo_lists": step_seconds(folder / "gapo_lists")}
    columns = quantization_columns([nf4, full])  # either order
    assert [label for label, _, _ in columns] == ["start, 32-bit", "start, NF4", "GAPO, 32-bit", "GAPO, NF4"]
    assert [m["heldout_jsd"] for _, m, _ in columns] == [0.3, 0.31, 0.25, 0.27]
    assert [t for _, _, t in columns] == [None, None, 5.0, 10.0]  # the mean of each run's logged step_time
    text = format_quantization_table(columns, seed=0)
    assert "seconds per GAPO step" in text and "10.000" in text
    with pytest.raises(ValueError, match="one run with --set load_in_4bit=true and one without"):
        quantization_columns([full, full])
    other, other_dir = _quantized_folder(tmp_path / "b", True, 0.27, [9.0], learning_rate=1e-4)
    with pytest.raises(ValueError, match="differ in more than load_in_4bit: learning_rate"):
        quantization_columns([full, other])
    moved, moved_dir = _quantized_folder(tmp_path / "c", True, 0.27, [9.0], start_jsd=0.4)
    with pytest.raises(ValueError, match="do not share one start"):
        quantization_columns([full, moved])


def _seed_folder(root, name, seed, runs, open_share=0.0, open_vocabulary="word_lists", rl_steps=150, start_jsd=0.3, **more):
    """An experiment folder of finished stages whose open suite recorded replies: the start answers "Lion" or
    "Snake" to "Name an animal.", the runs "Snake", "Shark" and "Lion"."""
    import json

    from gapo_lite.eval import open_suite as open_ended
    from gapo_lite.lab.smollm2 import open_record

    def measured(jsd, animals):
        replies = [animals if p == "animal" else ["Paris"] for p in open_ended.PROMPTS]
        ended = [[True] * len(r) for r in replies]
        scored = open_ended.score_open(dict(zip(open_ended.PROMPTS, replies)), open_ended.PROMPTS, validator="open", ended=dict(zip(open_ended.PROMPTS, ended)))
        return {"heldout_jsd": jsd, "heldout_valid_rate": 0.96, "heldout_position_tv": 0.1, "dominant_share": 0.5, "pressure": 0.1, "threshold": 0.8,
                "open": open_record(scored, replies, ended, "open")}

    folder = root / name
    (folder / "stages").mkdir(parents=True)
    (folder / "stages" / "start.json").write_text(json.dumps({"before": measured(start_jsd, ["Lion", "Snake"]), "seconds": 1.0}))
    settings = {"seed": seed, "runs": runs, "rl_steps": rl_steps, "open_share": open_share, "open_vocabulary": open_vocabulary, **more}
    (folder / "stages" / "settings.json").write_text(json.dumps(settings))
    for run in runs:
        (folder / "stages" / f"{run}.json").write_text(json.dumps({"measured": measured(0.2, ["Snake", "Shark", "Lion"]), "seconds": 1.0}))
    return folder


def test_report_adds_runs_of_other_folders_and_counts_every_column_by_one_rule(tmp_path, capsys):
    """smollm2_report --add: another folder's runs from the same start become further columns, every label naming
    its steps; --open-validator wordnet scores every column's recorded open replies again ("Snake" is an animal)."""
    import json

    from gapo_lite.lab.smollm2_report import format_result_markdown, main, models, run_label, summary_models

    for seed in (0, 1):
        _seed_folder(tmp_path, f"base_s{seed}", seed, ["gapo_lists"])
        _seed_folder(tmp_path, f"longer_s{seed}", seed, ["gapo_lists"], rl_steps=300)
        _seed_folder(tmp_path, f"mixed_s{seed}", seed, ["gapo"], open_share=0.5, open_vocabulary="wordnet")
        _seed_folder(tmp_path, f"lenient_s{seed}", seed, ["gapo_lists"], reward_clean_answers=False)
    record = tmp_path / "record.json"
    added = [a for s in (0, 1) for f in ("lenient", "longer", "mixed") for a in ("--add", str(tmp_path / f"{f}_s{s}"))]
    main([str(tmp_path / "base_s0"), str(tmp_path / "base_s1"), *added, "--open-validator", "wordnet", "--record", str(record)])
    recorded = json.loads(record.read_text())
    labels = [run_label(recorded[0], n) for n in models(recorded[0])]
    assert labels == ["start", "GAPO, lists only, 150 steps", "GAPO, lists only, lenient reward, 150 steps", "GAPO, lists only, 300 steps",
                      "GAPO, lists + 0.5 open, WordNet, 150 steps"]
    animal = lambda name: recorded[0][name]["open"]["prompts"]["animal"]["unique_valid"]
    assert animal("before") == 2 and animal("gapo@mixed_s0") == 3  # by the open rule "Snake" and "Shark" were no animals: 1 and 1
    assert recorded[0]["open_validator"] == "wordnet" and "gapo_lists@longer_s0" in recorded[0]
    assert summary_models(recorded[0]) == ["before", "gapo_lists@longer_s0", "gapo@mixed_s0"]  # each run's last column
    printed = capsys.readouterr().out  # the record prints the tables the run printed
    assert format_result_markdown(recorded) in printed and format_result_markdown(recorded, summary=True) in printed
    with pytest.raises(SystemExit) as stop:  # seeds whose columns differ cannot share one targets table
        main([str(tmp_path / "base_s0"), str(tmp_path / "base_s1"), "--add", str(tmp_path / "longer_s0")])
    assert stop.value.code == 2 and "the seeds' columns differ" in capsys.readouterr().err
    _seed_folder(tmp_path, "other_start", 0, ["gapo"], start_jsd=0.4)
    with pytest.raises(SystemExit):
        main([str(tmp_path / "base_s0"), "--add", str(tmp_path / "other_start")])
    assert "does not start from the start of seed 0" in capsys.readouterr().err


def test_an_added_run_names_the_settings_that_differ_and_every_run_its_margin(tmp_path):
    """A probe folder added to its start's folder says what it changed (NAMED_SETTINGS), so the write-up's rows read
    on their own; a run of the first folder names only its invalid margin."""
    from gapo_lite.lab.smollm2_report import add_runs, load_results, models, run_label

    base = load_results(_seed_folder(tmp_path, "base", 0, ["gapo_lists"], learning_rate=3e-4, num_generations=32, invalid_margin=0.1))
    add_runs(base, load_results(_seed_folder(tmp_path, "fast", 0, ["gapo_lists"], learning_rate=1e-3, num_generations=32)), tmp_path / "fast")
    add_runs(base, load_results(_seed_folder(tmp_path, "wide", 0, ["gapo_lists"], learning_rate=3e-4, num_generations=16, invalid_margin=0.0)),
             tmp_path / "wide")
    add_runs(base, load_results(_seed_folder(tmp_path, "again", 0, ["gapo_lists"], learning_rate=3e-4, num_generations=32, invalid_margin=0.1,
                                             rl_seed=1)), tmp_path / "again")
    add_runs(base, load_results(_seed_folder(tmp_path, "paper", 0, ["gapo_lists"], learning_rate=3e-4, num_generations=32, invalid_margin=0.1,
                                             lora_r=64, lora_dropout=0.1)), tmp_path / "paper")
    for prompts in (1, 4):
        add_runs(base, load_results(_seed_folder(tmp_path, f"p{prompts}", 0, ["gapo_lists"], learning_rate=3e-4, num_generations=32,
                                                 invalid_margin=0.1, prompts_per_step=prompts)), tmp_path / f"p{prompts}")
    assert [run_label(base, n) for n in models(base)[1:]] == [
        "GAPO, lists only, margin 0.1, 150 steps", "GAPO, lists only, no margin, lr 0.001, 150 steps", "GAPO, lists only, margin 0, G 16, 150 steps",
        "GAPO, lists only, RL seed 1, 150 steps", "GAPO, lists only, LoRA r 64, dropout 0.1, 150 steps", "GAPO, lists only, 1 prompt, 150 steps",
        "GAPO, lists only, 4 prompts, 150 steps"]


def test_a_run_on_the_lenient_reward_says_so_in_its_own_folder_too(tmp_path):
    """A folder reported on its own (not added to another) still names the lenient reward it trained on."""
    from gapo_lite.lab.smollm2_report import format_result_markdown, load_results

    lenient = load_results(_seed_folder(tmp_path, "lenient", 0, ["gapo_lists"], reward_clean_answers=False, clean_answers=True))
    clean = load_results(_seed_folder(tmp_path, "clean", 0, ["gapo_lists"], clean_answers=True))
    assert "| 0 | start |" in format_result_markdown([lenient]) and "| 0 | GAPO, lists only, lenient reward |" in format_result_markdown([lenient])
    assert "| 0 | GAPO, lists only |" in format_result_markdown([clean])


def test_a_continued_run_says_what_it_trained_with_before_and_what_changed(tmp_path):
    """A stage of scripts/smollm2_longer.sh keeps the settings of the folder it resumed (stages/continued_from.json),
    so a run trained 150 steps with margin 0 and then 75 without one is not labelled as 225 steps without one."""
    import json

    from gapo_lite.lab.smollm2_report import add_runs, load_results, models, run_label

    base = load_results(_seed_folder(tmp_path, "base", 0, ["gapo_lists"], learning_rate=3e-4))
    first = _seed_folder(tmp_path, "m0", 0, ["gapo_lists"], learning_rate=3e-4, invalid_margin=0.0)
    later = _seed_folder(tmp_path, "m0v_225", 0, ["gapo_lists"], rl_steps=225, learning_rate=3e-4, invalid_margin=None)
    same = _seed_folder(tmp_path, "m0_300", 0, ["gapo_lists"], rl_steps=300, learning_rate=3e-4, invalid_margin=0.0)
    for stage, resumed in ((later, first), (same, first)):
        (stage / "stages" / "continued_from.json").write_text((resumed / "stages" / "settings.json").read_text())
    # A finished folder is read from its results.json; the stage's continued_from.json still counts.
    (later / "results.json").write_text(json.dumps({k: v for k, v in load_results(later).items() if k != "continued_from"}))
    for folder in (later, same):
        add_runs(base, load_results(folder), folder)
    assert [run_label(base, n) for n in models(base)[1:]] == [
        "GAPO, lists only, 150 steps", "GAPO, lists only, margin 0, 150 steps, then no margin to 225", "GAPO, lists only, margin 0, 300 steps"]
    assert json.loads((later / "stages" / "continued_from.json").read_text())["invalid_margin"] == 0.0


def test_the_longer_script_resumes_a_checkpoint_and_records_the_settings_it_was_trained_with(tmp_path):
    """scripts/smollm2_longer.sh copies the resumed folder's checkpoint, its curves and its settings into the stage
    (stages/continued_from.json), then runs the lab with that folder's recorded settings and SETS' overrides."""
    import json
    import os
    import subprocess
    import sys

    prev = tmp_path / "runs" / "m0_s0"
    (prev / "gapo_lists" / "checkpoint-150").mkdir(parents=True)
    (prev / "pretrained").mkdir()
    (prev / "gapo_lists" / "metrics.jsonl").write_text('{"step": 150}\n')
    settings = {"seed": 0, "rl_steps": 150, "invalid_margin": 0.0, "learning_rate": 3e-4, "runs": ["gapo_lists"], "lora_r": 64, "lora_alpha": 32,
                "lora_dropout": 0.1, "warmup_steps": 96, "warmup_temperature": 1.0, "precision": "bf16", "threads": 2, "rl_schedule": "cosine"}
    for name, body in (("settings", settings), ("start", {"before": {}}), ("gapo_lists", {"measured": {}})):
        (prev / "stages").mkdir(exist_ok=True)
        (prev / "stages" / f"{name}.json").write_text(json.dumps(body))
    # A python that records the lab's command line and runs everything else (the script's JSON helpers).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(f'#!/bin/bash\nif [ "$2" = gapo_lite.lab.smollm2 ]; then echo "$@" > {tmp_path}/lab_args; exit 0; fi\nexec {sys.executable} "$@"\n')
    (bin_dir / "python").chmod(0o755)
    script = Path(__file__).resolve().parents[1] / "scripts" / "smollm2_longer.sh"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FROM": "runs/m0_s0", "RUN": "gapo_lists", "PREFIX": "runs/m0v_s0",
           "SETS": "--set invalid_margin=None"}
    done = subprocess.run(["bash", str(script), "0", "225"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    stage = tmp_path / "runs" / "m0v_s0_225"
    assert json.loads((stage / "stages" / "continued_from.json").read_text()) == settings
    assert (stage / "gapo_lists" / "checkpoint-150").is_dir() and (stage / "gapo_lists" / "latest_checkpoint.txt").read_text().strip() == "checkpoint-150"
    lab_args = (tmp_path / "lab_args").read_text().split()
    assert "invalid_margin=0.0" in lab_args and "rl_steps=225" in lab_args and lab_args[-1] == "invalid_margin=None"
    assert {"lora_r=64", "lora_alpha=32", "lora_dropout=0.1"} <= set(lab_args)  # the checkpoint's adapter shape
    assert {"warmup_steps=96", "warmup_temperature=1.0"} <= set(lab_args)  # how its start was warmed, for the start's label
    assert "precision=bf16" in lab_args  # every recorded setting, not a list that misses the ones added later
    # but what each stage sets itself: its seed, threads, steps and runs once each, and no recorded schedule
    own = [a for a in lab_args if a.split("=")[0] in ("seed", "threads", "rl_steps", "runs", "rl_schedule")]
    assert own == ["seed=0", "threads=1", "rl_steps=225", "runs=gapo_lists"]


def test_the_lab_can_train_on_the_lenient_reward_and_measure_by_the_clean_rule(tmp_path):
    from gapo_lite.lab.runner import RLRun
    from gapo_lite.lab.smollm2 import SmolSettings, rl_config

    run = RLRun("gapo_lists", "gapo_lists")
    assert rl_config(SmolSettings(), tmp_path, tmp_path / "r", run).clean_answers is True
    lenient = SmolSettings(reward_clean_answers=False)
    assert rl_config(lenient, tmp_path, tmp_path / "r", run).clean_answers is False and lenient.clean_answers is True  # measured clean


def test_the_training_table_reads_first_and_last_steps_of_each_run(tmp_path):
    """The report's training-groups table averages the hook's logged metrics over the first and the last steps of each
    run, and says "not logged" for a metric an older run lacks."""
    import json

    from gapo_lite.lab.smollm2_report import format_training_table, training_groups

    run = tmp_path / "arm_s0" / "gapo_lists"
    run.mkdir(parents=True)
    rows = [{"step": i, "gapo_frequency/distinct_per_group": float(i), "gapo_frequency/valid_rate": 0.5,
             "gapo_frequency/mode_pressure": -0.1 if i > 2 else 0.2} for i in range(1, 7)]
    rows.insert(3, {"step": 3, "train_runtime": 1.0})  # a row without the hook's metrics (TRL's last log) is skipped
    (run / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    old = tmp_path / "old_s0" / "gapo"
    old.mkdir(parents=True)
    (old / "metrics.jsonl").write_text(json.dumps({"step": 1, "gapo_tasks/distinct_per_group": 2.0, "gapo_tasks/valid_rate": 1.0}))
    [(label, summary)] = training_groups(tmp_path / "arm_s0", first=2, last=3)
    assert label == "arm_s0/gapo_lists"
    assert summary["distinct_per_group"] == pytest.approx((1.5, 5.0)) and summary["mode_pressure"] == pytest.approx((0.2, -0.1))
    table = format_training_table(training_groups(tmp_path / "arm_s0", 2, 3) + training_groups(tmp_path / "old_s0", 2, 3), first=2, last=3)
    assert "| arm_s0/gapo_lists | 1.500 -> 5.000 | 0.500 -> 0.500 | 0.200 -> -0.100 |" in table
    assert "| old_s0/gapo | 2.000 -> 2.000 | 1.000 -> 1.000 | not logged |" in table


def test_training_category_script_refuses_a_folder_without_a_start_before_loading(tmp_path, capsys, load_script):
    """scripts/smollm2_train_lists.py: a folder that is not an experiment folder with a start is one line, before any model loads."""
    (tmp_path / "half" / "stages").mkdir(parents=True)
    with pytest.raises(SystemExit) as stop:
        load_script("smollm2_train_lists").main([str(tmp_path / "half")])
    assert stop.value.code == 2 and "not an experiment folder with a start" in capsys.readouterr().err


def test_training_category_table_rounds_each_row(load_script):
    rows = [{"model": "s: start", "train_jsd": 0.34649, "train_valid_rate": 0.8666}, {"model": "s/gapo_lists", "train_jsd": 0.2891, "train_valid_rate": 0.938}]
    assert load_script("smollm2_train_lists").format_rows(rows).splitlines()[2:] == ["| s: start | 0.346 | 0.867 |", "| s/gapo_lists | 0.289 | 0.938 |"]


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


def test_averaged_updates_are_the_adapters_merged_deltas_scaled(tiny_model_path, tmp_path, load_script):
    """scripts/smollm2_average.py: one adapter's delta at scale 1 is the adapted model; a delta and its negative
    average to the start; scale 2 adds the delta twice."""
    import torch

    from gapo_lite.models import load_model

    average = load_script("smollm2_average")
    start = Path(tiny_model_path)
    ids, want = _random_adapter(start, tmp_path / "a", seed=0)
    delta = average.merged_delta(start, tmp_path / "a")
    assert delta and all(name.endswith((".q_proj.weight", ".v_proj.weight")) for name in delta)
    logits = lambda deltas, scale: average.add_scaled_mean(load_model(start, lora=None)[0], deltas, scale)(input_ids=ids).logits
    with torch.no_grad():
        base = load_model(start, lora=None)[0](input_ids=ids).logits
        assert torch.allclose(logits([delta], 1.0), want, atol=1e-5)
        assert torch.allclose(logits([delta, {k: -v for k, v in delta.items()}], 1.0), base, atol=1e-5)
        assert torch.allclose(logits([delta, delta], 1.0), want, atol=1e-5)
        name = sorted(delta)[0]
        weight = lambda scale: dict(average.add_scaled_mean(load_model(start, lora=None)[0], [delta], scale).named_parameters())[name]
        plain = dict(load_model(start, lora=None)[0].named_parameters())[name]
        assert torch.allclose(weight(2.0) - plain, 2 * delta[name], atol=1e-6) and delta[name].abs().max() > 0.01
        with pytest.raises(ValueError, match="do not cover the same weights"):
            average.add_scaled_mean(load_model(start, lora=None)[0], [delta, {k: v for k, v in list(delta.items())[:1]}], 1.0)


def test_average_script_refuses_folders_without_an_adapter_in_one_line(tmp_path, capsys, load_script):
    (tmp_path / "run" / "stages").mkdir(parents=True)
    with pytest.raises(SystemExit) as stop:
        load_script("smollm2_average").main([str(tmp_path / "run"), "--runs", str(tmp_path / "run")])
    assert stop.value.code == 2 and "no finished gapo_lists adapter in" in capsys.readouterr().err
    assert load_script("smollm2_average").label(["rl0_s0", "rl1_s0"], 2.0) == "mean of rl0_s0 + rl1_s0, x2"


def _record(seed, start, runs, clean=True):
    """A report record of one seed: the start's and each run's held-out (JSD, valid)."""
    measured = lambda jsd, valid: {"heldout_jsd": jsd, "heldout_valid_rate": valid, **({"heldout_end_rate": 1.0} if clean else {})}
    results = {"settings": {"seed": seed, "runs": [name for name, _ in runs], "open_share": 0.5}, "before": measured(*start)}
    results.update({name: measured(*figures) for name, figures in runs})
    return [results]


def test_frontier_reads_each_clean_rule_model_once_and_fits_the_gapo_runs(tmp_path, load_script):
    """scripts/smollm2_frontier.py: a model recorded twice counts once, records of the lenient rule are left out,
    the line is fitted to the GAPO runs only, and the target count and the best run with enough validity are right."""
    import doctest

    frontier = load_script("smollm2_frontier")
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


def test_draws_gather_the_runs_that_differ_only_by_their_rl_seed(tmp_path):
    """The report's draws line: the first run and the added runs of the same setting under another RL seed (or
    torch threads), not a run that changed anything else, with their mean and standard deviation."""
    from gapo_lite.lab.smollm2_report import add_runs, draws, format_draws, load_results

    base = load_results(_seed_folder(tmp_path, "a", 0, ["gapo_lists"], learning_rate=3e-4, rl_seed=None, threads=1))
    assert draws(base) is None and format_draws(base) is None
    for name, jsd, more in (("b", 0.25, {"rl_seed": 1, "threads": 2, "lora_r": None}), ("fast", 0.1, {"rl_seed": None, "threads": 1, "learning_rate": 1e-3}),
                            ("c", 0.3, {"rl_seed": 2, "threads": 1})):
        other = load_results(_seed_folder(tmp_path, name, 0, ["gapo_lists"], **{"learning_rate": 3e-4, **more}))
        other["gapo_lists"]["heldout_jsd"] = jsd
        add_runs(base, other, tmp_path / name)
    assert draws(base) == ("GAPO, lists only, 150 steps", [0.2, 0.25, 0.3])
    assert format_draws(base) == ("seed 0, GAPO, lists only, 150 steps and its RL seeds: held-out JSD 0.200, 0.250, 0.300; mean 0.250, "
                                  "standard deviation 0.050 (3 runs); start 0.300")


def test_a_start_says_how_it_was_warmed_when_not_the_recorded_way():
    """Starts warmed as every start before warm-ups were varied read "start"; others name what differs."""
    from gapo_lite.lab.smollm2_report import RECORDED_WARMUP, run_label

    label = lambda **changed: run_label({"settings": {**RECORDED_WARMUP, **changed}}, "before")
    assert label() == "start" and label(warmup_steps=0, warmup_temperature=1.0) == "start"  # an unwarmed start has no warm-up to name
    assert label(warmup_temperature=1.0) == "start, warm-up sampled at T 1"
    assert label(warmup_steps=96, warmup_prompts=192, warmup_samples=4) == "start, warm-up 96 steps, 192 prompts, 4 replies each"
    assert run_label({"settings": {"warmup_steps": 24}}, "before") == "start"  # records made before the warm-up's temperature existed


def test_rl_on_fixed_lists_trains_on_the_suites_prompts_or_on_fixed_training_lists():
    """``rl_lists="measured"``: every row is one of the suite's 40 prompts (each held-out list in each order, the suite's
    wording), each as often as the others, in a seeded order; ``"fixed"``: ``fixed_lists`` lists of the training
    categories alike; other values, open prompts beside them and no fixed list are refused."""
    from collections import Counter

    from gapo_lite.data import categories, format_prompt
    from gapo_lite.eval.list_suite import DEFAULT_TEMPLATE, make_eval_lists
    from gapo_lite.lab.smollm2 import SmolSettings, fixed_lists_dataset

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


def test_a_run_on_the_measured_lists_says_so_and_counts_for_no_target_or_fit(tmp_path, load_script):
    """Trained on the prompts it is measured on, a run shows no transfer: its label says so, issue 34's targets
    and the frontier's fit leave it out, in its own folder and when added to another."""
    from gapo_lite.lab.smollm2_report import add_runs, load_results, run_label, target_rows

    lead = load_results(_seed_folder(tmp_path, "lead", 0, ["gapo_lists"]))
    measured = load_results(_seed_folder(tmp_path, "ml", 0, ["gapo_lists"], rl_lists="measured"))
    assert run_label(measured, "gapo_lists") == "GAPO, lists only, trained on the measured lists"
    fixed = load_results(_seed_folder(tmp_path, "fx", 0, ["gapo_lists"], rl_lists="fixed", fixed_lists=2))
    assert run_label(fixed, "gapo_lists") == "GAPO, lists only, 2 fixed lists" and len(target_rows(fixed)) == 2  # a transfer result
    assert target_rows(measured) == [] and len(target_rows(lead)) == 2
    both = add_runs(lead, measured, tmp_path / "ml")
    added = [n for n in both["added"]]
    assert len(added) == 1 and "trained on the measured lists" in run_label(both, added[0]) and len(target_rows(both)) == 2
    frontier = load_script("smollm2_frontier")
    for name in ("before", "gapo_lists", *added):
        both[name]["heldout_end_rate"] = 1.0  # measured by the clean rule, as the frontier reads
    record = tmp_path / "r.json"
    record.write_text(json.dumps([both]))
    kinds = sorted(p["kind"] for p in frontier.points([record]))
    assert kinds == ["GAPO, lists only", "other", "start"]


def test_item_ranks_tell_a_traded_favourite_from_a_spread():
    """A run that answers as the start did with two items' names swapped keeps the start's shape by its own ranks and
    loses the start's favourite by the start's; a run that answers uniformly is flat either way; lists with no
    valid answer are left out of the mean."""
    from gapo_lite.eval.list_suite import make_eval_lists
    from gapo_lite.lab.smollm2_report import item_ranks, uniform_own_ranks

    lists = make_eval_lists(2, seed=3)
    start, swapped, uniform = [], [], []
    for lst in lists:
        a, b, *rest = lst.items
        start += [a] * 5 + [b] * 2 + [rest[0]] + [None] * 8  # 16 samples a list, 8 of them valid
        swapped += [b] * 5 + [a] * 2 + [rest[0]] + [None] * 8
        uniform += list(lst.items) * 2
    m = lambda choices: {"heldout_jsd": 0.0, "heldout_choices": choices}
    results = {"settings": {"seed": 3, "eval_lists": 2, "eval_samples": 16}, "before": m(start), "gapo_lists": m(swapped), "gapo": m(uniform)}
    by_start, by_own = (dict((label, shares) for label, shares in item_ranks(results, by)) for by in ("start", "own"))
    assert by_start["start"][:3] == by_own["start"][:3] == [5 / 8, 2 / 8, 1 / 8]
    assert by_own["GAPO, lists only"] == by_own["start"] and by_start["GAPO, lists only"][:2] == [2 / 8, 5 / 8]
    assert by_own["GAPO"] == by_start["GAPO"] == [1 / 8] * 8
    results["gapo_lists"] = m([None] * 16 + swapped[16:])  # the first list: no valid answer
    assert dict(item_ranks(results, "own"))["GAPO, lists only"] == by_own["start"]
    assert uniform_own_ranks(16, draws=200)[0] > 1 / 8 > uniform_own_ranks(16, draws=200)[-1]
    with pytest.raises(ValueError, match="by must be"):
        item_ranks(results, "favourite")
