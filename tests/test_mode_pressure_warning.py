"""The trainer's warning when GAPO's steps sharpen the mode (ModePressureCallback), from the hook's logged pressure."""
from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from gapo_lite.training.callbacks import ModePressureCallback

STATE = SimpleNamespace(is_world_process_zero=True)


def feed(callback, values, key="gapo_frequency/mode_pressure"):
    for v in values:
        callback.on_log(None, STATE, None, logs={key: v, "loss": 0.1})
        callback.on_log(None, STATE, None, logs={"train_runtime": 1.0})  # a log without the hook's metrics is not a step


def test_warns_once_when_the_pressure_stays_above_zero(caplog):
    callback = ModePressureCallback(window=10)
    with caplog.at_level(logging.WARNING, logger="gapo_lite"):
        feed(callback, [0.05, 0.08] * 4)  # 8 steps: not a window yet
        assert not caplog.records
        feed(callback, [0.05, 0.08] * 6)
    [record] = caplog.records  # once, not at every later step
    assert "sharpening" in record.getMessage() and "+0.065" in record.getMessage() and callback.warned


def test_quiet_while_the_pressure_is_noise_around_zero_or_negative(caplog):
    callback = ModePressureCallback(window=10)
    with caplog.at_level(logging.WARNING, logger="gapo_lite"):
        feed(callback, [0.09, -0.08, 0.07, -0.06, 0.03, -0.05, 0.06, -0.04, 0.02, 0.0] * 3)  # mean +0.004, well inside 2 SE
        feed(callback, [-0.05] * 20)
    assert not caplog.records and not callback.warned


def test_window_must_hold_two_steps():
    with pytest.raises(ValueError, match="window must be >= 2"):
        ModePressureCallback(window=1)


def test_gapo_runs_get_the_warning_and_the_validity_baseline_does_not(tmp_path):
    from gapo_lite.training import TrainConfig
    from gapo_lite.training.trainer import kit_callbacks

    watches = lambda reward: any(isinstance(c, ModePressureCallback) for c in kit_callbacks(TrainConfig(model="m", reward=reward), tmp_path))
    assert watches("gapo") and not watches("validity")
