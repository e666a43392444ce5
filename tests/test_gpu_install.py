"""scripts/gpu_install.py: the torch check runs before pip, vLLM is offered only where a release matches, and
(slow, network) pip's resolver for Python 3.12 / manylinux x86_64 gives the outcomes the README promises."""
from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = runpy.run_path(str(ROOT / "scripts" / "gpu_install.py"), run_name="gpu_install")
pip_steps, InstallError = SCRIPT["pip_steps"], SCRIPT["InstallError"]
HELD = {"torch": None, "numpy": "2.4.6", "pillow": "12.1.0"}


def steps(torch: str | None, vllm: bool = False) -> list[list[str]]:
    return pip_steps(torch, {**HELD, "torch": torch}, vllm, "held.txt")


@pytest.mark.parametrize("torch", ["2.4.0", "2.12.1", "2.13.0", "2.13.0+cu128", "2.14.1"])
def test_torch_in_unsloths_range_gives_one_resolve(torch):
    (only,) = steps(torch)
    assert only == ["-c", str(ROOT / "constraints.txt"), "-c", "held.txt", ".[gpu]"]


@pytest.mark.parametrize("torch", ["2.15.0", "2.3.1", None])
def test_torch_outside_the_range_stops_before_pip_with_a_clear_message(torch):
    with pytest.raises(InstallError) as err:
        steps(torch)
    assert "2.4.0" in err.value.message and "2.15.0" in err.value.message and "pip install torch==2.13.0" in err.value.message


def test_vllm_only_where_a_release_matches_torch():
    assert steps("2.13.0", vllm=True)[1][-1] == "vllm>=0.27,<0.33"
    assert steps("2.14.0", vllm=True)[1][-2:] == ["vllm==0.33.0", "pillow>=13"]
    for torch in ("2.12.1", "2.14.1"):
        with pytest.raises(InstallError, match=f"no vLLM release is built for torch {torch}"):
            steps(torch, vllm=True)


def test_the_script_stops_with_exit_2_and_runs_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(SCRIPT["main"].__globals__, "installed", lambda name: "2.15.0" if name == "torch" else None)
    ran = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: ran.append(a))
    assert SCRIPT["main"](["--held", str(tmp_path / "held.txt")]) == 2
    assert not ran and not (tmp_path / "held.txt").exists()
    assert "outside the range" in capsys.readouterr().err


def test_constraints_pin_the_tested_set_of_requirements_txt():
    def pins(path):
        lines = [line.split("#")[0].strip() for line in (ROOT / path).read_text().splitlines()]
        return dict(line.split("==") for line in lines if "==" in line)

    tested, constraints = pins("requirements.txt"), pins("constraints.txt")
    assert "torch" not in constraints  # the machine's CUDA torch stays
    assert {k: tested[k] for k in constraints} == constraints
    assert {"unsloth", "unsloth_zoo", "trl", "transformers"} <= set(constraints)


def test_the_range_is_the_pinned_unsloths():
    import importlib.metadata

    try:
        requires = importlib.metadata.requires("unsloth") or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("unsloth is not installed here")
    assert importlib.metadata.version("unsloth") == "2026.10.9"
    assert "torch<2.15.0,>=2.4.0" in [r.replace(" ", "") for r in requires]


# --- the resolver, for real (network) -----------------------------------------------------------------------------

# manylinux x86_64 at Colab's glibc 2.35 (Ubuntu 22.04) and every older tag it runs (pip < 24 does not expand them
# itself); vLLM's llguidance 1.7 ships manylinux_2_31 wheels only
PLATFORMS = [arg for tag in [*(f"manylinux_2_{minor}" for minor in range(35, 4, -1)), "manylinux2014", "manylinux2010", "manylinux1"]
             for arg in ("--platform", f"{tag}_x86_64")]


def resolve(tmp_path: Path, torch: str, requirements: list[str], constraint_files: list[str], expect_ok: bool = True) -> dict[str, str]:
    """pip's dry run for Python 3.12 / manylinux x86_64, nothing installed: name -> version it would install."""
    report = tmp_path / f"report-{len(list(tmp_path.iterdir()))}.json"
    held = tmp_path / "held.txt"
    held.write_text(f"torch=={torch}\n")
    quiet = ["--quiet"] if expect_ok else []  # a failure's cause ("The conflict is caused by: ...") is printed at info level
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", *quiet, "--python-version", "3.12",
               *PLATFORMS, "--only-binary=:all:", "--target", str(tmp_path / "target"), "--report", str(report)]
    for c in constraint_files:
        command += ["-c", c.replace("held.txt", str(held))]
    done = subprocess.run([*command, *requirements], capture_output=True, text=True, timeout=2400,
                          env={**os.environ, "PIP_CONFIG_FILE": os.devnull})  # PyPI itself: no local mirror or cap
    if not expect_ok:
        assert done.returncode != 0, "resolved, where it should not"
        return {"stderr": done.stdout + done.stderr}
    assert done.returncode == 0, done.stderr[-3000:]
    return {item["metadata"]["name"].lower().replace("_", "-"): item["metadata"]["version"] for item in json.loads(report.read_text())["install"]}


@pytest.fixture(scope="module")
def kit_wheel(tmp_path_factory):
    import shutil

    out = tmp_path_factory.mktemp("wheel")
    source = out / "src"  # a copy: building in the checkout would leave build/ there
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for name in tracked:
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)], check=True)
    (wheel,) = out.glob("gapo_lite-*.whl")
    return wheel


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.parametrize("torch", ["2.13.0", "2.14.1"])
@pytest.mark.parametrize("with_vllm", [False, True])
def test_the_install_resolves_at_torch(tmp_path, kit_wheel, torch, with_vllm):
    versions = {"torch": torch, "numpy": None, "pillow": None}
    if with_vllm and torch == "2.14.1":
        with pytest.raises(InstallError, match="no vLLM release"):
            pip_steps(torch, versions, True, "held.txt", f"{kit_wheel}[gpu]")
        return  # not offered: the first step alone is what runs
    plan = pip_steps(torch, versions, with_vllm, "held.txt", f"{kit_wheel}[gpu]")
    first = resolve(tmp_path, torch, [plan[0][-1]], [plan[0][1], plan[0][3]])
    assert first["torch"] == torch
    assert (first["unsloth"], first["unsloth-zoo"], first["trl"], first["transformers"]) == ("2026.10.9", "2026.10.9", "1.14.2", "5.17.0")
    if with_vllm:
        step = plan[1]
        reqs = step[4:]
        second = resolve(tmp_path, torch, [f"{kit_wheel}[gpu]", *reqs], [step[1], step[3]])
        assert second["torch"] == torch and second["unsloth"] == "2026.10.9" and "vllm" in second


@pytest.mark.slow
@pytest.mark.network
def test_at_a_torch_outside_the_range_the_pinned_unsloth_does_not_resolve(tmp_path):
    """What the check prevents: at torch 2.15.0 the pinned unsloth cannot be installed (an unpinned `unsloth`
    silently falls back to 2026.3.11 with trl 0.24.0, whose GRPOConfig lacks router_aux_loss_coef), so the
    script stops before pip."""
    with pytest.raises(InstallError, match="outside the range"):
        pip_steps("2.15.0", {"torch": "2.15.0"}, False, "held.txt")
    failed = resolve(tmp_path, "2.15.0", ["unsloth==2026.10.9"], ["held.txt"], expect_ok=False)
    assert "Cannot install unsloth==2026.10.9" in failed["stderr"] and "torch==2.15.0" in failed["stderr"], failed["stderr"][-3000:]
