"""Per-step metrics as JSON lines, safe across resumes."""
from __future__ import annotations

import json
import math
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


def read_metrics(path: str | Path) -> list[dict]:
    """The rows of a metrics.jsonl file."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
