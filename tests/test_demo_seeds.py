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


def test_targets_follow_the_figures():
    def fake(jsd, valid):
        return {"heldout_jsd": jsd, "heldout_valid_rate": valid}

    results = {"before": fake(0.5, 0.9), "gapo": fake(0.05, 0.97), "grpo_baseline": fake(0.6, 0.99), "wall_seconds": 500}
    assert all(demo_seeds.targets(results).values())
    results["gapo"] = fake(0.12, 0.97)
    t = demo_seeds.targets(results)
    assert not t["gapo_heldout_jsd_below_0.1"] and t["gapo_heldout_valid_rate_at_least_0.95"]
    results["wall_seconds"] = 700
    assert not demo_seeds.targets(results)["wall_seconds_at_most_600"]
