"""The README and docs/ cannot drift: their python blocks run, the outputs they show are checked, every figure
names the command that printed it, relative links resolve, and `make bench` runs every benchmark they list."""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")), "notebooks/README.md"]
TEXT = {page: (ROOT / page).read_text(encoding="utf-8") for page in PAGES}
README = TEXT["README.md"]
ALL = "\n".join(TEXT.values())


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


BLOCKS = [(page, i) for page in PAGES for i in range(len(python_blocks(TEXT[page])))]


@pytest.mark.parametrize(("page", "index"), BLOCKS, ids=[f"{p}-{i}" for p, i in BLOCKS])
def test_python_block_runs_and_shows_true_outputs(page, index):
    checks = run_block(python_blocks(TEXT[page])[index])
    for line, value, shown in checks:
        assert matches(value, shown), f"{page} python block {index}, line {line}: shows {shown!r}, the code gives {value!r}"


def test_docs_have_python_blocks_with_shown_outputs():
    """The reward and the diagnostic examples live in docs/reward.md and show their outputs."""
    assert any(shown_outputs(block) for block in python_blocks(TEXT["docs/reward.md"]))


def test_reward_example_is_checked():
    """The frequency reward example shows its output, so the test above compares it."""
    assert any(shown_outputs(block) for block in python_blocks(README))


def make_target(name: str) -> str:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    match = re.search(rf"^{name}:.*\n((?:\t.*\n)+)", makefile, flags=re.MULTILINE)
    assert match, f"no `{name}` target in the Makefile"
    return match.group(1)


def test_make_bench_runs_every_benchmark_the_docs_list():
    listed = set(re.findall(r"benchmarks/(\w+\.py)", ALL))
    present = {p.name for p in (ROOT / "benchmarks").glob("*.py")}
    ran = set(re.findall(r"benchmarks/(\w+\.py)", make_target("bench")))
    assert listed <= present, f"the README lists missing benchmarks: {sorted(listed - present)}"
    assert present <= ran, f"`make bench` skips: {sorted(present - ran)}"


def test_make_test_lints_before_pytest():
    recipe = make_target("lint")
    assert "ruff check gapo_lite lab tests recipes benchmarks scripts" in recipe
    assert re.search(r"^test: .*\blint\b", (ROOT / "Makefile").read_text(encoding="utf-8"), flags=re.MULTILINE)


@pytest.mark.parametrize("page", PAGES)
def test_page_names_no_missing_files(page):
    """Every repository path a page names in backticks exists (e.g. no deepspeed yaml that is not there)."""
    text = TEXT[page]
    names = set(re.findall(r"`((?:gapo_lite|recipes|benchmarks|scripts|tests|notebooks|docs)/[\w./-]+)`", text))
    names |= set(re.findall(r"\b([\w-]+\.ya?ml)\b", text)) - {"config.yaml"}
    missing = sorted(n for n in names if not (ROOT / n).exists() and not re.search(r"\b[A-Z]{2,}\b", n))  # NAME: a placeholder
    assert not missing, missing


