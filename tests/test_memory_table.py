"""The memory table of docs/gpu.md is what `python scripts/memory_table.py` prints from `gapo-lite plan`."""
from __future__ import annotations

import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_table_is_what_the_cli_prints():
    script = runpy.run_path(str(ROOT / "scripts" / "memory_table.py"), run_name="memory_table")
    readme = (ROOT / "docs" / "gpu.md").read_text()
    assert script["readme_table"](readme) == script["render"]()


def test_rows_come_from_the_cli(capsys):
    """One row checked against `gapo-lite plan --json` read here, independently of the script's formatting."""
    import json

    from gapo_lite.cli import main

    script = runpy.run_path(str(ROOT / "scripts" / "memory_table.py"), run_name="memory_table")
    label, argv = script["ROWS"][0]
    assert main(["plan", *argv, "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    row = next(line for line in script["render"]().splitlines() if line.startswith(f"| {label} |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == f"{plan['terms']['weights'] / 2**30:.2f}"
    assert cells[8] == f"{plan['estimated_peak_bytes'] / 2**30:.2f}"
    assert cells[9].startswith(f"fits: {plan['chunk_size']} completions per pass")
