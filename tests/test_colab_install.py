"""The Colab notebook's install and GPU cells, run here with subprocess and CUDA faked (config inspection, no GPU)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import torch

nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[1]
COLAB = ROOT / "notebooks" / "gapo_qwen7b_colab.ipynb"


def cells():
    return nbformat.read(COLAB, as_version=4).cells


def install_cell() -> str:
    (cell,) = [c for c in cells() if "colab-only" in c.get("metadata", {}).get("tags", [])]
    return cell.source


def run_install(tmp_path, monkeypatch, url: str | None = None, vllm: bool = False, torch_version: str | None = None) -> list[list[str]]:
    """Run the cell in ``tmp_path``: `git clone` links the checkout there, pip calls are recorded, not run."""
    import importlib.metadata

    calls: list[list[str]] = []

    def fake_run(cmd, check=False, **kw):
        calls.append(list(cmd))
        if cmd[:2] == ["git", "clone"]:
            Path(cmd[-1]).symlink_to(ROOT)

    monkeypatch.setattr(subprocess, "run", fake_run)
    if torch_version is not None:
        real = importlib.metadata.version
        monkeypatch.setattr(importlib.metadata, "version", lambda name: torch_version if name == "torch" else real(name))
    monkeypatch.chdir(tmp_path)
    source = install_cell()
    if url is not None:
        source = source.replace("https://github.com/YOUR-GITHUB-USER/gapo-lite", url)
    if vllm:
        source = source.replace("WITH_VLLM = False", "WITH_VLLM = True")
    exec(compile(source, "install-cell", "exec"), {})
    return calls


def pips(calls):
    return [c for c in calls if c[1:4] == ["-m", "pip", "install"]]


def test_placeholder_repo_url_stops_with_a_clear_message(tmp_path, monkeypatch):
    with pytest.raises(SystemExit, match="Set REPO_URL"):
        run_install(tmp_path, monkeypatch)
    assert not (tmp_path / "held-constraints.txt").exists()  # nothing cloned, nothing installed


def test_one_resolve_of_the_kit_with_its_gpu_extra_under_the_constraints(tmp_path, monkeypatch):
    import importlib.metadata

    calls = run_install(tmp_path, monkeypatch, url="https://example.org/gapo-lite.git")
    assert calls[0][:2] == ["git", "clone"] and calls[0][-2] == "https://example.org/gapo-lite.git"
    (kit,) = pips(calls)  # one pip call: WITH_VLLM defaults to False
    assert kit[-1].endswith("[gpu]") and kit[kit.index("-c") + 1] == str(ROOT / "constraints.txt")
    assert "held-constraints.txt" in kit
    assert not any(arg.startswith(("torch", "numpy", "pillow", "unsloth")) for arg in kit)  # never re-pinned on the line
    pins = (tmp_path / "held-constraints.txt").read_text().split()
    assert pins == [f"{n}=={importlib.metadata.version(n)}" for n in ("torch", "numpy", "pillow")]


def test_a_torch_outside_unsloths_range_stops_before_pip(tmp_path, monkeypatch, capsys):
    with pytest.raises(SystemExit, match="Stopped before pip"):
        run_install(tmp_path, monkeypatch, url="https://example.org/g.git", torch_version="2.15.0")
    assert "outside the range the pinned unsloth 2026.10.9 accepts" in capsys.readouterr().err


def test_with_vllm_it_is_a_second_step_only_where_a_release_matches(tmp_path, monkeypatch, capsys):
    calls = run_install(tmp_path, monkeypatch, url="https://example.org/g.git", vllm=True, torch_version="2.13.0")
    kit, vllm = pips(calls)
    assert kit[-1].endswith("[gpu]") and vllm[-1] == "vllm>=0.27,<0.33"
    (tmp_path / "again").mkdir()
    with pytest.raises(SystemExit, match="Stopped before pip"):
        run_install(tmp_path / "again", monkeypatch, url="https://example.org/g.git", vllm=True, torch_version="2.14.1")
    assert "no vLLM release is built for torch 2.14.1" in capsys.readouterr().err


def test_t4_guard_fires_on_a_t4(monkeypatch, capsys):
    """The GPU cell reports a T4 (capability 7.5, bf16 only emulated) as fp16; an A100 as native bf16."""
    (gpu_cell,) = [c for c in cells() if c.cell_type == "code" and "FREE_GB = None" in c.source]
    assert "including_emulation=False" in gpu_cell.source
    for c in cells():
        if c.cell_type == "code":
            assert "is_bf16_supported()" not in c.source  # the emulation-counting call would say True on a T4
        assert "extra_grpo_args" not in c.source  # precision is the run plan's job, not a notebook override
    for major, expected in ((7, "native bf16: False (trains in fp16)"), (8, "native bf16: True")):
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (14 * 2**30, 15 * 2**30))
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Tesla T4" if major == 7 else "A100")
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True, m=major: True if including_emulation else m >= 8)
        exec(compile(gpu_cell.source, "gpu-cell", "exec"), {})
        out = capsys.readouterr().out
        assert expected in out and ("(trains in fp16)" in out) == (major == 7)
