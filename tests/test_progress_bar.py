"""The RL runs' progress bar: one tqdm bar with the group figures in place of transformers' bar and its per-step dicts."""
from types import SimpleNamespace

import pytest
from transformers.trainer_callback import CallbackHandler, DefaultFlowCallback, PrinterCallback, ProgressCallback

from gapo_lite.training.callbacks import ProgressBarCallback, postfix, use_progress_bar


def state(step=0, max_steps=10):
    return SimpleNamespace(global_step=step, max_steps=max_steps, is_world_process_zero=True)


def test_postfix_reads_the_hooks_figures_whatever_the_hook_is_called():
    logs = {"loss": 0.5, "gapo_frequency/distinct_per_group": 6.34, "gapo_frequency/valid_rate": 0.9876, "gapo_frequency/group_entropy": 2.1}
    assert postfix(logs, ProgressBarCallback.FIGURES) == "distinct/group 6.3, valid 0.99"
    assert postfix({"validity/valid_rate": 1.0}, ProgressBarCallback.FIGURES) == "valid 1.00"
    assert postfix({"loss": 0.5, "step_time": 0.3}, ProgressBarCallback.FIGURES) == ""


def test_the_bar_follows_the_steps_and_shows_the_last_logged_figures(capsys):
    bar = ProgressBarCallback("GAPO")
    bar.on_train_begin(None, state(0, 10), None)
    for step in (1, 2, 3):
        bar.on_step_end(None, state(step), None)
        bar.on_log(None, state(step), None, logs={"loss": 0.1, "gapo_frequency/distinct_per_group": float(step), "gapo_frequency/valid_rate": 0.95})
    assert bar.bar.n == 3 and bar.bar.total == 10
    assert bar.bar.postfix == "distinct/group 3.0, valid 0.95"
    bar.on_train_end(None, state(3), None)
    err = capsys.readouterr().err
    assert "GAPO" in err and "'loss'" not in err and bar.bar is None


def test_a_resumed_run_starts_its_bar_at_the_resumed_step():
    bar = ProgressBarCallback()
    bar.on_train_begin(None, state(6, 10), None)
    bar.on_step_end(None, state(7), None)
    assert bar.bar.n == 7
    bar.on_train_end(None, state(7), None)


class FakeTrainer:
    """The part of a transformers Trainer that use_progress_bar touches: its callback handler."""

    def __init__(self, *callbacks):
        self.callback_handler = CallbackHandler([DefaultFlowCallback(), *callbacks], None, None, None, None)

    def remove_callback(self, callback):
        self.callback_handler.remove_callback(callback)

    def add_callback(self, callback):
        self.callback_handler.add_callback(callback)


@pytest.mark.parametrize("theirs", [ProgressCallback, PrinterCallback])
def test_use_progress_bar_replaces_transformers_bar_and_printer(theirs):
    trainer = FakeTrainer(theirs())
    use_progress_bar(trainer, "GAPO")
    kinds = [type(c) for c in trainer.callback_handler.callbacks]
    assert theirs not in kinds and kinds.count(ProgressBarCallback) == 1
    assert trainer.callback_handler.callbacks[-1].desc == "GAPO"
    mine = ProgressBarCallback("baseline")  # a caller's own bar (the staged runner's, with the run's label) is kept
    trainer = FakeTrainer(ProgressCallback(), mine)
    use_progress_bar(trainer, "GAPO")
    assert [c for c in trainer.callback_handler.callbacks if not isinstance(c, DefaultFlowCallback)] == [mine]
