"""The package's import graph: no cycles, and arrows only point down the layers (parsed from the AST)."""
from __future__ import annotations

import ast
import functools
import os
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gapo_lite"

# Lower layers never import higher ones. Modules not listed take their package's layer.
LAYERS: list[set[str]] = [
    {"gapo_lite._bootstrap", "gapo_lite.answers", "gapo_lite.metrics", "gapo_lite.overrides", "gapo_lite.errors", "gapo_lite.probes",
     "gapo_lite.batching", "gapo_lite.upstream", "gapo_lite.quiet"},
    {"gapo_lite.data", "gapo_lite.sampling", "gapo_lite.gguf", "gapo_lite.runplan"},
    {"gapo_lite.rewards", "gapo_lite.diagnostics"},  # the diagnostic reads the reward's own formula
    {"gapo_lite.models", "gapo_lite.memory"},
    {"gapo_lite.training", "gapo_lite.eval"},
    {"gapo_lite.demo"},  # the main job: the tiny model, its pretraining, the staged runner
    {"gapo_lite", "gapo_lite.cli"},
]
LIBRARY = ("gapo_lite.answers", "gapo_lite.rewards", "gapo_lite.data", "gapo_lite.metrics", "gapo_lite.diagnostics", "gapo_lite.models",
           "gapo_lite.memory", "gapo_lite.training", "gapo_lite.eval", "gapo_lite.sampling", "gapo_lite.gguf", "gapo_lite.errors",
           "gapo_lite.overrides", "gapo_lite._bootstrap", "gapo_lite.batching", "gapo_lite.runplan", "gapo_lite.probes", "gapo_lite.upstream",
           "gapo_lite.quiet")


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> set[str]:
    return {module_name(p) for p in PACKAGE.rglob("*.py")}


def imports_of(path: Path, modules: set[str], root: Path = PACKAGE) -> set[str]:
    """Every gapo_lite module ``path`` imports, at top level or inside a function, or names in a string (what
    ``importlib.import_module("gapo_lite.x")`` would load).

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
        # a dotted module name in a string; not the module's own package (a logger's name, importlib.resources' anchor)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in modules and not name.startswith(node.value):
            found.add(node.value)
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
    fake.write_text("from . import z\nfrom ..answers import parse_choice\ndef f():\n    import gapo_lite.metrics\n"
                    "    importlib.import_module('gapo_lite.data')\n")
    found = imports_of(fake, {"gapo_lite.x.z", "gapo_lite.answers", "gapo_lite.metrics", "gapo_lite.data"}, tmp_path / "gapo_lite")
    assert found == {"gapo_lite.x.z", "gapo_lite.answers", "gapo_lite.metrics", "gapo_lite.data"}


def test_no_import_cycles():
    assert find_cycle(build_graph()) is None


@pytest.mark.parametrize("module", sorted(build_graph()))
def test_imports_point_down_the_layers(module):
    graph = build_graph()
    upward = [m for m in graph[module] if layer_of(m) > layer_of(module)]
    assert not upward, f"{module} (layer {layer_of(module)}) imports higher layers: {upward}"


def test_rewards_import_nothing_from_eval_or_experiments():
    graph = build_graph()
    bad = {m: sorted(i for i in deps if i.startswith(("gapo_lite.eval", "gapo_lite.demo")))
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
            "print(sorted(m for m in sys.modules if m.startswith(('gapo_lite.eval', 'gapo_lite.demo', 'gapo_lite.training', 'lab'))))")
    env_path = str(PACKAGE.parent)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": env_path, "GAPO_LITE_BACKEND": "transformers"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def names_the_lab(node: ast.AST) -> bool:
    """Whether ``node`` imports the lab (``lab/`` at the repository's root) or names one of its modules in a string."""
    if isinstance(node, ast.Import):
        return any(a.name == "lab" or a.name.startswith("lab.") for a in node.names)
    if isinstance(node, ast.ImportFrom):
        return not node.level and (node.module == "lab" or (node.module or "").startswith("lab."))
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"(gapo_lite\.)?lab(\.\w+)*", node.value) is not None


def test_the_library_imports_nothing_from_the_lab():
    """The lab produced the project's figures; the kit never loads it, by an import statement or by a module name
    in a string (importlib, runpy, a subprocess's ``-m``)."""
    bad = sorted(str(p.relative_to(PACKAGE.parent)) for p in PACKAGE.rglob("*.py") if any(names_the_lab(n) for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))))
    assert not bad, f"the kit names the lab in: {bad}"
    assert not (PACKAGE / "lab").exists(), "the lab lives at the repository's root, not inside the package"


@pytest.mark.parametrize(("source", "names"), [("import lab.smollm2", True), ("from lab import regimes", True), ("importlib.import_module('lab.smollm2')", True),
                                               ("x = 'gapo_lite.lab'", True), ("from . import lab", False), ("label = 'lab results'", False)])
def test_the_lab_check_reads_imports_and_strings(source, names):
    assert any(names_the_lab(n) for n in ast.walk(ast.parse(source))) is names
