"""Every ``gapo-lite`` subcommand answers a user error with one stderr line and exit code 2; crashes keep
their traceback."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gapo_lite.cli import entry, main
from gapo_lite.errors import UserError, looks_like_local_path

ROOT = Path(__file__).resolve().parents[1]


def one_error_line(capsys, command: str) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"gapo-lite {command}: error: "), lines[0]
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["train", "--recipe", "no_such_recipe"], "no recipe 'no_such_recipe'"),
        (["train", "--recipe", "qwen7b_lists", "--set", "learning_rate=abc"], "bad value for learning_rate: 'abc'"),
        (["train", "--recipe", "qwen7b_lists", "--set", "no_such_key=1"], "unknown TrainConfig key 'no_such_key'"),
        (["train", "--recipe", "qwen7b_lists", "--set", "max_steps"], "--set expects key=value"),
        (["train", "--recipe", "qwen7b_lists", "--set", "num_generations=1"], "num_generations must be >= 2"),
        (["train", "--recipe", "qwen7b_lists", "--set", "model=/no/such/model"], "model '/no/such/model' does not exist"),
        (["eval", "--model", "/no/such/model", "--out", "unused"], "--model '/no/such/model' does not exist"),
        (["eval", "--model", "m", "--out", "unused", "--suite", "lists,poetry"], "unknown suite(s) ['poetry']"),
        (["eval", "--model", "nosuchmodel", "--out", "o", "--suite", "lists", "--n", "1"], "could not load model 'nosuchmodel'"),
        (["train", "--recipe", "qwen7b_lists", "--set", "model=nosuch/hubmodel"], "could not load model 'nosuch/hubmodel'"),
        (["eval", "--model", "m"], "the following arguments are required: --out"),
        (["demo", "--set", "bogus=1"], "unknown demo setting 'bogus'"),
        (["demo", "--set", "rl_steps=many"], "bad value for rl_steps: 'many'"),
        (["plan", "--model", "nonesuch-3b", "--budget-gb", "24"], "nearest known"),
        (["plan", "--budget-gb", "-1"], "--budget-gb must be positive"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(argv, needle, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # nothing may be written to the repository
    try:
        code = entry(argv)
    except SystemExit as stop:  # argparse's own usage errors
        code = stop.code
    assert code == 2
    assert needle in one_error_line(capsys, argv[0])


def test_no_model_is_loaded_before_a_bad_override(monkeypatch, capsys):
    import gapo_lite.models

    def boom(*args, **kwargs):
        raise AssertionError("model loaded")

    monkeypatch.setattr(gapo_lite.models, "load_model", boom)
    assert entry(["train", "--recipe", "qwen7b_lists", "--set", "bogus=3"]) == 2
    one_error_line(capsys, "train")


def test_main_lets_user_errors_through_for_python_callers():
    with pytest.raises(UserError, match="no_such_key"):
        main(["train", "--recipe", "qwen7b_lists", "--set", "no_such_key=1"])


def test_a_crash_in_a_recipe_keeps_its_traceback(tmp_path):
    recipe = tmp_path / "broken.py"
    recipe.write_text("raise RuntimeError('the recipe itself is broken')\n")
    with pytest.raises(RuntimeError, match="itself is broken"):
        entry(["train", "--recipe", str(recipe)])


def test_a_recipe_without_config_is_a_user_error(tmp_path, capsys):
    recipe = tmp_path / "empty.py"
    recipe.write_text("x = 1\n")
    assert entry(["train", "--recipe", str(recipe)]) == 2
    assert "must define `config = TrainConfig(...)`" in one_error_line(capsys, "train")


def run_cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "gapo_lite.cli", *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_shell_exit_codes(tmp_path):
    bad = run_cli("train", "--recipe", "no_such_recipe", cwd=tmp_path)
    assert bad.returncode == 2, bad.stderr
    assert bad.stderr.strip().splitlines() == [bad.stderr.strip()] and "Traceback" not in bad.stderr
    assert bad.stderr.startswith("gapo-lite train: error: no recipe 'no_such_recipe'")
    recipe = tmp_path / "broken.py"
    recipe.write_text("raise RuntimeError('the recipe itself is broken')\n")
    crash = run_cli("train", "--recipe", str(recipe), cwd=tmp_path)
    assert crash.returncode == 1 and "Traceback" in crash.stderr and "RuntimeError: the recipe itself is broken" in crash.stderr


@pytest.mark.parametrize(
    ("name", "local"),
    [("/abs/model", True), ("./m", True), ("../m", True), ("~/m", True), ("runs/x/model", True),
     ("gpt2", False), ("Qwen/Qwen2.5-7B-Instruct", False)],
)
def test_which_model_names_are_local_paths(name, local):
    assert looks_like_local_path(name) is local


@pytest.mark.parametrize("module", ["open_ended", "accuracy"])
def test_experiment_modules_answer_a_bad_set_in_one_line(module, capsys, tmp_path):
    import importlib

    main_of = importlib.import_module(f"lab.{module}").main
    assert main_of(["--quick", "--out", str(tmp_path), "--set", "no_such_setting=1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"python -m lab.{module}: error: unknown setting 'no_such_setting'; known: " + err.split("known: ")[1]
    assert not (tmp_path / "results.json").exists()


def test_the_console_script_is_the_error_handling_entry(capsys):
    import importlib
    import re

    target = re.search(r'^gapo-lite = "([\w.:]+)"', (ROOT / "pyproject.toml").read_text(), flags=re.MULTILINE).group(1)
    module, _, name = target.partition(":")
    script = getattr(importlib.import_module(module), name)
    assert script(["train", "--recipe", "no_such_recipe"]) == 2
    one_error_line(capsys, "train")
    with pytest.raises(SystemExit) as stop:
        script([])
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("gapo-lite: error: the following arguments are required")
