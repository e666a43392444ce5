"""Which backend runs, decided in one place, and importing Unsloth before trl/transformers/peft when it does.

``import gapo_lite`` imports Unsloth only when ``GAPO_LITE_BACKEND=unsloth`` asks for it. Otherwise the run's
run plan (``gapo_lite.runplan``) or ``load_model`` imports it when they choose the Unsloth
backend; gapo-lite itself imports no trl/transformers/peft before that point. A run with
``backend="transformers"`` never imports Unsloth, GPU or not.

The backends a user may ask for, and what each command asks for by default, are :data:`BACKENDS`,
:data:`DEFAULT_BACKEND` and :data:`EVAL_BACKEND` below; every command line, ``TrainConfig`` and the planner read them here.
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Literal, get_args

logger = logging.getLogger("gapo_lite")

BACKEND_ENV = "GAPO_LITE_BACKEND"
Backend = Literal["auto", "unsloth", "transformers"]
BACKENDS: tuple[str, ...] = get_args(Backend)  # what a user may ask for
LOADERS: tuple[str, ...] = tuple(b for b in BACKENDS if b != "auto")  # what "auto" resolves to (choose_backend): the code that loads and trains the model
# Train and plan ask for "auto": Unsloth where a CUDA GPU and unsloth are present, else transformers + peft
# (choose_backend). `gapo-lite plan` resolves it on the machine it describes: a CUDA GPU with the GPU install
# (Unsloth), where train() would run.
DEFAULT_BACKEND = "auto"
# Eval differs: it samples with transformers' generate and switches adapters with peft (eval/runner.py's
# ModelPool), the same code on a CPU and a GPU, so a report's figures do not depend on whether Unsloth is installed.
EVAL_BACKEND = "transformers"
_PATCHED_BY_UNSLOTH = ("trl", "transformers", "peft")


def unsloth_installed() -> bool:
    """True when the unsloth package can be imported (it is not imported here)."""
    return importlib.util.find_spec("unsloth") is not None


def cuda_available() -> bool:
    """True when torch sees a CUDA GPU."""
    import torch

    return torch.cuda.is_available()


def cpu_bf16_native() -> bool:
    """True when this CPU computes bf16 matrix products in hardware (AVX512-BF16 or AMX); elsewhere bf16 is
    emulated and several times slower than fp32."""
    import torch

    cpu = getattr(torch, "cpu", None)
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(cpu, name, lambda: False)()) for name in checks)


PRECISION_ENV = "GAPO_LITE_CPU_PRECISION"
RequestedPrecision = Literal["auto", "bf16", "fp32"]
REQUESTED_PRECISIONS: tuple[str, ...] = get_args(RequestedPrecision)  # what a user may ask for, on a GPU or a CPU
# "auto" takes bf16 autocast where the probe step runs in under this share of its fp32 time. The probe is a LoRA
# layer's forward and backward; a real GAPO step also samples and scores, at about the same speed in either, so it
# gains less (a Zen 4: probe 0.63-0.77 in benchmarks/cpu_precision.py, SmolLM2 step 0.91 in benchmarks/smollm2_step.py).
BF16_PROBE_RATIO = 0.8


def cache_dir() -> Path:
    """The kit's cache folder: ``$GAPO_LITE_CACHE``, else ``$XDG_CACHE_HOME/gapo-lite`` (default ``~/.cache/gapo-lite``)."""
    return Path(os.environ.get("GAPO_LITE_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gapo-lite")


def cpu_identity() -> str:
    """This CPU, its torch and its thread count, as the key of a cached measurement: ``/proc/cpuinfo``'s model name,
    family and model where it exists (a model name alone, "AMD EPYC", does not tell Zen 3 from Zen 4)."""
    import platform

    import torch

    fields: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "cpu family", "model") and key.strip() not in fields:
                fields[key.strip()] = value.strip()
    name = " / ".join(fields.values()) or platform.processor() or platform.machine()
    return f"{name}; torch {torch.__version__}; {torch.get_num_threads()} thread(s)"


def cached_bf16_ratios() -> dict[str, float]:
    """The measured ratios in ``<cache>/cpu_precision.json``, by :func:`cpu_identity` (empty when there is none)."""
    try:
        return json.loads((cache_dir() / "cpu_precision.json").read_text())
    except (OSError, ValueError):
        return {}


def measured_bf16_ratio() -> float:
    """:func:`gapo_lite.probes.bf16_step_ratio` on this CPU, measured once and kept in ``<cache>/cpu_precision.json``
    under :func:`cpu_identity` (delete the file to measure again)."""
    from gapo_lite.probes import bf16_step_ratio

    path = cache_dir() / "cpu_precision.json"
    key = cpu_identity()
    known = cached_bf16_ratios()
    if key not in known:
        known[key] = round(bf16_step_ratio(), 3)
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(known, indent=1) + "\n")
    return float(known[key])


