"""Recipes: short Python files in ``recipes/`` that define ``config = TrainConfig(...)`` (and optionally
``scorer`` and ``train_dataset`` for rewards beyond list selection)."""
from __future__ import annotations

import runpy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


@dataclass
class Recipe:
    """What a recipe file defines: ``config``, and optionally a custom ``scorer`` and ``train_dataset``."""

    path: Path
    config: TrainConfig
    scorer: Any = None
    train_dataset: Any = None

    def train_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for :func:`gapo_lite.training.train` besides the config."""
        return {k: v for k, v in (("scorer", self.scorer), ("train_dataset", self.train_dataset)) if v is not None}


def load_recipe_file(name: str) -> Recipe:
    """Run a recipe file as a module (its ``__main__`` block does not run) and collect what it defines."""
    path = recipe_path(name)
    namespace = runpy.run_path(str(path), run_name="gapo_lite_recipe")
    config = namespace.get("config")
    if not isinstance(config, TrainConfig):
        raise ValueError(f"recipe {path} must define `config = TrainConfig(...)`")
    return Recipe(path, config, namespace.get("scorer"), namespace.get("train_dataset"))


def load_recipe(name: str) -> TrainConfig:
    """The ``config`` a recipe file defines."""
    return load_recipe_file(name).config
