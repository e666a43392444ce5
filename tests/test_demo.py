"""The demo's bookkeeping: targets checked on the figures, table layout, settings overrides."""
import argparse

import pytest

from gapo_lite.demo import DemoSettings, format_table, run, targets


def fake(jsd, valid):
    row = {"heldout_jsd": jsd, "heldout_valid_rate": valid, "heldout_unique": 5.0, "heldout_first_share": 0.5,
           "heldout_position_shares": [0.5] + [0.5 / 7] * 7, "train_jsd": jsd, "train_valid_rate": valid}
    return {**row, "temperature_1": dict(row)}


def test_targets_follow_the_figures():
    results = {"before": fake(0.5, 0.9), "gapo": fake(0.05, 0.97), "grpo_baseline": fake(0.6, 0.99), "wall_seconds": 500}
    assert all(targets(results).values())
    results["gapo"] = fake(0.12, 0.97)
    t = targets(results)
    assert not t["gapo_heldout_jsd_below_0.1"] and t["gapo_heldout_valid_rate_at_least_0.95"]
    results["wall_seconds"] = 700
    assert not targets(results)["wall_seconds_at_most_600"]


def test_table_has_both_temperatures_and_all_models():
    table = format_table({"before": fake(0.5, 0.9), "gapo": fake(0.05, 0.97), "grpo_baseline": fake(0.6, 0.99)})
    assert "held-out JSD (T=0.7)" in table and "held-out JSD (T=1)" in table
    assert "GAPO" in table and "GRPO + validity reward" in table and "0.050" in table


def test_unknown_demo_setting_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="unknown demo setting 'bogus'"):
        run(argparse.Namespace(quick=True, overrides=["bogus=1"], out=str(tmp_path)))


def test_quick_settings_are_small():
    q = DemoSettings.quick()
    assert q.rl_steps < DemoSettings().rl_steps and q.eval_samples < DemoSettings().eval_samples
