"""An installed (non-editable) kit finds its recipes from any directory, and reading a recipe writes nothing."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def run(*args, cwd, env=None, timeout=600):
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_wheel_runs_recipes_from_anywhere(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".git", ".venv", "runs", "build", "dist", "*.egg-info", "__pycache__", "notebooks"))
    wheels = tmp_path / "wheels"
    built = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", wheels, source, cwd=tmp_path)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = wheels.glob("gapo_lite-*.whl")
    env_dir = tmp_path / "env"
    made = run(sys.executable, "-m", "venv", env_dir, cwd=tmp_path)
    assert made.returncode == 0, made.stderr[-2000:]
    site = next(env_dir.glob("lib/python*/site-packages"))
    # the project's dependencies, importable without installing them again (no gapo_lite among them)
    deps = [p for p in sys.path if p.endswith("site-packages") and not (Path(p) / "gapo_lite").exists()]
    (site / "project_deps.pth").write_text("\n".join(deps) + "\n")
    installed = run(env_dir / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel, cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr[-2000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    where = run(env_dir / "bin" / "python", "-c", "import gapo_lite; print(gapo_lite.__file__)", cwd=elsewhere, env=env)
    assert where.stdout.strip().startswith(str(site)), where.stdout + where.stderr
    dry = run(env_dir / "bin" / "gapo-lite", "train", "--recipe", "qwen7b_lists", "--dry-run", cwd=elsewhere, env=env)
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert "model: Qwen/Qwen2.5-7B-Instruct" in dry.stdout
    tiny = run(env_dir / "bin" / "gapo-lite", "train", "--recipe", "tiny_lists", "--dry-run", cwd=elsewhere, env=env)
    assert tiny.returncode == 0, tiny.stderr[-2000:]
    assert list(elsewhere.iterdir()) == []  # the recipe's model is built only right before training


def test_reading_a_recipe_writes_nothing(tmp_path, monkeypatch):
    """--dry-run and a bad --set key stop before the recipe's prepare() hook builds its model."""
    from gapo_lite.cli import main
    from gapo_lite.errors import UserError
    from gapo_lite.training.recipes import known_recipes, load_recipe_file

    monkeypatch.chdir(tmp_path)
    assert {"tiny_lists", "qwen7b_lists"} <= set(known_recipes()) and "__init__" not in known_recipes()
    assert main(["train", "--recipe", "tiny_lists", "--dry-run"]) == 0
    with pytest.raises(UserError, match="bogus"):
        main(["train", "--recipe", "tiny_lists", "--set", "bogus=1"])
    assert list(tmp_path.iterdir()) == []
    assert callable(load_recipe_file("tiny_lists").prepare)
