"""Every printed table in the README and docs/ is what its command's own formatter prints from the recorded
results in docs/results/ (the demo, the seeds, the regime map, SmolLM2, open-ended, accuracy)."""
import importlib
import importlib.util
import json
from pathlib import Path

import pytest

from gapo_lite.demo.run import format_table

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = ROOT / "docs"
RESULTS = DOCS / "results"


def page(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def recorded_json(name: str):
    """A recorded result in docs/results/."""
    return json.loads((DOCS / "results" / name).read_text())


def measured_at(points, steps: int):
    """The measurement at ``steps`` GAPO steps among a continued run's recorded points (steps, schedule, measured)."""
    return next(m for n, _, m in points if n == steps)


def points_by_seed(name: str):
    """seed -> the recorded points of a continued run's record (``smollm2_report --longer --record``)."""
    return {r["seed"]: r["points"] for r in recorded_json(name)}


def per_seed(measured, key: str) -> str:
    """One figure of each seed's measurement, "seed 0 / seed 1", as the pages quote them."""
    return " / ".join(f"{m[key]:.3f}" for m in measured)


def bf16_minus_fp32(pairs, key: str = "heldout_jsd") -> list[float]:
    """Each RL seed's bf16 - fp32 of one held-out figure, from ``smollm2_report.precision_pairs``."""
    return [p["bf16"][key] - p["fp32"][key] for p in pairs.values()]


def mean_and_se(values) -> tuple[float, float]:
    """The mean and its standard error (sample standard deviation / sqrt(n)), as the pages quote them."""
    import statistics

    return statistics.mean(values), statistics.stdev(values) / len(values) ** 0.5


def seed1_rerun():
    """Seed 1's two-prompt run made again on a fresh machine, and the recorded run it repeats."""
    (rerun,) = recorded_json("smollm2_p2_s1_rerun.json")
    return rerun, next(r for r in recorded_json("smollm2_p2.json") if r["settings"]["seed"] == 1)


RECORDED = recorded_json("demo_seeds.json")


def _demo_seeds():
    spec = importlib.util.spec_from_file_location("demo_seeds", ROOT / "benchmarks" / "demo_seeds.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _seed_table():
    return _demo_seeds().seed_table({int(k): v for k, v in RECORDED.items()})


def test_readme_and_demo_page_show_the_seed0_table_as_printed():
    assert format_table(RECORDED["0"]) in README
    assert format_table(RECORDED["0"]) in page("demo.md")


def test_demo_page_shows_the_seed_table_as_printed():
    assert _seed_table() in page("demo.md")


def test_recorded_targets_follow_the_recorded_figures():
    for seed, r in RECORDED.items():
        recomputed = _demo_seeds().targets({**r, "before": r["before"], "gapo": r["gapo"], "grpo_baseline": r["grpo_baseline"]})
        assert recomputed == r["targets"], f"seed {seed}"


def test_recorded_runs_used_the_demo_defaults():
    """The README's 'seed 0 is make demo's run' holds only if the recorded settings are today's defaults."""
    import dataclasses

    from gapo_lite.demo.run import DemoSettings

    for seed, r in RECORDED.items():
        defaults = json.loads(json.dumps(dataclasses.asdict(DemoSettings(seed=int(seed)))))
        recorded = {k: v for k, v in r["settings"].items() if k in defaults}
        assert recorded == {k: defaults[k] for k in recorded}, f"seed {seed}"
        assert set(recorded) >= {"copy_steps", "first_share", "rl_steps", "pretrain_steps", "seed"}


def test_start_line_in_the_demo_page_is_seed0s():
    assert RECORDED["0"]["start"]["verdict"] in page("demo.md")


def test_regimes_page_shows_the_regime_table_as_printed():
    from lab.regimes import format_table as regime_table

    recorded = recorded_json("regimes.json")
    assert regime_table(recorded) in page("regimes.md")
    assert recorded["prediction_right"] == sum(r["right"] for r in recorded["rows"])


@pytest.mark.parametrize(
    ("recorded_file", "warmup_steps", "rl_steps", "runs"),
    [("smollm2_warm.json", 24, 60, ["gapo", "grpo_baseline"]), ("smollm2_raw.json", 0, 40, ["gapo"]),
     ("smollm2_long.json", 24, 360, ["gapo", "grpo_baseline"])],
)
def test_smollm2_page_shows_each_table_as_printed(recorded_file, warmup_steps, rl_steps, runs):
    from lab.smollm2 import format_table as smollm2_table

    recorded = recorded_json(recorded_file)
    assert smollm2_table(recorded) in page("smollm2.md")
    settings = recorded["settings"]  # the command the page names
    assert f"--out runs/{recorded_file[:-5]}" in page("smollm2.md")
    assert (settings["warmup_steps"], settings["rl_steps"], list(settings["runs"])) == (warmup_steps, rl_steps, runs)


@pytest.mark.parametrize(("module", "recorded_file", "doc"), [("open_ended", "open_ended.json", "open_ended.md"), ("accuracy", "accuracy.json", "accuracy.md")])
def test_miniature_experiment_pages_show_their_tables_as_printed(module, recorded_file, doc):
    formatter = importlib.import_module(f"lab.{module}").format_table
    recorded = recorded_json(recorded_file)
    assert formatter(recorded) in page(doc)
    assert recorded["command"] in page(doc)  # the page names the command that printed it


def test_every_recorded_result_is_shown_by_a_page():
    """No orphan JSON: each file in docs/results/ is linked from a docs page."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in DOCS.glob("*.md")) + README
    orphans = [p.name for p in (DOCS / "results").iterdir() if f"results/{p.name}" not in text]
    assert not orphans, orphans


@pytest.mark.parametrize("name, settings", [
    ("smollm2_spread.json", {"invalid_reward": 0.0, "rl_steps": 250, "num_generations": 16}),
    ("smollm2_t07.json", {"invalid_reward": 0.0, "rl_steps": 300, "num_generations": 32, "rl_temperature": 0.7}),
    ("smollm2_cos.json", {"invalid_reward": 0.0, "rl_steps": 300, "num_generations": 32, "rl_temperature": 0.7,
                          "learning_rate": 4.5e-4, "rl_schedule": "cosine", "precision": "auto"}),
])
def test_smollm2_spreading_run_tables_as_printed(name, settings):
    """Each seed's held-out table, open-suite table and top answers, as smollm2_report prints them."""
    from lab.smollm2 import format_table as smollm2_table
    from lab.smollm2_report import format_open_table, format_top_answers

    recorded = recorded_json(name)
    assert [r["settings"]["seed"] for r in recorded] == [0, 1]
    for r in recorded:
        assert smollm2_table(r) in page("smollm2.md")
        assert format_open_table(r) in page("smollm2.md")
        assert format_top_answers(r) in page("smollm2.md")
        assert {k: r["settings"][k] for k in settings} == settings


def test_smollm2_whole_experiment_times_as_recorded():
    """The cosine run's per-seed wall times on the SmolLM2 page are the recorded ones, each under the hour."""
    recorded = recorded_json("smollm2_cos.json")
    walls = [r["wall_seconds"] for r in recorded]
    assert all(r["complete"] for r in recorded) and max(walls) <= 3600
    assert f"took {walls[0]:.0f} s and {walls[1]:.0f} s wall" in page("smollm2.md")


def test_smollm2_step_benchmark_as_recorded():
    """The step benchmark's tables on the SmolLM2 page are the ones recorded from its output."""
    recorded = (DOCS / "results" / "smollm2_step.txt").read_text(encoding="utf-8").strip()
    assert recorded.startswith("GAPO step, 1 prompt x 16 completions") and recorded in page("smollm2.md")


def test_smollm2_budget_baseline_as_recorded():
    """The lead's budget quotes the baseline's stage time, its held-out JSD and its open suite from its record."""
    from lab.smollm2 import _value

    (base,) = recorded_json("smollm2_budget_baseline.json")
    seconds, run = base["stage_seconds"]["grpo_baseline"], base["grpo_baseline"]
    lead = " ".join(between(page("smollm2.md"), "lead").split())  # the page's line breaks as spaces
    assert f"{seconds:.0f} s for its 150 steps ({seconds / 150:.2f} s a step)" in lead
    assert (f"held-out JSD {run['heldout_jsd']:.3f}, open valid Unique@100 {_value(run, 'open.mean_unique_valid'):.1f} against the start's "
            f"{_value(base['before'], 'open.mean_unique_valid'):.1f}") in lead
    assert run["heldout_jsd"] >= 0.3 and _value(run, "open.mean_unique_valid") <= _value(base["before"], "open.mean_unique_valid")


def test_generation_benchmark_as_recorded():
    """The generation benchmark's tables on the SmolLM2 page are the ones recorded from its output, and the
    sentence that quotes them reads the recorded medians."""
    recorded = (DOCS / "results" / "shared_prefix_generation.txt").read_text(encoding="utf-8").strip()
    assert recorded.startswith("SmolLM2-135M, 2 threads, G = 32") and recorded in page("smollm2.md")
    two_prompts = next(line.split() for line in recorded.splitlines() if line.split()[:1] == ["2"])  # the sampled-length table's
    padded, loop, shared = (cell.removesuffix("s") for cell in two_prompts[1:4])
    assert f"{shared} s a step against {loop} s" in page("smollm2.md") and float(shared) < float(loop) < float(padded)


@pytest.mark.parametrize("name, stage", [("smollm2_longer.json", 250), ("smollm2_t07_longer.json", 300), ("smollm2_p2_longer.json", 300)])
def test_smollm2_longer_tables_as_printed(name, stage):
    """The continued GAPO runs' tables (one per seed), as ``smollm2_report --longer`` prints them."""
    from lab.smollm2_report import format_longer_table

    recorded = recorded_json(name)
    assert [r["seed"] for r in recorded] == [0, 1]
    for r in recorded:
        steps = [n for n, _, _ in r["points"]]
        assert steps[0] == 0 and steps == sorted(steps) and stage in steps
        assert format_longer_table([tuple(point) for point in r["points"]]) in page("smollm2.md")

def test_smollm2_page_lenient_rows_follow_the_recorded_runs():
    """The SmolLM2 page's summary table of the lenient-rule runs (the README's former SmolLM2 table) quotes GAPO's
    600-step points (smollm2_p2_longer.json) and the baseline at 600 steps (smollm2_p2_base.json): held-out JSD
    and valid, open Unique@100 and valid rate."""
    longer = points_by_seed("smollm2_p2_longer.json")
    for r in recorded_json("smollm2_p2_base.json"):
        seed, base = r["settings"]["seed"], r["grpo_baseline"]
        start, gapo = longer[seed][0][2], measured_at(longer[seed], 600)
        row = (f"| {seed} | {start['heldout_jsd']:.3f} -> **{gapo['heldout_jsd']:.3f}** / {base['heldout_jsd']:.3f} "
               f"| {gapo['heldout_valid_rate']:.3f} / {base['heldout_valid_rate']:.3f} "
               f"| {start['open']['mean_unique_valid']:.1f} -> {gapo['open']['mean_unique_valid']:.1f} / {base['open']['mean_unique_valid']:.1f} "
               f"| {start['open']['mean_valid_rate']:.3f} -> {gapo['open']['mean_valid_rate']:.3f} / {base['open']['mean_valid_rate']:.3f} |")
        assert row in page("smollm2.md"), row


def test_smollm2_page_runs_table_follows_the_records():
    """The SmolLM2 page's summary table of GAPO runs (moved from the README): each cell is seed 0 / seed 1's
    held-out JSD from that run's record."""
    def seeds(measured) -> str:
        return per_seed(measured, "heldout_jsd")

    def at(name: str, steps: int) -> str:
        return seeds(measured_at(r["points"], steps) for r in recorded_json(name))

    rows = {
        "1 prompt a step, lr 3e-4, bf16": [seeds(r["gapo"] for r in recorded_json("smollm2_t07.json")), at("smollm2_t07_longer.json", 450), "not run"],
        "1 prompt a step, lr 4.5e-4 cosine, fp32": [seeds(r["gapo"] for r in recorded_json("smollm2_cos.json")), "not run", "not run"],
        "1 prompt a step, lr 3e-4, fp32, the cosine run's starts": [seeds(r["gapo"] for r in recorded_json("smollm2_c3.json")), "not run", "not run"],
        "2 prompts a step, lr 3e-4, fp32, the same starts": [seeds(r["gapo"] for r in recorded_json("smollm2_p2.json")),
                                                             at("smollm2_p2_longer.json", 450), at("smollm2_p2_longer.json", 600)],
    }
    for label, cells in rows.items():
        row = f"| {label} | " + " | ".join(cells) + " |"
        assert row in page("smollm2.md"), row
    baselines = [r["grpo_baseline"]["heldout_jsd"] for name in ("smollm2_t07.json", "smollm2_cos.json", "smollm2_p2.json", "smollm2_p2_base.json")
                 for r in recorded_json(name)]
    seed1 = sorted(f"{b:.3f}" for b in baselines[1::2])
    assert set(f"{b:.3f}" for b in baselines[::2]) == {"0.460"}
    assert f"the baseline, where it ran, 0.460 / {seed1[0]}-{seed1[-1]})" in page("smollm2.md")


@pytest.mark.parametrize("name, prompts_per_step, runs, open_tables", [("smollm2_c3.json", 1, ["gapo"], False),
                                                                      ("smollm2_p2.json", 2, ["gapo", "grpo_baseline"], True)])
def test_smollm2_reruns_from_the_cosine_starts_as_printed(name, prompts_per_step, runs, open_tables):
    """The constant-rate reruns' held-out tables (and open-suite tables where the page shows them), and that
    they started from the cosine run's very starts."""
    from lab.smollm2 import format_table as smollm2_table
    from lab.smollm2_report import format_open_table

    cosine = recorded_json("smollm2_cos.json")
    rerun = recorded_json(name)
    assert len(rerun) == len(cosine) == 2
    for c, r in zip(cosine, rerun):
        assert r["before"]["heldout_jsd"] == c["before"]["heldout_jsd"] and r["settings"]["seed"] == c["settings"]["seed"]
        settings = tuple(r["settings"][k] for k in ("learning_rate", "rl_schedule", "prompts_per_step", "runs"))
        assert settings == (3e-4, None, prompts_per_step, runs)
        assert smollm2_table(r) in page("smollm2.md")
        assert not open_tables or format_open_table(r) in page("smollm2.md")


@pytest.mark.parametrize("name", ["smollm2_cos.json", "smollm2_c3.json", "smollm2_p2.json"])
def test_smollm2_what_was_tried_rows_follow_the_records(name):
    """Each fp32 run's row in the SmolLM2 page's table of what was tried quotes its record."""
    rows = [line for line in page("smollm2.md").splitlines() if line.startswith("| 0, RL at T = 0.7 |") and line.endswith("(fp32) |")]
    for r in recorded_json(name):
        jsd, valid = f"| {r['before']['heldout_jsd']:.3f} -> {r['gapo']['heldout_jsd']:.3f} ", f"| {r['gapo']['heldout_valid_rate']:.3f} "
        seed = f"seed {r['settings']['seed']} (fp32) |"
        assert any(jsd in row and valid in row and row.endswith(seed) for row in rows), (name, jsd, valid, seed)


def test_smollm2_two_prompt_wall_times_as_recorded():
    walls = [r["wall_seconds"] for r in recorded_json("smollm2_p2.json")]
    assert f"whole experiment\n  {walls[0]:.0f} / {walls[1]:.0f} s" in page("smollm2.md")


def test_smollm2_baseline_at_600_steps_as_printed():
    """The two-prompt baseline continued to 600 steps: its tables on the page, from the same starts and with the
    same RL settings as GAPO's 600-step points."""
    from lab.smollm2 import format_table as smollm2_table
    from lab.smollm2_report import format_open_table, format_top_answers

    base = recorded_json("smollm2_p2_base.json")
    gapo = points_by_seed("smollm2_p2_longer.json")
    first = {r["settings"]["seed"]: r["settings"] for r in recorded_json("smollm2_p2.json")}
    assert [r["settings"]["seed"] for r in base] == [0, 1]
    keys = ("invalid_reward", "num_generations", "prompts_per_step", "learning_rate", "rl_temperature", "warmup_steps")
    for r in base:
        seed, s = r["settings"]["seed"], r["settings"]
        assert (s["rl_steps"], s["runs"]) == (600, ["grpo_baseline"]) and 600 in [n for n, _, _ in gapo[seed]]
        assert all(s[k] == first[seed][k] for k in keys)
        assert r["before"]["heldout_jsd"] == gapo[seed][0][2]["heldout_jsd"]  # the same start as GAPO's
        assert smollm2_table(r) in page("smollm2.md") and format_open_table(r) in page("smollm2.md")
    assert format_top_answers(base[0]) in page("smollm2.md")


def test_smollm2_precision_pairs_as_printed():
    """The 40-step precision check: fp32 and bf16 on seeds 0 and 1 from one start, each table on the page, and
    the page's same-seed differences from the record."""
    from lab.smollm2 import format_table as smollm2_table

    recorded = recorded_json("smollm2_precision_c3.json")
    runs = {(r["settings"]["precision"], r["settings"]["seed"]): r for r in recorded}
    assert sorted(runs) == [("bf16", 0), ("bf16", 1), ("fp32", 0), ("fp32", 1)]
    assert len({r["before"]["heldout_jsd"] for r in recorded}) == 1 and all(r["settings"]["rl_steps"] == 40 for r in recorded)
    for r in recorded:
        assert smollm2_table(r) in page("smollm2.md")
    diffs = [runs["fp32", s]["gapo"]["heldout_jsd"] - runs["bf16", s]["gapo"]["heldout_jsd"] for s in (0, 1)]
    assert f"The differences ({diffs[0]:.3f} and {diffs[1]:.3f})" in page("smollm2.md")


def test_smollm2_kl_probe_as_printed():
    """The KL probe: seed 0's two-prompt run continued 300 -> 450 with beta = 0.04, its table on the page and its
    figures against the run without the term (smollm2_p2_longer.json) as the page compares them."""
    from lab.smollm2_report import format_longer_table

    (kl,) = recorded_json("smollm2_p2_kl.json")
    plain = next(r for r in recorded_json("smollm2_p2_longer.json") if r["seed"] == 0)
    assert kl["seed"] == 0 and [n for n, _, _ in kl["points"]] == [0, 300, 450]
    assert kl["points"][1] == next(p for p in plain["points"] if p[0] == 300)  # the shared checkpoint's point
    assert format_longer_table([tuple(point) for point in kl["points"]]) in page("smollm2.md")
    with_kl, without = kl["points"][2][2], measured_at(plain["points"], 450)
    assert f"held-out JSD {with_kl['heldout_jsd']:.3f} against {without['heldout_jsd']:.3f} without it" in page("smollm2.md")
    assert f"{with_kl['open']['mean_valid_rate']:.3f} ({without['open']['mean_valid_rate']:.3f} without it)" in page("smollm2.md")


def test_smollm2_page_start_variation_follows_the_records():
    """The SmolLM2 page's (formerly the README's) two recorded warm-ups per seed (the bf16 result run's and the
    cosine run's starts)."""
    t07, cos = recorded_json("smollm2_t07.json"), recorded_json("smollm2_cos.json")
    a, b = ([f"{r['before']['heldout_jsd']:.3f}" for r in runs] for runs in (t07, cos))
    assert f"held-out JSD {a[0]} and {b[0]}, seed 1's {a[1]} and {b[1]}." in page("smollm2.md")
    rerun, recorded = seed1_rerun()
    assert rerun["before"]["heldout_jsd"] == recorded["before"]["heldout_jsd"] and f"{rerun['before']['heldout_jsd']:.3f}" == b[1]
    assert (f"300 GAPO steps read {rerun['gapo']['heldout_jsd']:.3f} where the recorded run read {recorded['gapo']['heldout_jsd']:.3f}"
            in " ".join(page("smollm2.md").split()))


def test_smollm2_paper_reward_from_450_as_printed():
    """The two-prompt runs continued 450 -> 600 with invalid_reward = -1: their tables on the page, the shared
    300- and 450-step points, and the page's comparison with the 600 steps trained with 0."""
    from lab.smollm2_report import format_longer_table

    switched = recorded_json("smollm2_p2_neg.json")
    plain = points_by_seed("smollm2_p2_longer.json")
    assert [r["seed"] for r in switched] == [0, 1]
    for r in switched:
        assert [n for n, _, _ in r["points"]] == [0, 300, 450, 600]
        assert r["points"][:3] == [p for p in plain[r["seed"]] if p[0] <= 450]  # the shared run up to 450
        assert r["points"][2][2]["trained_invalid_reward"] == 0.0 and r["points"][3][2]["trained_invalid_reward"] == -1.0
        assert format_longer_table([tuple(point) for point in r["points"]]) in page("smollm2.md")
    with_neg = [measured_at(r["points"], 600) for r in switched]
    with_zero = [measured_at(plain[s], 600) for s in (0, 1)]

    assert (f"held-out valid {per_seed(with_neg, 'heldout_valid_rate')} at 600 steps ({per_seed(with_zero, 'heldout_valid_rate')} with 0)"
            in " ".join(page("smollm2.md").split()))
    assert f"held-out JSD {per_seed(with_neg, 'heldout_jsd')} (" in page("smollm2.md")
    at_450 = [measured_at(plain[s], 450) for s in (0, 1)]
    assert f"(pressure under -1: {per_seed(at_450, 'pressure')}, in the" in page("smollm2.md")


def test_smollm2_paper_reward_from_600_as_printed():
    """The 600-step runs (invalid_reward = 0) continued to 750 with -1: their tables on the page, the shared
    points up to 600, and the figures the page quotes (its own and, in its summary moved from the README, the
    750-step reading)."""
    from lab.smollm2_report import format_longer_table

    switched = recorded_json("smollm2_p2_neg600.json")
    plain = points_by_seed("smollm2_p2_longer.json")
    assert [r["seed"] for r in switched] == [0, 1]
    for r in switched:
        assert r["points"][:4] == plain[r["seed"]] and r["points"][4][0] == 750
        assert r["points"][4][2]["trained_invalid_reward"] == -1.0
        assert format_longer_table([tuple(point) for point in r["points"]]) in page("smollm2.md")
    at_750 = [measured_at(r["points"], 750) for r in switched]
    jsd, valid = per_seed(at_750, "heldout_jsd"), per_seed(at_750, "heldout_valid_rate")
    assert f"held-out JSD {jsd} (<= 0.15; seed 0 near the\n  paper's < 0.1) with held-out valid {valid} (>= 0.95)" in page("smollm2.md")
    assert all(m["heldout_jsd"] <= 0.15 and m["heldout_valid_rate"] >= 0.95 for m in at_750)
    summary = " ".join(page("smollm2.md").split())
    assert f"at 750 steps held-out JSD {jsd} with valid {valid} (printed by" in summary


def test_smollm2_precision_rl_seeds_as_printed():
    """The precision check with RL seeds: six 40-step runs from seed 1's start on seed 1's lists, both tables
    on the page as printed, the page's pooled figure over all six same-start pairs, and the start's
    reproduction of the cosine run's seed-1 start."""
    from lab.smollm2_report import format_precision_table, precision_pairs

    recorded = recorded_json("smollm2_precision_s1.json")
    assert all((r["settings"]["seed"], r["settings"]["rl_steps"], r["settings"]["runs"]) == (1, 40, ["gapo"]) for r in recorded)
    pairs = precision_pairs(recorded)
    assert list(pairs) == [0, 1, 2]
    for key in ("heldout_jsd", "heldout_valid_rate"):
        assert format_precision_table(pairs, key) in page("smollm2.md")
    mine = bf16_minus_fp32(pairs)
    text = " ".join(page("smollm2.md").split())
    assert f"The sign changes between pairs ({', '.join(f'{d:+.3f}' for d in mine)})" in text
    for key, quoted in (("heldout_jsd", "Held-out JSD: bf16 - fp32 = {:.3f}, with a standard error of {:.3f}"),
                        ("heldout_valid_rate", "Held-out valid rate: bf16 - fp32 = {:.3f}, standard error {:.3f}")):
        assert quoted.format(*mean_and_se(bf16_minus_fp32(pairs, key))) in text
    seconds = {p: " / ".join(f"{r['stage_seconds']['gapo']:.0f}" for r in sorted(recorded, key=lambda r: r["settings"]["rl_seed"])
                             if r["settings"]["precision"] == p) for p in ("fp32", "bf16")}
    assert f"took {seconds['fp32']} s in fp32 and {seconds['bf16']} s in bf16" in text
    earlier = recorded_json("smollm2_precision_c3.json")
    runs = {(r["settings"]["precision"], r["settings"]["seed"]): r["gapo"]["heldout_jsd"] for r in earlier}
    # the 20-step pair has no record: its fp32 and bf16 seed-0 tables are the first two of its section on the page
    section = page("smollm2.md").split("##### Earlier: 20 steps from seed 0's start")[1].split("#####")[0]
    fp32, bf16 = [float(line.split()[-1]) for line in section.splitlines() if line.startswith("held-out JSD ")][:2]
    diffs = mine + [runs["bf16", s] - runs["fp32", s] for s in (0, 1)] + [bf16 - fp32]
    mean, se = mean_and_se(diffs)
    assert f"averages {mean:.3f} with a standard error of {se:.3f} (bf16 lower in {sum(d < 0 for d in diffs)} of the 6)" in text
    cosine = next(r for r in recorded_json("smollm2_cos.json") if r["settings"]["seed"] == 1)["before"]
    assert all(r["before"]["heldout_jsd"] == cosine["heldout_jsd"] and r["before"]["trained_pressure"] == cosine["trained_pressure"] for r in recorded)
    assert f"held-out JSD {cosine['heldout_jsd']!r} and pressure under the trained reward {cosine['trained_pressure']:.7f}," in text


def test_smollm2_target_table_follows_the_records():
    """docs/smollm2.md's "Where the targets stand": each quoted figure from its record, and each verdict from the figures."""
    from lab.smollm2_report import precision_pairs

    section = page("smollm2.md").split("### Where the targets stand")[1].split("\n### ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]  # the header row dropped
    start_row, gapo_row, baseline_row, open_row, step_row, time_row = rows
    p2, base = recorded_json("smollm2_p2.json"), recorded_json("smollm2_p2_base.json")
    start = [r["before"] for r in p2]
    last = [measured_at(points, 750) for points in points_by_seed("smollm2_p2_neg600.json").values()]
    baseline = [r["grpo_baseline"] for r in base]

    assert (f"seed 0: pressure {start[0]['trained_pressure']:.3f}, JSD {start[0]['heldout_jsd']:.3f}; "
            f"seed 1: pressure {start[1]['trained_pressure']:.3f}, JSD {start[1]['heldout_jsd']:.3f}") in start_row
    assert start[0]["trained_pressure"] <= -0.05 < start[1]["trained_pressure"] and start_row.endswith("| seed 0 yes, seed 1 no |")

    assert all(m["trained_invalid_reward"] == -1.0 for m in last)  # the last 150 steps: the paper's reward
    assert f"JSD {per_seed(last, 'heldout_jsd')}, valid {per_seed(last, 'heldout_valid_rate')}" in gapo_row
    assert all(m["heldout_jsd"] <= 0.15 and m["heldout_valid_rate"] >= 0.95 for m in last) and gapo_row.endswith("| yes |")

    assert f"{per_seed(baseline, 'heldout_jsd')}, dominant share {per_seed(baseline, 'dominant_share')} at 600 steps" in baseline_row
    assert all(m["heldout_jsd"] >= 0.3 for m in baseline)

    def opened(measured, key):
        return [m["open"][key] for m in measured]

    ratios = [r["gapo"]["open"]["mean_unique_valid"] / r["before"]["open"]["mean_unique_valid"] for r in p2]
    (before, after), (valid_before, valid_after) = (opened([start[0], p2[0]["gapo"]], k) for k in ("mean_unique_valid", "mean_valid_rate"))
    assert f"best {ratios[0]:.2f}x (seed 0, 300 steps: {before} -> {after}, valid {valid_before:.3f} -> {valid_after:.3f})" in open_row
    assert max(ratios) == ratios[0] < 1.5 and open_row.endswith("| no (baseline part yes) |")
    unique = [" / ".join(str(v) for v in opened(ms, "mean_unique_valid")) for ms in (last, start, baseline)]
    valid_last = " / ".join(f"{v:.3f}" for v in opened(last, "mean_valid_rate"))
    assert f"at 750 steps {unique[0]} against {unique[1]} (valid {valid_last}); baseline {unique[2]} at 600" in open_row
    assert all(b <= s for b, s in zip(opened(baseline, "mean_unique_valid"), opened(start, "mean_unique_valid")))

    step = (DOCS / "results" / "smollm2_step.txt").read_text()
    fp32, bf16 = (next(line.split()[3:5] for line in step.splitlines() if line.startswith(f"shared prompt, {p}")) for p in ("fp32", "bf16"))
    mean, se = mean_and_se(bf16_minus_fp32(precision_pairs(recorded_json("smollm2_precision_s1.json"))))
    assert (f"{fp32[0]} s in fp32, {fp32[1]}x TRL's path ([cost](#cost)); bf16 slower ({bf16[0]} s), so not the default; "
            f"held-out JSD bf16 - fp32 {mean:.3f}, standard error {se:.3f}") in step_row
    assert float(fp32[0]) <= 3.5 < float(bf16[0])

    cosine = [r["wall_seconds"] for r in recorded_json("smollm2_cos.json")]
    assert f"{' / '.join(f'{w:.0f}' for w in cosine)} s ({' / '.join(f'{w / 60:.0f}' for w in cosine)} min)" in time_row
    assert max(cosine) <= 3600


def test_smollm2_seed1_rerun_as_printed():
    """Seed 1's two-prompt run again on a fresh machine: its table on the page, the same start as the recorded
    run to the digit, and the page's comparison of the two 300-step figures and the stage times."""
    from lab.smollm2 import format_table as smollm2_table

    rerun, recorded = seed1_rerun()
    assert smollm2_table(rerun) in page("smollm2.md")
    assert rerun["before"]["heldout_jsd"] == recorded["before"]["heldout_jsd"]
    keys = set(rerun["settings"]) | set(recorded["settings"])  # rl_seed is newer than the recorded run: None in both
    assert [k for k in keys if rerun["settings"].get(k) != recorded["settings"].get(k)] == ["threads"]
    assert (rerun["settings"]["threads"], recorded["settings"]["threads"]) == (2, 1)
    text = " ".join(page("smollm2.md").split())
    a, b = rerun["gapo"], recorded["gapo"]
    assert (f"after 300 steps held-out JSD reads {a['heldout_jsd']:.3f} (valid {a['heldout_valid_rate']:.3f}) where the recorded run, "
            f"one thread beside the other seed, read {b['heldout_jsd']:.3f} (valid {b['heldout_valid_rate']:.3f})") in text
    start_open, open_ = rerun["before"]["open"], a["open"]
    assert (f"{start_open['mean_unique_valid']} -> {open_['mean_unique_valid']} ({open_['mean_unique_valid'] / start_open['mean_unique_valid']:.2f}x) "
            f"at a valid rate {start_open['mean_valid_rate']:.3f} -> {open_['mean_valid_rate']:.3f}; the recorded run had "
            f"{b['open']['mean_unique_valid']} at {b['open']['mean_valid_rate']:.3f}") in text
    seconds, steps = rerun["stage_seconds"], rerun["settings"]["rl_steps"]
    assert f"warm-up {seconds['pretrain']:.0f} s and GAPO {seconds['gapo']:.0f} s of training ({seconds['gapo'] / steps:.1f} s a step" in text


def between(text: str, name: str) -> str:
    """The part of ``text`` between ``<!-- name:begin -->`` and ``<!-- name:end -->``."""
    return text.split(f"<!-- {name}:begin -->", 1)[1].split(f"<!-- {name}:end -->", 1)[0].strip("\n")


def test_gpu_page_resident_terms_are_the_recorded_benchmark():
    """docs/gpu.md's planner-against-real-bytes table is what benchmarks/memory.py --resident printed, every term within 5%."""
    import runpy

    rows = recorded_json("memory_resident.json")
    bench = runpy.run_path(str(ROOT / "benchmarks" / "memory.py"), run_name="memory_bench")
    assert between(page("gpu.md"), "resident") == bench["format_resident"](rows)
    assert {r["model"] for r in rows} >= {"SmolLM2-135M"} and len({r["model"] for r in rows}) >= 3
    assert all(abs(r["ratio"] - 1) < 0.05 for r in rows)


def test_gpu_page_nf4_run_is_what_the_quantization_report_prints():
    from lab.smollm2_report import format_quantization_table, quantization_columns

    record = recorded_json("smollm2_nf4.json")
    table = format_quantization_table(quantization_columns(record), record[0]["settings"]["seed"])
    assert table in between(page("gpu.md"), "nf4-run")


def test_smollm2_lead_result_is_what_the_report_prints():
    """docs/smollm2.md's lead section and the README's SmolLM2 part: the result table, the targets and the damage
    checks as `python -m lab.smollm2_report` prints them from docs/results/smollm2_clean.json."""
    from lab.smollm2_report import damage_lines, format_result_markdown, format_targets_markdown

    record = recorded_json("smollm2_clean.json")
    assert sorted(r["settings"]["seed"] for r in record) == [0, 1]
    assert all(r["settings"]["clean_answers"] and r["settings"]["open_share"] == 0.5 for r in record)
    lead, readme = between(page("smollm2.md"), "lead"), between(README, "smollm2")
    assert format_result_markdown(record) in lead
    assert format_result_markdown(record, summary=True) in readme and format_result_markdown(record, summary=True) in lead
    assert format_targets_markdown(record) in lead
    for results in record:
        for line in damage_lines(results):
            assert line in lead, line


def test_smollm2_probes_are_what_the_report_prints():
    """docs/smollm2.md's probes: the tables and the damage checks as smollm2_report prints them from
    docs/results/smollm2_probes.json (seed 0), smollm2_probes_s1.json, smollm2_probes_2threads.json and
    smollm2_probes_explore(_s1).json, every probe from the lead's warmed start of its seed (smollm2_probes_warmup.json: from
    starts warmed otherwise; smollm2_probes_batch(_s1).json: four prompts a step), with the training groups
    where the record has them; and the figures docs/reward.md quotes for the invalid margin, from that record."""
    from lab.smollm2 import _value
    from lab.smollm2_report import damage_lines, format_draws, format_result_markdown, format_training_table, models, run_label

    names = ("", "_s1", "_2threads", "_explore", "_explore_s1", "_draws", "_draws_s1", "_warmup", "_batch", "_batch_s1")
    seeds = [recorded_json(f"smollm2_probes{name}.json") for name in names]
    lead = recorded_json("smollm2_clean.json")
    probes = between(page("smollm2.md"), "probes")
    for record in seeds:
        assert format_result_markdown(record) in probes
        for line in (line for results in record for line in damage_lines(results)):
            assert line in probes, line
        for results in record:
            assert "training" not in results or format_training_table(results["training"]) in probes
    starts = lambda rs: {r["settings"]["seed"]: (r["before"]["heldout_jsd"], r["before"]["heldout_valid_rate"], r["before"]["guard"]["accuracy"]) for r in rs}
    assert starts(seeds[0] + seeds[1]) == starts(lead) and starts(seeds[2]) == starts(seeds[3]) == starts(seeds[0])
    assert starts(seeds[4]) == starts(seeds[6]) == starts(seeds[9]) == starts(seeds[1]) and starts(seeds[5]) == starts(seeds[8]) == starts(seeds[0])
    for results in seeds[5] + seeds[6]:  # the draws of the lead's arm: each seed's line, from the record
        assert format_draws(results) and format_draws(results) in probes
    assert all(len(r["training"]) >= 2 for r in seeds[3] + seeds[4])  # the explore records carry their training groups
    warmups = {(r["settings"]["warmup_steps"], r["settings"]["warmup_prompts"], r["settings"]["warmup_temperature"]) for r in seeds[7]}
    assert warmups == {(24, 48, 1.0), (96, 192, None)}  # the other warm-ups, each start labelled with how it was made
    seed0 = seeds[0][0]
    margin0 = next(seed0[n] for n in models(seed0) if run_label(seed0, n) == "GAPO, lists only, margin 0, 150 steps")
    quoted = (f"JSD {seed0['before']['heldout_jsd']:.3f} -> {margin0['heldout_jsd']:.3f}",
              f"held-out valid rate fell {seed0['before']['heldout_valid_rate']:.3f} -> {margin0['heldout_valid_rate']:.3f}",
              f"end of turn {_value(seed0['before'], 'open.mean_end_rate'):.3f} -> {_value(margin0, 'open.mean_end_rate'):.3f}")
    for text in quoted:
        assert text in page("reward.md"), text


def test_smollm2_averaged_updates_are_what_the_script_printed():
    """docs/smollm2.md's averaged-update tables and damage lines are what lab/scripts/smollm2_average.py printed into
    docs/results/smollm2_average_s0.json / _s1.json, from the draws' start; and a run's own update at scale 1,
    measured again through its merged delta, reads what the run's own stage measured."""
    from lab.smollm2_report import damage_lines, format_result_markdown, models, run_label

    probes = between(page("smollm2.md"), "probes")
    for seed, draws_name in ((0, "_draws"), (1, "_draws_s1")):
        record = recorded_json(f"smollm2_average_s{seed}.json")
        assert format_result_markdown(record) in probes
        for line in damage_lines(record[0]):
            assert line in probes, line
        draws = recorded_json(f"smollm2_probes{draws_name}.json")[0]
        assert record[0]["before"]["heldout_jsd"] == draws["before"]["heldout_jsd"]
        again = record[0][f"rl0_s{seed}, x1"]
        own = next(draws[n] for n in models(draws) if run_label(draws, n) == "GAPO, lists only, 150 steps")
        for key in ("heldout_jsd", "heldout_valid_rate"):
            assert again[key] == pytest.approx(own[key], abs=1e-9), key
        assert again["open"]["mean_unique_valid"] == own["open"]["mean_unique_valid"] and again["guard"]["accuracy"] == own["guard"]["accuracy"]


def assert_report_printed(record, probes: str) -> None:
    """A smollm2_report record's tables, damage checks, training groups and answers by rank are in the page as printed."""
    from lab.smollm2_report import damage_lines, format_item_ranks, format_result_markdown, format_training_table

    assert format_result_markdown(record) in probes
    for results in record:
        for line in damage_lines(results):
            assert line in probes, line
        assert format_training_table(results["training"]) in probes
        for by in ("start", "own"):  # where the answers go, as the report prints it
            assert format_item_ranks(results["item_ranks"][by]) in probes


def lead_start_jsd() -> dict[int, float]:
    """Each seed's lead start's held-out JSD, from the records of the lead's arm's draws."""
    return {r["settings"]["seed"]: r["before"]["heldout_jsd"] for name in ("_draws", "_draws_s1") for r in recorded_json(f"smollm2_probes{name}.json")}


def test_smollm2_ten_fixed_lists_cross_test_is_what_the_commands_printed(load_script):
    """docs/smollm2.md's crossed test: ten fixed training lists (300 and 600 steps) and the 40 measured prompts (300
    steps), each measured on the held-out lists (smollm2_report, docs/results/smollm2_fixed_lists10(_s1).json) and on
    the training lists (lab/scripts/smollm2_train_lists.py, smollm2_train_lists_fixed10_s0/_s1.json); and what the page
    reads from them: each run spreads the set it trained on and not the other."""
    from lab.smollm2_report import model_settings, models, on_measured_lists

    script = load_script("smollm2_train_lists")
    probes = between(page("smollm2.md"), "probes")
    lead = lead_start_jsd()
    for seed, name in ((0, ""), (1, "_s1")):
        record = recorded_json(f"smollm2_fixed_lists10{name}.json")
        assert_report_printed(record, probes)
        (results,) = record
        assert results["settings"]["seed"] == seed and results["before"]["heldout_jsd"] == lead[seed]
        lead_arm, measured, fixed300, fixed600 = [n for n in models(results) if n != "before"]
        assert not on_measured_lists(model_settings(results, lead_arm)) and on_measured_lists(model_settings(results, measured))
        for n, steps in ((fixed300, 300), (fixed600, 600)):
            settings = model_settings(results, n)
            assert (settings["rl_lists"], settings["fixed_lists"], settings["rl_steps"]) == ("fixed", 10, steps)
        assert model_settings(results, measured)["rl_steps"] == 300

        rows = recorded_json(f"smollm2_train_lists_fixed10_s{seed}.json")
        assert script.format_rows(rows) in probes
        train = {r["model"]: r["train_jsd"] for r in rows}
        start_train = train[f"fx10_s{seed}: start"]
        start_heldout = results["before"]["heldout_jsd"]
        # the page's reading: the ten training lists spread where they were trained, the held-out lists do not follow,
        # and the run on the measured lists does not spread the training lists either
        for folder, n in ((f"fx10_s{seed}", fixed300), (f"fx10_s{seed}_600", fixed600)):
            assert train[f"{folder}/gapo_lists"] <= start_train - 0.04, folder
            assert results[n]["heldout_jsd"] >= start_heldout - 0.03, folder
        assert train[f"ml_s{seed}_300/gapo_lists"] >= start_train - 0.03


def test_smollm2_frontier_lines_are_what_the_script_printed(load_script):
    """The frontier's summary in docs/smollm2.md is what lab/scripts/smollm2_frontier.py prints from the records its command names."""
    frontier = load_script("smollm2_frontier")
    records = [RESULTS / "smollm2_clean.json", *sorted(RESULTS.glob("smollm2_probes*.json")), *sorted(RESULTS.glob("smollm2_average_s*.json")),
               *sorted(RESULTS.glob("smollm2_fixed_lists*.json"))]
    text = frontier.summary(frontier.points(records))
    probes = between(page("smollm2.md"), "probes")
    for line in text.splitlines():
        assert line in probes, line
    assert "smollm2_frontier.png" in probes and (RESULTS / "smollm2_frontier.png").is_file()


def test_smollm2_training_category_lists_are_what_the_script_printed(load_script):
    """docs/smollm2.md's training-category tables are what lab/scripts/smollm2_train_lists.py printed into
    docs/results/smollm2_train_lists_s0.json / _s1.json, each measuring its start first."""
    script = load_script("smollm2_train_lists")
    probes = between(page("smollm2.md"), "probes")
    for seed in (0, 1):
        rows = recorded_json(f"smollm2_train_lists_s{seed}.json")
        assert rows[0]["model"].endswith(": start") and len(rows) >= 3
        assert script.format_rows(rows) in probes


def test_smollm2_measured_lists_are_what_the_report_prints():
    """docs/smollm2.md's runs trained on the lists the suite measures: tables, damage checks and training groups as
    smollm2_report prints them from docs/results/smollm2_measured_lists(_s1).json (the 40 measured prompts, from
    the lead's starts, beside the lead's arm with the same RL seed) and smollm2_measured_list1.json (one list,
    measured on it alone), and smollm2_fixed_lists(_s1).json (one and two fixed lists of the training categories), with
    each model's answers by the item's rank; every run on the measured lists trained on them and is labelled so."""
    from lab.smollm2_report import model_settings, models, on_measured_lists

    probes = between(page("smollm2.md"), "probes")
    ten = [recorded_json(f"smollm2_measured_lists{name}.json") for name in ("", "_s1")]
    one = recorded_json("smollm2_measured_list1.json")
    fixed = [recorded_json(f"smollm2_fixed_lists{name}.json") for name in ("", "_s1")]
    for record in (*ten, one, *fixed):
        assert_report_printed(record, probes)
    lead = lead_start_jsd()
    for record in ten:
        (results,) = record
        assert results["before"]["heldout_jsd"] == lead[results["settings"]["seed"]]
        trained = [n for n in models(results) if n != "before"]
        flags = [on_measured_lists(model_settings(results, n)) for n in trained]
        assert flags[0] is False and len(flags) >= 2 and all(flags[1:])  # the lead's arm, then the measured lists (150 steps, and continued)
    for record, count in zip(fixed, (1, 2)):  # fixed training lists: from the lead's starts, a transfer result like the lead's arm
        (results,) = record
        assert results["before"]["heldout_jsd"] == lead[results["settings"]["seed"]]
        added = model_settings(results, models(results)[-1])
        assert (added["rl_lists"], added["fixed_lists"]) == ("fixed", count) and not on_measured_lists(added)
    assert sorted(r["settings"]["seed"] for r in one) == [0, 1]
    assert all(r["settings"]["eval_lists"] == 1 and r["settings"]["eval_samples"] == 400 and on_measured_lists(r["settings"]) for r in one)
