"""The Colab notebook's install and GPU cells, run here with subprocess and CUDA faked (config inspection, no GPU)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import torch

nbformat = pytest.importorskip("nbformat")

COLAB = Path(__file__).resolve().parents[1] / "notebooks" / "gapo_qwen7b_colab.ipynb"


def cells():
    return nbformat.read(COLAB, as_version=4).cells


def install_cell() -> str:
    (cell,) = [c for c in cells() if "colab-only" in c.get("metadata", {}).get("tags", [])]
    return cell.source


def run_install(tmp_path, monkeypatch, url: str | None = None) -> list[list[str]]:
    calls: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, check=False, **kw: calls.append(list(cmd)))
    monkeypatch.chdir(tmp_path)
    source = install_cell()
    if url is not None:
        source = source.replace("https://github.com/YOUR-GITHUB-USER/gapo-lite", url)
    exec(compile(source, "install-cell", "exec"), {})
    return calls


def test_placeholder_repo_url_stops_with_a_clear_message(tmp_path, monkeypatch):
    with pytest.raises(SystemExit, match="Set REPO_URL"):
        run_install(tmp_path, monkeypatch)
    assert not (tmp_path / "constraints.txt").exists()  # nothing cloned, nothing installed


def test_unsloth_first_then_the_kit_without_repinning_torch_or_numpy(tmp_path, monkeypatch):
    import importlib.metadata

    calls = run_install(tmp_path, monkeypatch, url="https://example.org/gapo-lite.git")
    assert calls[0][:2] == ["git", "clone"] and calls[0][-2] == "https://example.org/gapo-lite.git"
    pips = [c for c in calls if c[1:4] == ["-m", "pip", "install"]]
    assert len(pips) == 2
    unsloth, kit = pips
    assert "unsloth" in unsloth and unsloth[unsloth.index("-c") + 1] == "constraints.txt"
    assert kit[-1] == "gapo-lite" and "-c" in kit  # the kit after Unsloth, under the same constraints
    assert not any(arg.startswith(("torch", "numpy", "pillow")) for call in pips for arg in call)  # never re-pinned on the line
    pins = (tmp_path / "constraints.txt").read_text().split()
    assert pins == [f"torch=={importlib.metadata.version('torch')}", f"numpy=={importlib.metadata.version('numpy')}",
                    f"pillow=={importlib.metadata.version('pillow')}"]
    assert "vllm" not in unsloth  # WITH_VLLM defaults to False


def test_with_vllm_installs_it_beside_unsloth(tmp_path, monkeypatch):
    calls: list[list[str]] = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, check=False, **kw: calls.append(list(cmd)))
    monkeypatch.chdir(tmp_path)
    source = install_cell().replace("WITH_VLLM = False", "WITH_VLLM = True").replace("https://github.com/YOUR-GITHUB-USER/gapo-lite", "https://example.org/g.git")
    exec(compile(source, "install-cell", "exec"), {})
    unsloth = [c for c in calls if "unsloth" in c][0]
    assert unsloth[-2:] == ["unsloth", "vllm"]


def test_t4_guard_fires_on_a_t4(monkeypatch, capsys):
    """The GPU cell reports a T4 (capability 7.5, bf16 only emulated) as fp16; an A100 as native bf16."""
    (gpu_cell,) = [c for c in cells() if c.cell_type == "code" and "FREE_GB = None" in c.source]
    assert "including_emulation=False" in gpu_cell.source
    for c in cells():
        if c.cell_type == "code":
            assert "is_bf16_supported()" not in c.source  # the emulation-counting call would say True on a T4
        assert "extra_grpo_args" not in c.source  # precision is the hardware plan's job, not a notebook override
    for major, expected in ((7, "native bf16: False (trains in fp16)"), (8, "native bf16: True")):
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (14 * 2**30, 15 * 2**30))
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Tesla T4" if major == 7 else "A100")
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True, m=major: True if including_emulation else m >= 8)
        exec(compile(gpu_cell.source, "gpu-cell", "exec"), {})
        out = capsys.readouterr().out
        assert expected in out and ("(trains in fp16)" in out) == (major == 7)
