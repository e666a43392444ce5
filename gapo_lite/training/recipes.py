"""Recipes: short Python files in ``recipes/`` that define ``config = TrainConfig(...)`` and, for rewards
beyond list selection, the factories ``scorer(config)`` and ``train_dataset(config)``; ``prepare(config)``
does any heavy set-up (building a model, fetching data) right before training, so that reading a recipe
(``--dry-run``, a bad ``--set`` key) writes nothing.

A name is looked up in ``./recipes/`` first, then among the installed kit's recipes (the repository's
``recipes/`` folder, installed as the package ``gapo_lite.recipes``), so recipes are found from any directory.

The factories are called with the FINAL config, after ``--set`` overrides, so ``--set max_steps=...`` or
``--set data_seed=...`` reaches the data and the scorer. A recipe may instead bind ``scorer`` or
``train_dataset`` to a ready object (a scorer instance, a ``datasets.Dataset``); such an object is used as
is and does not see overrides.
"""
from __future__ import annotations

import importlib.util
import inspect
import runpy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gapo_lite.errors import UserError, UserFileNotFoundError
from gapo_lite.training.config import TrainConfig


def installed_recipes_dir() -> Path | None:
    """The folder of the installed recipes (package ``gapo_lite.recipes``), or None when it is not installed."""
    spec = importlib.util.find_spec("gapo_lite.recipes")
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]) if locations else None


def known_recipes() -> list[str]:
    """Names of the installed recipes."""
    folder = installed_recipes_dir()
    return sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_")) if folder else []


def recipe_path(name: str) -> Path:
    """``name`` as a file path, or ``recipes/NAME.py`` in the working directory, or an installed recipe."""
    installed = installed_recipes_dir()
    candidates = [Path(name)] if name.endswith(".py") else [Path.cwd() / "recipes" / f"{name}.py"] + ([installed / f"{name}.py"] if installed else [])
    for path in candidates:
        if path.is_file():
            return path
    known = known_recipes()
    raise UserFileNotFoundError(
        f"no recipe {name!r} (looked in {', '.join(str(c) for c in candidates)}); known recipes: {', '.join(known) or 'none'}"
    )


def _is_factory(value: Any) -> bool:
    """A plain function or lambda defined in the recipe (a factory of the config), not a scorer object."""
    return inspect.isfunction(value)


@dataclass
class Recipe:
    """What a recipe file defines: ``config``, and optionally ``scorer`` and ``train_dataset`` (factories
    of the config, or ready objects)."""

    path: Path
    config: TrainConfig
    scorer: Any = None
    train_dataset: Any = None
    prepare: Any = None

    def prepare_for(self, config: TrainConfig) -> None:
        """Run the recipe's ``prepare(config)`` hook, if it has one (right before training)."""
        if callable(self.prepare):
            self.prepare(config)

    def build(self, name: str, config: TrainConfig | None = None) -> Any:
        """The recipe's ``scorer`` or ``train_dataset`` for ``config`` (default: the recipe's own); ``None`` if undefined."""
        value = getattr(self, name)
        return value(config or self.config) if _is_factory(value) else value

    def train_kwargs(self, config: TrainConfig | None = None) -> dict[str, Any]:
        """Keyword arguments for :func:`gapo_lite.training.train` besides ``config``, built for ``config``."""
        built = {name: self.build(name, config) for name in ("scorer", "train_dataset")}
        return {k: v for k, v in built.items() if v is not None}


def load_recipe_file(name: str) -> Recipe:
    """Run a recipe file as a module (its ``__main__`` block does not run) and collect what it defines."""
    path = recipe_path(name)
    namespace = runpy.run_path(str(path), run_name="gapo_lite_recipe")
    config = namespace.get("config")
    if not isinstance(config, TrainConfig):
        raise UserError(f"recipe {path} must define `config = TrainConfig(...)`")
    return Recipe(path, config, namespace.get("scorer"), namespace.get("train_dataset"), namespace.get("prepare"))


def load_recipe(name: str) -> TrainConfig:
    """The ``config`` a recipe file defines."""
    return load_recipe_file(name).config
