"""Recipes: short Python files in ``recipes/`` that define ``config = TrainConfig(...)``."""
from __future__ import annotations

import runpy
from pathlib import Path

from gapo_lite.training.config import TrainConfig

REPO_RECIPES = Path(__file__).resolve().parents[2] / "recipes"


def recipe_path(name: str) -> Path:
    """``name`` as a file path, or ``recipes/NAME.py`` in the working directory or beside the package."""
    candidates = [Path(name)] if name.endswith(".py") else [Path.cwd() / "recipes" / f"{name}.py", REPO_RECIPES / f"{name}.py"]
    for path in candidates:
        if path.is_file():
            return path
    known = sorted(p.stem for p in REPO_RECIPES.glob("*.py")) if REPO_RECIPES.is_dir() else []
    raise FileNotFoundError(f"no recipe {name!r} (looked in {', '.join(str(c) for c in candidates)}); known recipes: {', '.join(known) or 'none'}")


def load_recipe(name: str) -> TrainConfig:
    """The ``config`` a recipe file defines (its ``__main__`` block does not run)."""
    path = recipe_path(name)
    namespace = runpy.run_path(str(path), run_name="gapo_lite_recipe")
    config = namespace.get("config")
    if not isinstance(config, TrainConfig):
        raise ValueError(f"recipe {path} must define `config = TrainConfig(...)`")
    return config
