"""Install gapo-lite for a CUDA GPU in one resolve, or say why not before pip runs.

    python scripts/gpu_install.py              # the kit with its [gpu] extra under constraints.txt, torch kept
    python scripts/gpu_install.py --vllm       # then, as a separate step, vLLM (only where a release matches torch)
    python scripts/gpu_install.py --dry-run    # print the pip commands, run nothing

Why a script: the installed torch decides everything. unsloth 2026.10.9 (pinned in constraints.txt) accepts
torch >= 2.4.0, < 2.15.0; outside that range pip does not fail, it silently falls back to an old Unsloth whose
trl lacks `GRPOConfig` fields the kit passes, and training fails far from the install. So torch is read from
the installed metadata (never imported: pip may replace what an import would load) and checked first. Then one
``pip install -c constraints.txt -c <held>.txt ".[gpu]"``, with ``<held>`` holding the installed torch, numpy
and pillow (Colab's own builds stay). vLLM pins one torch per release, so it is offered only where one matches.

Standard library only: it runs before anything is installed (the Colab notebook's install cell calls it too).
"""
from __future__ import annotations

import argparse
import importlib.metadata
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "constraints.txt"

# unsloth 2026.10.9's and unsloth_zoo 2026.10.9's own requirement (their METADATA: torch<2.15.0,>=2.4.0).
TORCH_MIN, TORCH_BELOW = (2, 4, 0), (2, 15, 0)
# The vLLM releases built for each torch (vLLM pins torch exactly), and what else they need at that torch.
VLLM_FOR_TORCH: dict[str, list[str]] = {
    "2.13.0": ["vllm>=0.27,<0.33"],
    "2.14.0": ["vllm==0.33.0", "pillow>=13"],
}
HELD = ("torch", "numpy", "pillow")


class InstallError(SystemExit):
    """A reason not to run pip, said in one message (exit status 2)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def release(version: str) -> tuple[int, int, int]:
    """(major, minor, patch) of '2.13.0+cu128' and the like."""
    parts = [int(p) for p in re.findall(r"\d+", version.split("+")[0])[:3]]
    return tuple(parts + [0] * (3 - len(parts)))  # type: ignore[return-value]


def installed(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def check_torch(version: str | None) -> str:
    """The installed torch's version if the pinned Unsloth accepts it; otherwise InstallError saying what to do."""
    wanted = f">= {'.'.join(map(str, TORCH_MIN))}, < {'.'.join(map(str, TORCH_BELOW))}"
    if version is None:
        raise InstallError(
            "gpu_install: no torch installed. Install a CUDA build first, e.g. `pip install torch==2.13.0` (PyPI's Linux "
            f"wheels are CUDA builds), then run this again. The pinned unsloth 2026.10.9 accepts torch {wanted}."
        )
    if not TORCH_MIN <= release(version) < TORCH_BELOW:
        raise InstallError(
            f"gpu_install: torch {version} is outside the range the pinned unsloth 2026.10.9 accepts (torch {wanted}). "
            "pip would silently fall back to an old Unsloth with a trl that lacks GRPOConfig fields gapo-lite passes. "
            "Install a torch in the range (e.g. `pip install torch==2.13.0`, or 2.14.1), then run this again. Nothing was installed."
        )
    return version


def vllm_requirements(torch_version: str) -> list[str] | None:
    """The vLLM requirement (and what it needs beside it) for this torch, or None when no vLLM release matches."""
    return VLLM_FOR_TORCH.get(".".join(map(str, release(torch_version))))


def held_pins(versions: dict[str, str | None]) -> list[str]:
    """``name==version`` for each held package that is installed."""
    return [f"{name}=={v}" for name, v in versions.items() if v]


def pip_steps(torch_version: str | None, versions: dict[str, str | None], with_vllm: bool, held_file: str, target: str = ".[gpu]") -> list[list[str]]:
    """The pip install argument lists to run, in order, after the checks; raises InstallError before any of them."""
    check_torch(torch_version)
    steps = [["-c", str(CONSTRAINTS), "-c", held_file, target]]
    if with_vllm:
        vllm = vllm_requirements(torch_version)
        if vllm is None:
            matches = ", ".join(f"torch {t}: {' '.join(r)}" for t, r in VLLM_FOR_TORCH.items())
            raise InstallError(
                f"gpu_install: no vLLM release is built for torch {torch_version} ({matches}); vLLM would replace torch. "
                "Run without --vllm (generation then runs in Unsloth / transformers: fast_inference=False), or install one "
                "of those torch versions first."
            )
        # vLLM pins torch exactly; pillow is released from the hold where the release needs a newer one
        extra_hold = [p for p in vllm if not p.startswith("vllm")]
        steps.append(["-c", str(CONSTRAINTS), "-c", held_file + (".vllm" if extra_hold else ""), *vllm])
    return steps


def write_held(path: Path, versions: dict[str, str | None], with_vllm: bool, torch_version: str) -> None:
    path.write_text("\n".join(held_pins(versions)) + "\n")
    vllm = vllm_requirements(torch_version) if with_vllm else None
    released = {re.split(r"[<>=!]", p)[0] for p in (vllm or []) if not p.startswith("vllm")}
    if released:
        kept = {k: v for k, v in versions.items() if k not in released}
        Path(str(path) + ".vllm").write_text("\n".join(held_pins(kept)) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vllm", action="store_true", help="also install vLLM (fast_inference=True), in a separate step")
    parser.add_argument("--dry-run", action="store_true", help="print the pip commands and run nothing")
    parser.add_argument("--held", default="held-constraints.txt", help="where to write the installed torch / numpy / pillow pins")
    parser.add_argument("--target", default=f"{ROOT}[gpu]", help="what to install (default: this checkout with the [gpu] extra)")
    args = parser.parse_args(argv)
    versions = {name: installed(name) for name in HELD}
    try:
        steps = pip_steps(versions["torch"], versions, args.vllm, args.held, args.target)
    except InstallError as err:
        print(err.message, file=sys.stderr)
        return 2
    write_held(Path(args.held), versions, args.vllm, versions["torch"])
    print(f"torch {versions['torch']}: in the pinned Unsloth's range; held: {', '.join(held_pins(versions))}")
    for step in steps:
        command = [sys.executable, "-m", "pip", "install", *step]
        print("$", shlex.join(command), flush=True)
        if not args.dry_run:
            subprocess.run(command, check=True)
    if not args.vllm:
        vllm = vllm_requirements(versions["torch"])
        offer = f"run again with --vllm ({' '.join(vllm)})" if vllm else f"no release matches torch {versions['torch']}; not offered"
        print(f"vLLM (optional): {offer}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
