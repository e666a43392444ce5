"""Per-step metrics as JSON lines, safe across resumes; a warning when GAPO's steps sharpen the mode."""
from __future__ import annotations

import json
import logging
import math
import statistics
from pathlib import Path

from transformers import TrainerCallback


class JsonlMetricsCallback(TrainerCallback):
    """Append every log event (with its step) to ``path``; on resume, drop lines past the resumed step."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero and self.path.is_file():
            kept = [line for line in self.path.read_text().splitlines() if line.strip() and json.loads(line).get("step", 0) <= state.global_step]
            self.path.write_text("".join(line + "\n" for line in kept))
        return control

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return control
        row = {"step": state.global_step}
        for key, value in logs.items():
            if isinstance(value, (int, float)) and not (isinstance(value, float) and not math.isfinite(value)):
                row[key] = value
        with open(self.path, "a") as f:
            f.write(json.dumps(row) + "\n")
        return control


class ModePressureCallback(TrainerCallback):
    """Warns once when GAPO's steps sharpen the favourite instead of spreading it.

    The reward hook logs each step's mode pressure (``<name>/mode_pressure``: the favourite's reward minus its
    group's mean, :func:`gapo_lite.rewards.group.favourite_pressure`). While it is above zero the favourite's
    advantage is positive and GAPO reinforces the mode (docs/reward.md, "Will GAPO spread your model?"). The
    warning fires when its mean over the last ``window`` logged steps is above zero by more than twice its
    standard error, so that a step's noise alone does not fire it.
    """

    def __init__(self, window: int = 30) -> None:
        if window < 2:
            raise ValueError(f"window must be >= 2 steps, got {window}")
        self.window = window
        self.values: list[float] = []
        self.warned = False

    def on_log(self, args, state, control, logs=None, **kwargs):
        key = next((k for k in (logs or {}) if k.endswith("/mode_pressure")), None)
        if key is None or self.warned or not state.is_world_process_zero:
            return control
        self.values.append(float(logs[key]))
        last = self.values[-self.window:]
        if len(last) == self.window:
            mean, error = statistics.fmean(last), statistics.stdev(last) / math.sqrt(len(last))
            if mean > 2 * error:
                self.warned = True
                logging.getLogger("gapo_lite").warning(
                    "GAPO is sharpening the favourite, not spreading it: %s averaged %+.3f over the last %d steps (standard error %.3f). "
                    "The model is valid too rarely for the invalid reward; see docs/reward.md, 'Will GAPO spread your model?' "
                    "(raise validity first, or a higher invalid_reward: 0 instead of the paper's -1).", key, mean, self.window, error)
        return control


def read_metrics(path: str | Path) -> list[dict]:
    """The rows of a metrics.jsonl file."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


class ProgressBarCallback(TrainerCallback):
    """One tqdm bar for an RL run: steps, their rate, and the group figures of the reward hook's last log
    (distinct valid answers per group and the valid rate; ``<hook>/distinct_per_group``, ``<hook>/valid_rate``).

    It stands in for transformers' own bar, which also prints each step's whole log dict (about 1,500 characters
    a step); those dicts are kept in the run's ``metrics.jsonl``. :func:`use_progress_bar` puts it in place."""

    FIGURES = (("distinct_per_group", "distinct/group", "{:.1f}"), ("valid_rate", "valid", "{:.2f}"))

    def __init__(self, desc: str = "RL") -> None:
        self.desc = desc
        self.bar = None

    def on_train_begin(self, args, state, control, **kwargs):
        from tqdm.auto import tqdm

        if state.is_world_process_zero:
            self.bar = tqdm(total=state.max_steps, initial=state.global_step, desc=self.desc, unit="step", dynamic_ncols=True)
        return control

    def on_step_end(self, args, state, control, **kwargs):
        if self.bar is not None:
            self.bar.update(state.global_step - self.bar.n)
        return control

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self.bar is not None and logs:
            shown = postfix(logs, self.FIGURES)
            if shown:
                self.bar.set_postfix_str(shown, refresh=False)
        return control

    def on_train_end(self, args, state, control, **kwargs):
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        return control


def postfix(logs: dict, figures) -> str:
    """``"distinct/group 6.2, valid 0.99"``: each figure whose key ends with ``/<suffix>`` in ``logs``, formatted."""
    shown = []
    for suffix, label, fmt in figures:
        value = next((v for k, v in logs.items() if k.endswith("/" + suffix) and isinstance(v, (int, float))), None)
        if value is not None:
            shown.append(f"{label} {fmt.format(value)}")
    return ", ".join(shown)


def use_progress_bar(trainer, desc: str) -> None:
    """Swap transformers' progress callbacks (its bar with the per-step dicts, the dict printer, the notebook table)
    for a :class:`ProgressBarCallback`, unless one is there already."""
    replaced = ("ProgressCallback", "PrinterCallback", "NotebookProgressCallback")  # by name: the notebook's needs IPython
    for callback in [c for c in trainer.callback_handler.callbacks if type(c).__name__ in replaced]:
        trainer.remove_callback(callback)
    if not any(isinstance(c, ProgressBarCallback) for c in trainer.callback_handler.callbacks):
        trainer.add_callback(ProgressBarCallback(desc))
