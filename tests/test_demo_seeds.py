"""The seed benchmark's table: one row per seed, mean and sample sd computed by hand, missed targets named."""
import importlib.util
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location("demo_seeds", Path(__file__).resolve().parents[1] / "benchmarks" / "demo_seeds.py")
demo_seeds = importlib.util.module_from_spec(spec)
spec.loader.exec_module(demo_seeds)


def result(before, gapo, valid, base, wall, missed=()):
    targets = {"gapo_heldout_jsd_below_0.1": True, "wall_seconds_at_most_600": True}
    targets.update({k: False for k in missed})
    return {"before": {"heldout_jsd": before, "heldout_valid_rate": 0.99}, "gapo": {"heldout_jsd": gapo, "heldout_valid_rate": valid},
            "grpo_baseline": {"heldout_jsd": base}, "wall_seconds": wall, "targets": targets}


def test_seed_table_by_hand():
    table = demo_seeds.seed_table({0: result(0.4, 0.08, 0.97, 0.45, 500), 1: result(0.36, 0.12, 0.96, 0.41, 560, ["gapo_heldout_jsd_below_0.1"])})
    lines = table.splitlines()
    assert lines[2].split()[:3] == ["0", "0.400", "0.080"] and lines[2].endswith("all met")
    assert lines[3].endswith("MISSED: gapo_heldout_jsd_below_0.1")
    mean = lines[4].split()
    sd = lines[5].split()
    assert mean[0] == "mean" and float(mean[2]) == pytest.approx(0.10) and float(mean[6]) == pytest.approx(530.0)
    # sample sd of (0.08, 0.12) = 0.02 * sqrt(2) = 0.028; of (500, 560) = 42.426
    assert float(sd[2]) == pytest.approx(0.028, abs=5e-4) and float(sd[6]) == pytest.approx(42.426, abs=5e-4)


def test_time_table_by_hand():
    r0 = {**result(0.4, 0.08, 0.97, 0.45, 500), "stage_seconds": {"pretrain": 40.0, "gapo": 30.0, "grpo_baseline": 25.0},
          "command_seconds": 110.0, "terminal_lines": 31}
    r1 = {**r0, "stage_seconds": {"pretrain": 50.0, "gapo": 34.0, "grpo_baseline": 27.0}, "command_seconds": 118.0, "terminal_lines": 31}
    lines = demo_seeds.seed_table({0: r0, 1: r1}, demo_seeds.TIMES, targets_column=False).splitlines()
    assert lines[0].split() == ["seed", "pretrain", "s", "GAPO", "s", "baseline", "s", "command", "s", "lines"]
    assert lines[2].split() == ["0", "40.000", "30.000", "25.000", "110.000", "31.000"] and "all met" not in lines[2]
    assert [float(v) for v in lines[4].split()[1:]] == [45.0, 32.0, 26.0, 114.0, 31.0]


def test_targets_follow_the_figures():
    def fake(jsd, valid):
        return {"heldout_jsd": jsd, "heldout_valid_rate": valid}

    results = {"before": fake(0.5, 0.9), "gapo": fake(0.05, 0.97), "grpo_baseline": fake(0.6, 0.99), "wall_seconds": 500}
    assert all(demo_seeds.targets(results).values())
    results["gapo"] = fake(0.12, 0.97)
    t = demo_seeds.targets(results)
    assert not t["gapo_heldout_jsd_below_0.1"] and t["gapo_heldout_valid_rate_at_least_0.95"]
    results["wall_seconds"] = 700
    assert not demo_seeds.targets(results)["wall_seconds_at_most_600"]  # a record from before the command was timed
    results["command_seconds"] = 110  # timed as a command (issue 56): two minutes, imports and plots included
    t = demo_seeds.targets(results)
    assert t["command_seconds_at_most_120"] and "wall_seconds_at_most_600" not in t
    results["command_seconds"] = 121
    assert not demo_seeds.targets(results)["command_seconds_at_most_120"]
