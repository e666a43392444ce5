"""The package's import graph: no cycles, and arrows only point down the layers (parsed from the AST)."""
from __future__ import annotations

import ast
import functools
import os
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gapo_lite"

# Lower layers never import higher ones. Modules not listed take their package's layer.
LAYERS: list[set[str]] = [
    {"gapo_lite._bootstrap", "gapo_lite.answers", "gapo_lite.metrics", "gapo_lite.overrides", "gapo_lite.errors", "gapo_lite.probes",
     "gapo_lite.batching", "gapo_lite.upstream"},
    {"gapo_lite.data", "gapo_lite.sampling", "gapo_lite.gguf", "gapo_lite.runplan"},
    {"gapo_lite.rewards", "gapo_lite.diagnostics"},  # the diagnostic reads the reward's own formula
    {"gapo_lite.models", "gapo_lite.memory"},
    {"gapo_lite.training", "gapo_lite.eval"},
    {"gapo_lite.lab"},  # the CPU lab: the demo, tiny models, pretraining loops, experiments
    {"gapo_lite", "gapo_lite.cli"},
]
LIBRARY = ("gapo_lite.answers", "gapo_lite.rewards", "gapo_lite.data", "gapo_lite.metrics", "gapo_lite.diagnostics", "gapo_lite.models",
           "gapo_lite.memory", "gapo_lite.training", "gapo_lite.eval", "gapo_lite.sampling", "gapo_lite.gguf", "gapo_lite.errors",
           "gapo_lite.overrides", "gapo_lite._bootstrap", "gapo_lite.batching", "gapo_lite.runplan", "gapo_lite.probes", "gapo_lite.upstream")


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> set[str]:
    return {module_name(p) for p in PACKAGE.rglob("*.py")}


def imports_of(path: Path, modules: set[str], root: Path = PACKAGE) -> set[str]:
    """Every gapo_lite module ``path`` imports, at top level or inside a function.

    ``from pkg import sub`` counts as importing ``pkg.sub`` only (not ``pkg``) when ``sub`` is a module.
    """
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            submodules = {f"{target}.{alias.name}" for alias in node.names} & modules
            found.update(submodules)
            if len(submodules) < len(node.names):
                found.add(target)
    return {m for m in found if m in modules and m != name}


@functools.lru_cache(maxsize=1)
def build_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (parsed once per session; treat as read-only)."""
    modules = all_modules()
    return {module_name(p): imports_of(p, modules) for p in PACKAGE.rglob("*.py")}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first one repeated at the end), or None."""

    def edges(node: str) -> set[str]:
        return graph[node]

    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges(node)):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def layer_of(module: str) -> int:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        for i, layer in enumerate(LAYERS):
            if prefix in layer:
                return i
    raise AssertionError(f"{module} is in no layer of tests/test_import_graph.py: add it")


def test_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_import_extraction(tmp_path):
    hook = imports_of(PACKAGE / "rewards" / "hook.py", all_modules())
    assert "gapo_lite.rewards.group" in hook and "gapo_lite.rewards" not in hook
    fake = tmp_path / "gapo_lite" / "x" / "y.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("from . import z\nfrom ..answers import parse_choice\ndef f():\n    import gapo_lite.metrics\n")
    found = imports_of(fake, {"gapo_lite.x.z", "gapo_lite.answers", "gapo_lite.metrics"}, tmp_path / "gapo_lite")
    assert found == {"gapo_lite.x.z", "gapo_lite.answers", "gapo_lite.metrics"}


def test_no_import_cycles():
    assert find_cycle(build_graph()) is None


@pytest.mark.parametrize("module", sorted(build_graph()))
def test_imports_point_down_the_layers(module):
    graph = build_graph()
    upward = [m for m in graph[module] if layer_of(m) > layer_of(module)]
    assert not upward, f"{module} (layer {layer_of(module)}) imports higher layers: {upward}"


def test_rewards_import_nothing_from_eval_or_experiments():
    graph = build_graph()
    bad = {m: sorted(i for i in deps if i.startswith(("gapo_lite.eval", "gapo_lite.lab")))
           for m, deps in graph.items() if m.startswith("gapo_lite.rewards")}
    assert not any(bad.values()), bad


def test_answers_import_nothing_else_from_gapo_lite():
    graph = build_graph()
    for module, deps in graph.items():
        if module.startswith("gapo_lite.answers"):
            assert all(d.startswith("gapo_lite.answers") for d in deps), (module, deps)


def test_importing_rewards_loads_no_eval_or_experiments_module():
    """The same rule at run time, in a fresh interpreter (package __init__ files included)."""
    import subprocess
    import sys

    code = ("import sys, gapo_lite.rewards, gapo_lite.answers, gapo_lite.data; "
            "print(sorted(m for m in sys.modules if m.startswith(('gapo_lite.eval', 'gapo_lite.lab', 'gapo_lite.training'))))")
    env_path = str(PACKAGE.parent)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": env_path, "GAPO_LITE_BACKEND": "transformers"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_library_imports_nothing_from_the_lab():
    """The lab produced the project's figures; a user's import of the library never loads it."""
    graph = build_graph()
    bad = {m: sorted(d for d in deps if d.startswith("gapo_lite.lab")) for m, deps in graph.items() if m.startswith(LIBRARY)}
    assert not any(bad.values()), {m: d for m, d in bad.items() if d}