def shell_lines(markdown: str) -> list[str]:
    """Every command line of the README's ```bash blocks (comments stripped)."""
    blocks = re.findall(r"^```bash\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)
    return [line.split("#", 1)[0].strip() for block in blocks for line in block.splitlines() if line.split("#", 1)[0].strip()]


def assert_command_exists(line: str) -> None:
    """The recipes, modules, scripts, make targets and gapo-lite subcommands a command line names exist."""
    import importlib.util

    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for recipe in re.findall(r"--recipe (\w+)(?!\.py)\b", line):
        assert (ROOT / "recipes" / f"{recipe}.py").is_file(), line
    for module in re.findall(r"(?:^|\s)-m ([\w.]+)", line):
        assert importlib.util.find_spec(module) is not None, line
    for script in re.findall(r"(?:python|bash) ((?:recipes|benchmarks|scripts)/[\w./-]+)", line):
        assert (ROOT / script).is_file(), line
    for target in re.findall(r"(?:^|\s)make (\w+)", line):
        assert re.search(rf"^{target}:", makefile, flags=re.MULTILINE), line
    for command in re.findall(r"gapo-lite (\w+)", line):
        assert command in {"demo", "train", "plan", "eval"}, line


@pytest.mark.parametrize("page", PAGES)
def test_commands_name_things_that_exist(page):
    """Recipes, modules, scripts and make targets named in a page's shell examples exist."""
    for line in shell_lines(TEXT[page]):
        assert_command_exists(line)


def test_readme_has_commands():
    assert shell_lines(README)


def test_readme_train_commands_have_valid_overrides():
    """Every ``--set`` of a README ``gapo-lite train`` example parses against its recipe's config."""
    from gapo_lite.overrides import apply_overrides
    from gapo_lite.training.recipes import load_recipe_file

    checked = 0
    for line in shell_lines(ALL):
        recipe = re.search(r"train --recipe (\w+)\b(?!\.py)", line)
        sets = re.findall(r"--set (\S+)", line)
        if recipe and sets:
            apply_overrides(load_recipe_file(recipe.group(1)).config, sets, what="TrainConfig key")
            checked += 1
    assert checked >= 2


# --- figures name the command that printed them; links resolve -------------------------------------------------

PRINTED_BY = re.compile(r"(?i)\b(?:printed|drawn) by\s+`([^`]+)`")


def figures(markdown: str) -> list[tuple[int, int, str]]:
    """(first line, last line, kind) of every figure: an image, a bare ``` block (printed output), a markdown
    table with a number alone in a cell (a measured table)."""
    lines = markdown.splitlines()
    found, i = [], 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            if line.strip() == "```":
                found.append((i, end, "output"))
            i = end + 1
            continue
        if re.match(r"!\[[^\]]*\]\(", line):
            found.append((i, i, "image"))
        elif line.startswith("|"):
            end = i
            while end + 1 < len(lines) and lines[end + 1].startswith("|"):
                end += 1
            if any(re.search(r"\|\s*\**-?\d+\.\d+\**\s*(?:\(|\|)", row) for row in lines[i + 2 : end + 1]):
                found.append((i, end, "table"))
            i = end
        i += 1
    return found


def test_the_figure_finder_sees_tables_outputs_and_images():
    text = "a\n\n```\nx  0.5\n```\n\n![p](results/x.png)\n\n| a | b |\n|---|---|\n| x | 0.31 |\n\n| a |\n|---|\n| text |\n\n```text\nlayout\n```\n"
    assert [kind for _, _, kind in figures(text)] == ["output", "image", "table"]


@pytest.mark.parametrize("page", PAGES)
def test_every_figure_names_the_command_that_printed_it(page):
    """Each printed table, output block and plot has, within a few lines before (or just after) it, "printed by
    `command`" or "drawn by `command`", and that command names things that exist."""
    lines = TEXT[page].splitlines()
    for first, last, kind in figures(TEXT[page]):
        near = "\n".join(lines[max(0, first - 8) : first] + lines[last + 1 : last + 4])
        commands = PRINTED_BY.findall(near)
        assert commands, f"{page}:{first + 1}: a {kind} with no 'printed by `command`' / 'drawn by `command`' next to it"
        for command in commands:
            assert_command_exists(command)


LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    out = set()
    for heading in re.findall(r"^#+ (.+)$", markdown, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        out.add(slug)
    return out


@pytest.mark.parametrize("page", PAGES)
def test_relative_links_resolve(page):
    """Every relative link (and its #anchor, for markdown targets) points at something in the repository."""
    base = (ROOT / page).parent
    broken = []
    for target in LINK.findall(TEXT[page]):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        resolved = (base / path).resolve() if path else ROOT / page
        if not resolved.exists():
            broken.append(target)
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved.read_text(encoding="utf-8")):
            broken.append(target)
    assert not broken, f"{page}: broken links {broken}"


def test_docs_index_lists_every_page():
    for page in PAGES:
        if page.startswith("docs/"):
            assert f"]({page})" in README, f"the README's docs index misses {page}"
