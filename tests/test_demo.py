"""The demo's bookkeeping: its reading of the figures, table layout, settings overrides, curves, start line."""
import argparse
import json

import pytest

from gapo_lite.demo.plots import plot_curves, read_curves
from gapo_lite.demo.run import DemoSettings, format_table, reading, run, start_line
from gapo_lite.eval.list_suite import pressure_by_prompt
from lab.regimes import RegimeSettings


def fake(jsd, valid):
    row = {"heldout_jsd": jsd, "heldout_valid_rate": valid, "heldout_unique": 5.0, "heldout_first_share": 0.5,
           "heldout_position_shares": [0.5] + [0.5 / 7] * 7, "train_jsd": jsd, "train_valid_rate": valid}
    return {**row, "temperature_1": dict(row)}


def test_reading_follows_the_figures():
    results = {"before": fake(0.5, 0.9), "gapo": fake(0.05, 0.97), "grpo_baseline": fake(0.6, 0.99)}
    assert reading(results) == "GAPO spread it: held-out JSD 0.500 -> 0.050 (valid 0.970); GRPO + validity reward: 0.500 -> 0.600"
    results["gapo"] = fake(0.49, 0.97)  # within the margin
    assert reading(results).startswith("GAPO did not spread it: held-out JSD 0.500 -> 0.490")


def test_regime_map_runs_the_demos_recipe():
    """The shared parts are one definition: every field the regime map does not set itself is the demo's."""
    import dataclasses

    own = {"copy_steps", "copy_head", "collapse_params", "first_shares", "zero_invalid_share", "rl_steps", "eval_temperatures", "threads"}
    demo, regimes = dataclasses.asdict(DemoSettings()), dataclasses.asdict(RegimeSettings())
    shared = (set(demo) & set(regimes)) - own
    assert {"freeze_embeddings_in_collapse", "rl_freeze_embeddings", "pretrain_steps", "embedding_std", "copy_lr", "rl_lr"} <= shared
    assert {k: regimes[k] for k in shared} == {k: demo[k] for k in shared}
    assert set(regimes) - set(demo) == {"first_shares", "zero_invalid_share"} and set(demo) - set(regimes) == {"first_share"}


def test_table_has_both_temperatures_and_all_models():
    table = format_table({"before": fake(0.5, 0.9), "gapo": fake(0.05, 0.97), "grpo_baseline": fake(0.6, 0.99)})
    assert "held-out JSD (T=0.7)" in table and "held-out JSD (T=1)" in table
    assert "GAPO" in table and "GRPO + validity reward" in table and "0.050" in table


def test_unknown_demo_setting_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="unknown demo setting 'bogus'"):
        run(argparse.Namespace(quick=True, overrides=["bogus=1"], out=str(tmp_path)))