def cpu_precision(requested: str = "auto") -> str:
    """The CPU's compute precision: ``"fp32"``, or ``"bf16"`` (autocast, weights kept in fp32), as ``requested``
    or ``$GAPO_LITE_CPU_PRECISION`` says; ``"bf16"`` on a CPU without native bf16 is refused (several times slower).

    "auto" is measured: bf16 where the CPU has it natively and a LoRA step under autocast takes less than
    ``BF16_PROBE_RATIO`` of its fp32 time (:func:`measured_bf16_ratio`), else fp32. Native is not enough: autocast
    keeps bf16 copies only of weights that require grad, so under LoRA every frozen weight is cast again at every
    forward, and a SmolLM2 GAPO step measured 4.12 s in bf16 against 3.07 s in fp32 on an AMX Xeon but 3.07 s
    against 3.37 s on a Zen 4 (``benchmarks/smollm2_step.py``). In fp32 and bf16 the SmolLM2 experiment's results
    agree within their noise (docs/smollm2.md)."""
    if requested == "auto":
        requested = os.environ.get(PRECISION_ENV, "auto").lower()
    if requested not in REQUESTED_PRECISIONS:
        raise ValueError(f"CPU precision must be 'auto', 'bf16' or 'fp32', got {requested!r}")
    if requested == "fp32":
        return "fp32"
    if not cpu_bf16_native():
        if requested == "bf16":
            raise ValueError("precision 'bf16' asked for, but this CPU has no native bf16 (AVX512-BF16 / AMX); use 'fp32' or 'auto'")
        return "fp32"
    if requested == "bf16":
        return "bf16"
    return "bf16" if measured_bf16_ratio() < BF16_PROBE_RATIO else "fp32"


def cpu_precision_note(requested: str = "auto") -> str:
    """Why the CPU runs as it does, for the plan line: the measured ratio when ``requested`` "auto" measured one."""
    if requested != "auto" or os.environ.get(PRECISION_ENV, "auto").lower() != "auto" or not cpu_bf16_native():
        return ""
    ratio = cached_bf16_ratios().get(cpu_identity())
    return "" if ratio is None else f" (bf16 autocast measured {ratio:.2f}x fp32's time here, threshold {BF16_PROBE_RATIO})"


def choose_backend(requested: str, cuda: bool, has_unsloth: bool) -> tuple[str, str]:
    """The concrete backend (one of :data:`LOADERS`) for ``requested`` (one of :data:`BACKENDS`) and why."""
    if requested == "auto":
        if cuda and has_unsloth:
            return "unsloth", "a CUDA GPU and unsloth are present"
        if cuda:
            return "transformers", "a CUDA GPU is present but unsloth is not installed"
        return "transformers", "no CUDA GPU: transformers + peft on the CPU, fp32 weights"
    if requested == "unsloth":
        if not has_unsloth:
            raise ImportError("backend='unsloth' but unsloth is not installed; pip install -r requirements.txt")
        return "unsloth", "asked for" if cuda else "asked for; no CUDA GPU, so Unsloth's CPU fallback (no 4-bit, no vLLM)"
    if requested == "transformers":
        return "transformers", "asked for"
    raise ValueError(f"unknown backend {requested!r}; expected one of {', '.join(BACKENDS)}")


def unsloth_wanted() -> bool:
    """True when the environment asks for Unsloth (``GAPO_LITE_BACKEND=unsloth``) and it is installed."""
    return os.environ.get(BACKEND_ENV, "auto").lower() == "unsloth" and unsloth_installed()


def import_unsloth() -> None:
    """Import unsloth now (it patches trl/transformers/peft); warn if those were imported before it."""
    if "unsloth" in sys.modules:
        return
    early = [m for m in _PATCHED_BY_UNSLOTH if m in sys.modules]
    if early:
        logger.warning(
            "gapo-lite: %s imported before unsloth; Unsloth's patches may not apply. Import gapo_lite (or unsloth) first.",
            ", ".join(early),
        )
    import unsloth  # noqa: F401  (patches trl/transformers/peft at import)


def import_backend(backend: str) -> None:
    """Make ``backend`` importable in the right order: Unsloth first for "unsloth", nothing for "transformers"."""
    if backend == "unsloth":
        import_unsloth()


def import_unsloth_first() -> bool:
    """Import unsloth now if the environment asks for it (see :func:`unsloth_wanted`); True if it is imported."""
    if "unsloth" in sys.modules:
        return True
    if not unsloth_wanted():
        return False
    import_unsloth()
    return True


@contextlib.contextmanager
def environment(name: str, value: str | None) -> Iterator[None]:
    """``$name`` set to ``value`` for the block (left as it is when ``value`` is None), then restored as it was."""
    old = os.environ.get(name)
    if value is not None:
        os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old
