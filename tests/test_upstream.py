"""Upstream internals in one place: every private name of TRL, transformers and Unsloth that gapo-lite uses lives in
``gapo_lite/upstream/``, one module per package, and each says what the installed version no longer has."""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gapo_lite"
INTERNAL_MODULES = ("trl.trainer", "transformers.cache_utils", "transformers.modeling_layers", "unsloth_zoo", "unsloth.")


@pytest.mark.parametrize("package", ["trl", "transformers", "unsloth"])
def test_the_installed_version_still_has_what_the_kit_relies_on(package):
    upstream = importlib.import_module(f"gapo_lite.upstream.{package}")
    if package == "unsloth" and upstream.installed_sources() is None:
        pytest.skip("unsloth is not installed")
    problems = upstream.missing()
    assert not problems, "\n".join(problems)


def test_each_check_names_what_is_gone(monkeypatch):
    from transformers.modeling_layers import GradientCheckpointingLayer

    from gapo_lite.upstream import transformers as upstream_transformers
    from gapo_lite.upstream import trl as upstream_trl
    from gapo_lite.upstream import unsloth as upstream_unsloth

    monkeypatch.setitem(upstream_trl.METHODS, "_prepare_inputs", ("self", "inputs"))  # a renamed parameter
    monkeypatch.setitem(upstream_trl.METHODS, "_gone_method", ("self",))
    monkeypatch.setattr(upstream_trl, "ATTRIBUTES", (*upstream_trl.ATTRIBUTES, "_gone_attribute"))
    problems = "\n".join(upstream_trl.missing())
    assert "GRPOTrainer._prepare_inputs(self, generation_batch" in problems and "no GRPOTrainer._gone_method" in problems
    assert "no longer sets self._gone_attribute" in problems and "read from 1.14.2" in problems
    monkeypatch.delattr(GradientCheckpointingLayer, "_can_checkpoint_with_cache")
    assert any("_can_checkpoint_with_cache" in p for p in upstream_transformers.missing())
    if upstream_unsloth.installed_sources() is not None:
        monkeypatch.setattr(upstream_unsloth, "SOURCES", (("unsloth", "models/llama.py", "KV_CACHE_INCREMENT = 1024"),))
        assert "no longer holds `KV_CACHE_INCREMENT = 1024`" in "\n".join(upstream_unsloth.missing())


def private_uses(path: Path, names: set[str]) -> list[str]:
    """Where ``path`` touches one of ``names`` (an attribute, a method defined, a string) or imports an upstream
    package's internal module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        hit = (
            (isinstance(node, ast.Attribute) and node.attr in names)
            or (isinstance(node, ast.FunctionDef) and node.name in names)
            or (isinstance(node, ast.Constant) and node.value in names)
            or (isinstance(node, ast.ImportFrom) and (node.module or "").startswith(INTERNAL_MODULES))
        )
        if hit:
            found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    return found


def test_no_other_module_touches_an_upstream_private_name():
    from gapo_lite.upstream import transformers as upstream_transformers
    from gapo_lite.upstream import trl as upstream_trl

    names = {*upstream_trl.PRIVATE_NAMES, *upstream_transformers.PRIVATE_NAMES}
    outside = [p for p in PACKAGE.rglob("*.py") if "upstream" not in p.relative_to(PACKAGE).parts]
    uses = [use for path in outside for use in private_uses(path, names)]
    assert not uses, f"private upstream names used outside gapo_lite/upstream/: {uses}"


@pytest.mark.parametrize("feature", ["backoff.py", "shared_prompt.py"])
def test_the_two_features_reach_trl_only_through_the_upstream_module(feature):
    tree = ast.parse((PACKAGE / "training" / feature).read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not any(name == "trl" or name.startswith("trl.") for name in imported), imported
