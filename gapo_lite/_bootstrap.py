"""Which backend runs, decided in one place, and importing Unsloth before trl/transformers/peft when it does.

``import gapo_lite`` imports Unsloth only when ``GAPO_LITE_BACKEND=unsloth`` asks for it. Otherwise the run's
run plan (``gapo_lite.runplan``) or ``load_model`` imports it when they choose the Unsloth
backend; gapo-lite itself imports no trl/transformers/peft before that point. A run with
``backend="transformers"`` never imports Unsloth, GPU or not.
"""
from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import sys
from collections.abc import Iterator

logger = logging.getLogger("gapo_lite")

BACKEND_ENV = "GAPO_LITE_BACKEND"
BACKENDS = ("auto", "unsloth", "transformers")
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
REQUESTED_PRECISIONS = ("auto", "bf16", "fp32")  # what a user may ask for, on a GPU or a CPU


def cpu_precision(requested: str = "auto") -> str:
    """The CPU's compute precision: ``"fp32"`` unless ``"bf16"`` (autocast, weights kept in fp32) is asked for,
    by ``requested`` or by ``$GAPO_LITE_CPU_PRECISION`` when ``"auto"``; ``"bf16"`` on a CPU without native bf16
    is refused (it would be several times slower).

    "auto" is fp32 even where bf16 is native because autocast keeps bf16 copies only of weights that require
    grad: under LoRA the frozen base weights are re-cast on every forward, and a SmolLM2 GAPO step (16 rows of
    8 tokens after a shared prompt) measured 4.12 s in bf16 against 3.07 s in fp32 on an AMX Xeon
    (``benchmarks/smollm2_step.py``, docs/smollm2.md). Long full-model batches may gain; measure before asking."""
    if requested == "auto":
        requested = os.environ.get(PRECISION_ENV, "auto").lower()
    if requested not in REQUESTED_PRECISIONS:
        raise ValueError(f"CPU precision must be 'auto', 'bf16' or 'fp32', got {requested!r}")
    if requested == "fp32":
        return "fp32"
    if requested == "bf16" and not cpu_bf16_native():
        raise ValueError("precision 'bf16' asked for, but this CPU has no native bf16 (AVX512-BF16 / AMX); use 'fp32' or 'auto'")
    return "bf16" if requested == "bf16" else "fp32"


def choose_backend(requested: str, cuda: bool, has_unsloth: bool) -> tuple[str, str]:
    """The concrete backend for ``requested`` ("auto", "unsloth", "transformers") and why."""
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
    raise ValueError(f"unknown backend {requested!r}; expected 'auto', 'unsloth' or 'transformers'")


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
