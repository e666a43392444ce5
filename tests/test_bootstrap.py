"""``gapo_lite._bootstrap``: when Unsloth is wanted, and the warning when trl/transformers/peft came first."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gapo_lite import _bootstrap

ROOT = Path(__file__).resolve().parents[1]
FAKE_UNSLOTH = "import sys\nsys.modules[__name__].imported_after = sorted(m for m in ('trl', 'transformers', 'peft') if m in sys.modules)\n"


@pytest.fixture
def fake_unsloth(tmp_path, monkeypatch):
    """A stand-in ``unsloth`` module on sys.path (the real one patches TRL for the whole process)."""
    (tmp_path / "unsloth.py").write_text(FAKE_UNSLOTH)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "unsloth", raising=False)
    yield
    sys.modules.pop("unsloth", None)


@pytest.mark.parametrize(
    ("backend", "cuda", "expected"),
    [("transformers", True, False), ("unsloth", False, True), ("auto", True, True), ("auto", False, False)],
)
def test_unsloth_wanted(backend, cuda, expected, fake_unsloth, monkeypatch):
    import torch

    monkeypatch.setenv(_bootstrap.BACKEND_ENV, backend)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    assert _bootstrap.unsloth_wanted() is expected


def test_not_wanted_when_unsloth_is_not_installed(monkeypatch):
    monkeypatch.setenv(_bootstrap.BACKEND_ENV, "unsloth")
    monkeypatch.setattr(_bootstrap.importlib.util, "find_spec", lambda name: None)
    assert _bootstrap.unsloth_wanted() is False


def test_warns_when_transformers_came_first(fake_unsloth, monkeypatch, caplog):
    import transformers  # noqa: F401  (imported before unsloth on purpose)

    monkeypatch.setenv(_bootstrap.BACKEND_ENV, "unsloth")
    with caplog.at_level(logging.WARNING, logger="gapo_lite"):
        assert _bootstrap.import_unsloth_first() is True
    assert "unsloth" in sys.modules and "transformers" in sys.modules["unsloth"].imported_after
    warning = [r.getMessage() for r in caplog.records if r.name == "gapo_lite"]
    assert len(warning) == 1 and "transformers" in warning[0] and "imported before unsloth" in warning[0]


def test_quiet_when_unsloth_is_not_wanted_or_already_imported(fake_unsloth, monkeypatch, caplog):
    monkeypatch.setenv(_bootstrap.BACKEND_ENV, "transformers")
    with caplog.at_level(logging.WARNING, logger="gapo_lite"):
        assert _bootstrap.import_unsloth_first() is False
        assert "unsloth" not in sys.modules
        monkeypatch.setitem(sys.modules, "unsloth", object())
        assert _bootstrap.import_unsloth_first() is True
    assert not [r for r in caplog.records if r.name == "gapo_lite"]


def _python(code: str, fake_dir: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, _bootstrap.BACKEND_ENV: "unsloth", "PYTHONPATH": os.pathsep.join([str(fake_dir), str(ROOT)])}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)


def test_import_order_as_a_user_sees_it(tmp_path):
    """In a fresh interpreter: importing trl before gapo_lite prints the warning; gapo_lite first does not."""
    (tmp_path / "unsloth.py").write_text(FAKE_UNSLOTH)
    late = _python("import trl, gapo_lite, unsloth; print(unsloth.imported_after)", tmp_path)
    assert late.returncode == 0, late.stderr
    assert "trl" in late.stderr and "imported before unsloth" in late.stderr
    early = _python("import gapo_lite, unsloth, trl; print(unsloth.imported_after)", tmp_path)
    assert early.returncode == 0, early.stderr
    assert "imported before unsloth" not in early.stderr and early.stdout.strip() == "[]"
