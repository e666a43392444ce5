"""Shared fixtures: a tiny Qwen2 model saved to disk once per session."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("GAPO_LITE_BACKEND", "transformers")
os.environ.setdefault("GAPO_LITE_CPU_PRECISION", "fp32")  # "auto" times this CPU; tests of that rule unset it
os.environ.setdefault("OMP_NUM_THREADS", "1")  # two torch threads on these 2-core machines run ~6x slower

import torch  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory):
    """A random tiny Qwen2 (hidden 64, 2 layers) whose vocabulary covers every list item."""
    from gapo_lite.demo.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


ANIMALS = ["Cat", "Dog", "Owl", "Fox"]


@pytest.fixture(scope="session")
def small_vocab_model(tmp_path_factory):
    """A random tiny Qwen2 whose vocabulary is one prompt wording plus four animals, and 16 prompts for it.

    With so few tokens a random model answers a valid item often enough for groups to carry a reward signal.
    """
    from datasets import Dataset

    from gapo_lite.data import TEMPLATES, make_example
    from gapo_lite.demo.tiny import build_tiny_model

    words = sorted(set(TEMPLATES[0].replace("{items}", "").replace(".", " ").replace(":", " ").split()) | set(ANIMALS))
    path = build_tiny_model(tmp_path_factory.mktemp("small") / "model", words=words, seed=1)
    rows = [make_example(ANIMALS[i % 4 :] + ANIMALS[: i % 4], "animals", TEMPLATES[0], f"p{i:02d}") for i in range(16)]
    return path, Dataset.from_list(rows)


@pytest.fixture(scope="session")
def load_script():
    """scripts/*.py are not a package: ``load_script("smollm2_average")`` imports one as a module."""
    import importlib.util
    from pathlib import Path

    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, Path(__file__).parents[1] / "scripts" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load
