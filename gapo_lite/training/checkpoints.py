"""Crash-safe checkpoints: a checkpoint counts only once it is completely written and marked so."""
from __future__ import annotations

import json
import logging
import os
import re
import warnings
from pathlib import Path

from transformers import TrainerCallback

logger = logging.getLogger("gapo_lite")

MARKER = "gapo_complete.json"
LATEST = "latest_checkpoint.txt"
_STEP = re.compile(r"^checkpoint-(\d+)$")


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def checkpoint_problem(folder: Path) -> str | None:
    """Why ``folder`` is not a usable checkpoint, or ``None`` if it is."""
    marker = folder / MARKER
    if not marker.is_file():
        return f"no {MARKER} (written only after a checkpoint is complete)"
    try:
        info = json.loads(marker.read_text())
        state = json.loads((folder / "trainer_state.json").read_text())
    except (OSError, ValueError) as err:
        return f"unreadable marker or trainer_state.json ({err})"
    if state.get("global_step") != info.get("step"):
        return f"trainer_state step {state.get('global_step')} != marked step {info.get('step')}"
    for name, size in info.get("files", {}).items():
        f = folder / name
        if not f.is_file() or f.stat().st_size != size:
            return f"file {name} missing or truncated"
    return None


def find_latest_checkpoint(output_dir: str | Path) -> Path | None:
    """The newest complete checkpoint in ``output_dir``; incomplete or corrupt ones are skipped with a warning."""
    root = Path(output_dir)
    if not root.is_dir():
        return None
    candidates = sorted(
        (p for p in root.iterdir() if p.is_dir() and _STEP.match(p.name)), key=lambda p: int(_STEP.match(p.name).group(1)), reverse=True
    )
    for folder in candidates:
        problem = checkpoint_problem(folder)
        if problem is None:
            return folder
        message = f"gapo-lite: skipping checkpoint {folder}: {problem}"
        logger.warning(message)
        warnings.warn(message, stacklevel=2)
    return None


class CompleteCheckpointCallback(TrainerCallback):
    """After the Trainer has written ``checkpoint-N``, record its files' sizes and mark it latest."""

    def on_save(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return control
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if folder.is_dir():
            files = {str(p.relative_to(folder)): p.stat().st_size for p in folder.rglob("*") if p.is_file() and p.name != MARKER}
            _write_atomic(folder / MARKER, json.dumps({"step": state.global_step, "files": files}, indent=1))
            _write_atomic(Path(args.output_dir) / LATEST, folder.name + "\n")
        return control
