"""The lists suite's mode-pressure reading reaches the report: one verdict sentence per variant and a per-list table."""
from gapo_lite.eval.list_suite import pressure_by_prompt
from gapo_lite.eval.report import headline, mode_pressure_lines


def _samples(list_id, order, choices):
    return [{"list_id": list_id, "order": order, "choice": c} for c in choices]


def test_report_lines_say_whether_gapo_spreads():
    items = ["A", "B", "C", "D"]
    good = pressure_by_prompt([{"list_id": "l0", "items": items}], _samples("l0", 0, ["A"] * 18 + ["B"] * 2 + [None]))
    bad = pressure_by_prompt([{"list_id": "l0", "items": items}], _samples("l0", 0, ["A"] * 18 + ["B"] * 2 + [None] * 6))
    lines = mode_pressure_lines({"base": {"pressure": bad}, "gapo": {"pressure": good}})
    text = "\n".join(lines)
    assert "**base** (0/1 prompts with negative pressure): GAPO is expected to SHARPEN" in text
    assert "**gapo** (1/1 prompts with negative pressure): GAPO is expected to spread" in text
    # per-list rows carry the hand-checkable figures: v = 20/26 = 0.769 for the bad variant
    assert "| l0 | 0.769 | 0.900 |" in text
    suite = {"mean_jsd": 0.4, "mean_valid_rate": 0.9, "mean_entropy": 0.5, "position_tv": 0.3, "pressure": bad}
    rows = {name: value for name, value, _ in headline({"lists": suite})}
    assert rows["Lists: mode pressure (< 0: GAPO spreads)"] == bad["mean"]["pressure"] > 0
