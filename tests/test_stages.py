"""The staged runner writes each finished stage at once and a rerun skips what had finished."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from gapo_lite.demo import stages as runner


@dataclass(frozen=True)
class Settings:
    seed: int = 0
    threads: int = 1
    rl_steps: int = 1


@dataclass(frozen=True)
class Config:
    run: str
    out: Path
    resume: bool = False


class FakeModel:
    def save_pretrained(self, path):
        Path(path).mkdir(parents=True, exist_ok=True)
        (Path(path) / "config.json").write_text("{}")


def make_experiment(calls: list[str], fail_on: str | None = None, settings: Settings = Settings()) -> runner.Experiment:
    def measure(model, tok):
        calls.append(f"measure:{model}")
        return {"score": len(calls)}

    def pretrain(model, tok):
        calls.append("pretrain")
        return [1.0]

    return runner.Experiment(
        settings=settings, build_model=lambda out: out, pretrain=pretrain,
        runs=[runner.RLRun("a", "A"), runner.RLRun("b", "B")], rl_config=lambda start, out, run: Config(run.name, out),
        measure=measure, format_table=lambda results: "table",
    )


@pytest.fixture
def fakes(monkeypatch, tmp_path):
    import gapo_lite.models
    import gapo_lite.training

    trained: list[tuple[str, bool]] = []
    failing: dict[str, bool] = {}

    def train(config, **kwargs):  # kwargs: the runner's progress bar
        trained.append((config.run, config.resume))
        if failing.get(config.run):
            raise KeyboardInterrupt  # the run stops here, as a killed process would
        return type("R", (), {"adapter_dir": config.out})()

    monkeypatch.setattr(gapo_lite.models, "load_model", lambda path, lora=None: (FakeModel(), FakeTokenizer()))
    monkeypatch.setattr(gapo_lite.training, "train", train)
    monkeypatch.setattr(runner, "load_trained", lambda adapter, start, load_in_4bit=False: (Path(adapter).name, None))
    return trained, failing


class FakeTokenizer(FakeModel):
    pass


def test_a_rerun_skips_finished_stages_and_resumes_the_interrupted_run(tmp_path, fakes):
    trained, failing = fakes
    calls: list[str] = []
    failing["b"] = True
    with pytest.raises(KeyboardInterrupt):
        runner.run_staged(make_experiment(calls), tmp_path)
    assert calls[0] == "pretrain" and (tmp_path / "stages" / "start.json").is_file() and (tmp_path / "stages" / "a.json").is_file()
    assert not (tmp_path / "stages" / "b.json").exists() and not (tmp_path / "results.json").exists()
    first = json.loads((tmp_path / "stages" / "a.json").read_text())["measured"]

    failing["b"] = False
    calls.clear()
    trained.clear()
    results = runner.run_staged(make_experiment(calls), tmp_path)
    assert calls == ["measure:b"]  # no pretraining, no measurement of the start or of run a again
    assert trained == [("b", True)]  # run b asked to resume from its last complete checkpoint
    assert results["a"] == first and set(results) >= {"before", "a", "b", "wall_seconds", "stage_seconds"}
    assert json.loads((tmp_path / "results.json").read_text())["b"] == results["b"]


def test_a_folder_of_another_experiment_is_refused(tmp_path, fakes):
    from gapo_lite.errors import UserError

    runner.run_staged(make_experiment([]), tmp_path)
    with pytest.raises(UserError, match="other settings.*rl_steps"):
        runner.run_staged(make_experiment([], settings=Settings(rl_steps=2)), tmp_path)


def test_the_thread_count_may_change_between_sessions_and_each_stage_records_its_own(tmp_path, fakes):
    trained, failing = fakes
    failing["b"] = True
    with pytest.raises(KeyboardInterrupt):
        runner.run_staged(make_experiment([]), tmp_path)
    failing["b"] = False
    results = runner.run_staged(make_experiment([], settings=Settings(threads=2)), tmp_path)
    assert results["stage_ran_with"] == {"start": {"threads": 1}, "a": {"threads": 1}, "b": {"threads": 2}}


@dataclass(frozen=True)
class MarkedSettings(Settings):
    rl_steps: int = 6
    measure_every: int = 2


@dataclass(frozen=True)
class StepConfig(Config):
    max_steps: int = 6
    save_steps: int = 2


def test_measure_every_trains_each_run_up_to_each_mark_resuming_and_measures_it(tmp_path, fakes, monkeypatch):
    import gapo_lite.training

    trained: list[tuple[str, int, bool]] = []
    monkeypatch.setattr(gapo_lite.training, "train", lambda config, **kwargs: trained.append((config.run, config.max_steps, config.resume)) or
                        type("R", (), {"adapter_dir": config.out})())
    experiment = make_experiment([], settings=MarkedSettings())
    experiment.rl_config = lambda start, out, run: StepConfig(run.name, out)
    results = runner.run_staged(experiment, tmp_path)
    assert trained == [("a", 2, True), ("a", 4, True), ("a", 6, True), ("b", 2, True), ("b", 4, True), ("b", 6, True)]
    assert {"a@2", "a@4", "a", "b@2", "b@4", "b"} <= set(results) and not (tmp_path / "stages" / "a@6.json").exists()
    assert json.loads((tmp_path / "stages" / "a@4.json").read_text())["steps"] == 4

    experiment.rl_config = lambda start, out, run: StepConfig(run.name, out, save_steps=3)  # a mark between two checkpoints could not resume
    with pytest.raises(ValueError, match="not a multiple of the checkpoint interval"):
        runner.run_staged(experiment, tmp_path / "other")