def test_curves_read_from_metrics_and_plotted(tmp_path):
    rows = [
        {"step": 1, "loss": 0.1, "gapo_frequency/distinct_per_group": 2.5, "gapo_frequency/group_entropy": 0.9, "gapo_frequency/valid_rate": 0.97},
        {"step": 2, "train_runtime": 3.0},  # a row without the hook's metrics is skipped
        {"step": 3, "gapo_frequency/distinct_per_group": 4.0, "gapo_frequency/group_entropy": 1.7, "gapo_frequency/valid_rate": 0.95},
    ]
    gapo = tmp_path / "gapo.jsonl"
    gapo.write_text("".join(json.dumps(r) + "\n" for r in rows))
    base = tmp_path / "base.jsonl"
    base.write_text(json.dumps({"step": 1, "validity/distinct_per_group": 1.0, "validity/group_entropy": 0.0, "validity/valid_rate": 1.0}) + "\n")
    series = read_curves(gapo)
    assert series["distinct_per_group"] == ([1, 3], [2.5, 4.0])
    assert series["group_entropy"] == ([1, 3], [0.9, 1.7])
    assert series["valid_rate"] == ([1, 3], [0.97, 0.95])
    assert read_curves(base)["valid_rate"] == ([1], [1.0])
    out = tmp_path / "curves.png"
    plot_curves({"GAPO": gapo, "GRPO + validity reward": base}, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def _samples(list_id, order, choices):
    return [{"list_id": list_id, "order": order, "choice": c} for c in choices]


def test_start_line_reads_the_pressure_per_prompt_by_hand():
    items = ["A", "B", "C", "D"]
    # order 0 favours A, order 1 favours B (a first-position habit): pooled over orders A and B look balanced,
    # but each prompt (one GAPO group) has a favourite at 0.9 of its valid answers
    samples = _samples("l0", 0, ["A"] * 18 + ["B"] * 2 + [None]) + _samples("l0", 1, ["B"] * 18 + ["C"] * 2 + ["Z"])
    p = pressure_by_prompt([{"list_id": "l0", "items": items}], samples)
    # per prompt: v = 20/21, d = 0.9, S = 0.81 + 0.01 = 0.82, L = 4 (threshold 1.35 / 1.43 = 0.944 < v)
    v, d, S, L = 20 / 21, 0.9, 0.82, 4
    pressure = (1 - (d - 1 / L)) - (v * (1 + 1 / L - S) + (1 - v) * -1)
    threshold = (2 + 1 / L - d) / (2 + 1 / L - S)
    assert p["mean"]["valid_rate"] == pytest.approx(v) and p["mean"]["dominant_share"] == pytest.approx(d)
    assert p["mean"]["pressure"] == pytest.approx(pressure) and p["mean"]["threshold"] == pytest.approx(threshold)
    assert p["lists"][0]["tallies"] == [{"counts": [18, 2, 0, 0], "invalid": 1}, {"counts": [0, 18, 2, 0], "invalid": 1}]
    line = start_line({"heldout_pressure": p}, 0.7)
    assert pressure < 0 and p["prompts_spreading"] == 2
    assert "2/2 prompts with negative pressure" in line and "expected to spread" in line and f"{threshold:.3f}" in line
    # many invalid answers: the same favourite is now reinforced
    worse = _samples("l0", 0, ["A"] * 18 + ["B"] * 2 + [None] * 3)
    q = pressure_by_prompt([{"list_id": "l0", "items": items}], worse)
    assert q["mean"]["pressure"] > 0 and "SHARPEN" in start_line({"heldout_pressure": q}, 0.7)
    nothing = pressure_by_prompt([{"list_id": "l0", "items": items}], _samples("l0", 0, [None, "Z"]))
    assert nothing["mean"] is None and "nothing to spread" in start_line({"heldout_pressure": nothing}, 0.7)


NOISE = ("{'loss'", "Failed to load", "_pytree", "Writing model shards", "Loading weights", "gapo-lite: loading", "completions per forward")


def test_a_quick_demo_prints_a_screenful(tmp_path):
    """`gapo-lite demo --quick` in a fresh process (the libraries' noise comes at import): a bar and a closing line
    per stage, then the table, in at most 60 lines; the per-step figures are in the runs' metrics.jsonl."""
    import subprocess
    import sys
    from pathlib import Path

    out = tmp_path / "demo"
    done = subprocess.run([sys.executable, "-m", "gapo_lite.cli", "demo", "--quick", "--out", str(out)], capture_output=True, timeout=600,
                          cwd=Path(__file__).resolve().parents[1])
    stdout, stderr = done.stdout.decode(), done.stderr.decode()  # bytes first: text mode would turn a bar's carriage returns into lines
    assert done.returncode == 0, stderr[-3000:]
    printed = stdout + stderr
    assert (done.stdout + done.stderr).count(b"\n") <= 60, printed
    assert not [n for n in NOISE if n in printed], printed
    assert "held-out JSD (T=0.7)" in stdout and "spread it: held-out JSD" in stdout  # the table and its reading
    for label in ("pretraining: collapse", "GAPO", "GRPO + validity reward"):  # the bars, on stderr
        assert f"{label}: 100%" in stderr, label
    stage_lines = [line for line in stdout.splitlines() if line.startswith("      held-out JSD")]
    assert len(stage_lines) == 3, stdout  # the start, GAPO, the baseline: each stage ends with its line
    steps = DemoSettings.quick().rl_steps
    for run_name in ("gapo", "grpo_baseline"):
        rows = [json.loads(line) for line in (out / run_name / "metrics.jsonl").read_text().splitlines()]
        assert [r["step"] for r in rows if any(k.endswith("/valid_rate") for k in r)] == list(range(1, steps + 1))
    assert "gapo-lite: loading" in (out / "log.txt").read_text()  # what the libraries printed is kept in the run's folder
