"""The regime map's pieces: the threshold curve, the start's re-read pressure, the prediction check, and a quick run."""
import json

import pytest

from lab.regimes import RegimeSettings, _start_summary, format_row, format_table, prediction_record, run_regimes, start_rows, threshold_curve


def test_threshold_curve_by_hand():
    shares, thresholds = threshold_curve(8, -1.0, points=4)
    assert shares[0] == pytest.approx(1 / 8) and shares[-1] == pytest.approx(1.0)
    # d = 1/8 + (7/8) * 2/4 = 0.5625, the rest 0.0625 each: S = 0.5625^2 + 7 * 0.0625^2
    s = 0.5625**2 + 7 * 0.0625**2
    assert thresholds[2] == pytest.approx((2.125 - 0.5625) / (2.125 - s))
    assert thresholds[0] == pytest.approx(1.0)  # uniform: the favourite is average only when always valid
    _, zero = threshold_curve(8, 0.0, points=4)
    assert zero[2] == pytest.approx((1.125 - 0.5625) / (1.125 - s))
    assert all(z < t for z, t in zip(zero[1:-1], thresholds[1:-1]))  # a milder invalid reward lowers the bar


def test_start_summary_rereads_each_prompt_for_the_invalid_reward():
    # two prompts of L = 4: (18, 2, 0, 0) with 1 invalid, and (0, 0, 20, 0) with 4 invalid
    tallies = [{"counts": [18, 2, 0, 0], "invalid": 1}, {"counts": [0, 0, 20, 0], "invalid": 4}]
    measured = {"heldout_jsd": 0.5, "train_jsd": 0.4, "heldout_valid_rate": 0.9, "heldout_pressure": {"lists": [{"tallies": tallies}]}}

    def pressure(v, d, s, r_inv, L=4):
        return (1 - (d - 1 / L)) - (v * (1 + 1 / L - s) + (1 - v) * r_inv)

    for r_inv in (-1.0, 0.0):
        got = _start_summary(measured, r_inv)
        want = (pressure(20 / 21, 0.9, 0.82, r_inv) + pressure(20 / 24, 1.0, 1.0, r_inv)) / 2
        assert got["pressure"] == pytest.approx(want)
        assert got["valid_rate"] == pytest.approx((20 / 21 + 20 / 24) / 2) and got["dominant_share"] == pytest.approx(0.95)
    assert _start_summary({**measured, "heldout_pressure": {"lists": [{"tallies": [{"counts": [0, 0], "invalid": 3}]}]}}, -1.0)["pressure"] == float("inf")


def test_prediction_record():
    start = {"pressure": -0.1, "heldout_jsd": 0.5}
    assert prediction_record(start, {"heldout_jsd": 0.1}) == {"predicted_spread": True, "observed_spread": True, "right": True}
    assert prediction_record(start, {"heldout_jsd": 0.49})["right"] is False  # within the margin: not spread
    assert prediction_record({**start, "pressure": 0.2}, {"heldout_jsd": 0.6})["right"] is True


def test_start_rows_from_a_starts_staged_results():
    """One start's staged results (its measured start, then one entry per RL run) -> one map row per invalid reward."""
    tallies = [{"counts": [18, 2, 0, 0], "invalid": 1}]
    before = {"heldout_jsd": 0.5, "train_jsd": 0.4, "heldout_valid_rate": 0.95, "heldout_pressure": {"lists": [{"tallies": tallies}]}}
    after = {"heldout_jsd": 0.1, "train_jsd": 0.2, "heldout_valid_rate": 0.97, "train_valid_rate": 0.98, "heldout_unique": 7.0}
    rows = start_rows({"before": before, "gapo": after, "gapo_inv0": {**after, "heldout_jsd": 0.49}}, 600, 0.65)
    assert [r["invalid_reward"] for r in rows] == [-1.0, 0.0]
    assert rows[0]["start_name"] == "start_copy600_first0.65" and rows[0]["copy_steps"] == 600 and rows[0]["first_share_target"] == 0.65
    assert rows[0]["start"] == _start_summary(before, -1.0) and rows[1]["start"] == _start_summary(before, 0.0)
    assert set(rows[0]["after"]) == {"heldout_jsd", "train_jsd", "heldout_valid_rate", "train_valid_rate"}
    assert rows[0]["observed_spread"] and not rows[1]["observed_spread"]  # 0.5 -> 0.49 is within the margin
    assert format_row(rows[0]).startswith("  600   0.65     -1 |")
    assert len(start_rows({"before": before, "gapo": after}, 250, 0.4)) == 1  # a start without the invalid_reward = 0 run


@pytest.mark.slow
def test_quick_run_writes_results_and_plot(tmp_path):
    results = run_regimes(tmp_path, RegimeSettings.quick())
    s = RegimeSettings.quick()
    # every start runs with invalid reward -1; the middle collapse level also with 0
    expected = len(s.copy_steps) * len(s.first_shares) + len(s.copy_steps)
    assert len(results["rows"]) == expected == results["prediction_total"]
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["prediction_right"] == sum(r["right"] for r in saved["rows"])
    assert (tmp_path / "regimes.png").read_bytes()[:4] == b"\x89PNG"
    assert "predicted the outcome in" in format_table(results)
