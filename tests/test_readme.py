"""The README cannot drift: its python blocks run, the outputs they show are checked, and `make bench`
runs every benchmark it lists."""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def python_blocks(markdown: str) -> list[str]:
    """The body of every ```python fenced block, in order."""
    return re.findall(r"^```python\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)


def shown_outputs(source: str) -> dict[int, str]:
    """Line number -> a trailing comment that is a Python literal (an output the README shows)."""
    shown: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            text = tok.string[1:].strip()
            try:
                ast.literal_eval(text)
            except (ValueError, SyntaxError):
                continue
            shown[tok.start[0]] = text
    return shown


def matches(actual: object, shown: object) -> bool:
    """``actual`` equals the ``shown`` literal, floats compared at the precision shown (0.667 ~ 2/3)."""
    if isinstance(shown, float):
        decimals = len(repr(shown).split(".")[1]) if "." in repr(shown) else 0
        return isinstance(actual, (int, float)) and abs(actual - shown) <= 0.5 * 10**-decimals + 1e-12
    if isinstance(shown, (list, tuple)):
        return isinstance(actual, (list, tuple)) and len(actual) == len(shown) and all(matches(a, s) for a, s in zip(actual, shown))
    if isinstance(shown, dict):
        return isinstance(actual, dict) and actual.keys() == shown.keys() and all(matches(actual[k], v) for k, v in shown.items())
    return actual == shown


def run_block(source: str) -> list[tuple[int, object, object]]:
    """Execute a block statement by statement; (line, value, shown) for every expression with a shown output."""
    shown = shown_outputs(source)
    namespace: dict[str, object] = {"__name__": "readme"}
    checks = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Expr) and node.end_lineno in shown:
            value = eval(compile(ast.Expression(node.value), "README.md", "eval"), namespace)
            checks.append((node.end_lineno, value, ast.literal_eval(shown[node.end_lineno])))
        else:
            exec(compile(ast.Module([node], type_ignores=[]), "README.md", "exec"), namespace)
    return checks


def test_the_checker_catches_a_wrong_output():
    checks = run_block("x = 2 / 3\nx  # 0.667\n[x, 1.0]  # [0.833, 1.0]\n")
    assert [matches(value, shown) for _, value, shown in checks] == [True, False]
    assert shown_outputs("y = 1  # a TRL reward function\n") == {}


def test_readme_has_python_blocks():
    assert python_blocks(README), "the README lost its python examples"


@pytest.mark.parametrize("index", range(len(python_blocks(README))))
def test_readme_python_block_runs_and_shows_true_outputs(index):
    checks = run_block(python_blocks(README)[index])
    for line, value, shown in checks:
        assert matches(value, shown), f"README python block {index}, line {line}: shows {shown!r}, the code gives {value!r}"


def test_reward_example_is_checked():
    """The frequency reward example shows its output, so the test above compares it."""
    assert any(shown_outputs(block) for block in python_blocks(README))


def make_target(name: str) -> str:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    match = re.search(rf"^{name}:.*\n((?:\t.*\n)+)", makefile, flags=re.MULTILINE)
    assert match, f"no `{name}` target in the Makefile"
    return match.group(1)


def test_make_bench_runs_every_benchmark_the_readme_lists():
    listed = set(re.findall(r"benchmarks/(\w+\.py)", README))
    present = {p.name for p in (ROOT / "benchmarks").glob("*.py")}
    ran = set(re.findall(r"benchmarks/(\w+\.py)", make_target("bench")))
    assert listed <= present, f"the README lists missing benchmarks: {sorted(listed - present)}"
    assert present <= ran, f"`make bench` skips: {sorted(present - ran)}"


def test_make_test_lints_before_pytest():
    recipe = make_target("lint")
    assert "ruff check gapo_lite tests recipes benchmarks scripts" in recipe
    assert re.search(r"^test: .*\blint\b", (ROOT / "Makefile").read_text(encoding="utf-8"), flags=re.MULTILINE)


def test_readme_names_no_missing_files():
    """Every repository path the README names in backticks exists (e.g. no deepspeed yaml that is not there)."""
    names = set(re.findall(r"`((?:gapo_lite|recipes|benchmarks|scripts|tests|notebooks|docs)/[\w./-]+)`", README))
    names |= set(re.findall(r"\b([\w-]+\.ya?ml)\b", README)) - {"config.yaml"}
    missing = sorted(n for n in names if not (ROOT / n).exists() and not re.search(r"\b[A-Z]{2,}\b", n))  # NAME: a placeholder
    assert not missing, missing


def shell_lines(markdown: str) -> list[str]:
    """Every command line of the README's ```bash blocks (comments stripped)."""
    blocks = re.findall(r"^```bash\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)
    return [line.split("#", 1)[0].strip() for block in blocks for line in block.splitlines() if line.split("#", 1)[0].strip()]


def test_readme_commands_name_things_that_exist():
    """Recipes, modules, scripts and make targets named in the README's shell examples exist."""
    import importlib.util

    lines = shell_lines(README)
    assert lines
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for line in lines:
        for recipe in re.findall(r"--recipe (\w+)", line):
            assert (ROOT / "recipes" / f"{recipe}.py").is_file(), line
        for module in re.findall(r"(?:^|\s)-m ([\w.]+)", line):
            assert importlib.util.find_spec(module) is not None, line
        for script in re.findall(r"(?:python|bash) ((?:recipes|benchmarks|scripts)/[\w./-]+)", line):
            assert (ROOT / script).is_file(), line
        for target in re.findall(r"^make (\w+)", line):
            assert re.search(rf"^{target}:", makefile, flags=re.MULTILINE), line


def test_readme_train_commands_have_valid_overrides():
    """Every ``--set`` of a README ``gapo-lite train`` example parses against its recipe's config."""
    from gapo_lite.overrides import apply_overrides
    from gapo_lite.training.recipes import load_recipe_file

    checked = 0
    for line in shell_lines(README):
        recipe = re.search(r"train --recipe (\w+)", line)
        sets = re.findall(r"--set (\S+)", line)
        if recipe and sets:
            apply_overrides(load_recipe_file(recipe.group(1)).config, sets, what="TrainConfig key")
            checked += 1
    assert checked >= 2
