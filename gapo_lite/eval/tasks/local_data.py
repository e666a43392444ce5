"""Loader for the local lm-eval tasks in this folder: reads ``pick_item.jsonl`` beside it (no hub access)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA_FILE = Path(__file__).resolve().parent / "pick_item.jsonl"


def load_pick_item(**_: Any):
    """A ``datasets.DatasetDict`` with one ``test`` split holding the rows of ``pick_item.jsonl``."""
    from datasets import Dataset, DatasetDict

    rows = [json.loads(line) for line in DATA_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not rows:
        raise ValueError(f"{DATA_FILE} holds no rows")
    return DatasetDict({"test": Dataset.from_list(rows)})
