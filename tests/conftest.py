"""Shared fixtures: a tiny Qwen2 model saved to disk once per session."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("GAPO_LITE_BACKEND", "transformers")


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory):
    """A random tiny Qwen2 (hidden 64, 2 layers) whose vocabulary covers every list item."""
    from gapo_lite.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")
