"""``HardwarePlan``: what a run's hardware decides, resolved once (backend, processes, precision, optimizer, checkpointing).

Everything downstream (the memory planner, ``load_model``, TRL's ``GRPOConfig``, ``scripts/gpu_check.py``)
takes this one object instead of asking torch or the environment again.

Precision: ``torch.cuda.is_bf16_supported()`` counts emulation and says True on a T4 (compute capability
7.5), where Unsloth loads the model in fp16 and its trainer then refuses ``bf16=True``. So on the Unsloth
backend neither ``bf16`` nor ``fp16`` is passed (Unsloth picks from the loaded model: bf16 from capability
8.0, else fp16); elsewhere bf16 is used only where the GPU has it natively
(``is_bf16_supported(including_emulation=False)``), else fp16; on a CPU, fp32.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from gapo_lite._bootstrap import choose_backend, cuda_available, import_backend, unsloth_installed

PRECISIONS = ("unsloth", "bf16", "fp16", "fp32")
EIGHT_BIT_OPTIMIZERS = ("adamw_8bit", "adamw_bnb_8bit", "paged_adamw_8bit", "adamw_torch_8bit")


def native_bf16() -> bool:
    """True when the current CUDA GPU computes in bf16 natively (compute capability >= 8), emulation not counted."""
    import torch

    return bool(torch.cuda.is_bf16_supported(including_emulation=False))


def world_size() -> int:
    """Number of training processes (``WORLD_SIZE`` as set by torchrun / accelerate; 1 otherwise)."""
    value = os.environ.get("WORLD_SIZE", "1")
    try:
        size = int(value)
    except ValueError:
        raise ValueError(f"WORLD_SIZE must be a positive integer, got {value!r}") from None
    if size < 1:
        raise ValueError(f"WORLD_SIZE must be a positive integer, got {value!r}")
    return size


@dataclass(frozen=True)
class HardwarePlan:
    """The run's hardware decisions. Build it with :func:`resolve_hardware`."""

    cuda: bool
    world_size: int
    backend: str
    backend_reason: str
    precision: str
    optim: str
    gradient_checkpointing: bool
    load_in_4bit: bool
    fast_inference: bool = False

    def __post_init__(self) -> None:
        if self.backend not in ("unsloth", "transformers"):
            raise ValueError(f"HardwarePlan.backend must be 'unsloth' or 'transformers', got {self.backend!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"HardwarePlan.precision must be one of {PRECISIONS}, got {self.precision!r}")
        if self.world_size < 1:
            raise ValueError(f"HardwarePlan.world_size must be >= 1, got {self.world_size}")
        if self.fast_inference and not (self.cuda and self.backend == "unsloth"):
            raise ValueError("fast_inference=True is Unsloth's colocated vLLM: it needs backend 'unsloth' on a CUDA GPU")

    def precision_flags(self) -> dict[str, bool]:
        """``bf16`` / ``fp16`` for TRL's config: both False on Unsloth (it picks) and on a CPU."""
        return {"bf16": self.precision == "bf16", "fp16": self.precision == "fp16"}

    @property
    def planner_optimizer(self) -> str:
        """The memory planner's optimizer term for ``optim``: 8-bit AdamW states, or fp32 ones (AdamW and the rest)."""
        return "adamw_8bit" if self.optim in EIGHT_BIT_OPTIMIZERS else "adamw"

    @property
    def quantization(self) -> str:
        """Weights as the planner counts them: 4-bit (CUDA only), 16-bit on a GPU, 32-bit on a CPU."""
        if self.load_in_4bit:
            return "4bit"
        return "16bit" if self.cuda else "32bit"

    def describe(self) -> str:
        """One line for the log."""
        return (
            f"backend {self.backend} ({self.backend_reason}); {'CUDA' if self.cuda else 'CPU'}, {self.world_size} process(es); "
            f"precision {self.precision}; optimizer {self.optim}; gradient checkpointing {'on' if self.gradient_checkpointing else 'off'}; "
            f"weights {self.quantization}{'; vLLM generation' if self.fast_inference else ''}"
        )

    def import_backend(self) -> None:
        """Import the chosen backend's packages in the right order (Unsloth before trl); nothing for transformers."""
        import_backend(self.backend)


def choose_precision(backend: str, cuda: bool) -> str:
    """``"unsloth"`` (Unsloth picks), ``"bf16"`` on a GPU with native bf16, ``"fp16"`` on one without, ``"fp32"`` on a CPU."""
    if not cuda:
        return "fp32"
    if backend == "unsloth":
        return "unsloth"
    return "bf16" if native_bf16() else "fp16"


def resolve_hardware(config: Any, *, cuda: bool | None = None, has_unsloth: bool | None = None, processes: int | None = None) -> HardwarePlan:
    """Decide backend, process count, precision, optimizer, checkpointing and 4-bit for ``config`` (a ``TrainConfig``).

    ``cuda``, ``has_unsloth`` and ``processes`` default to what this machine says (torch, the installed
    packages, ``WORLD_SIZE``)."""
    cuda = cuda_available() if cuda is None else cuda
    has_unsloth = unsloth_installed() if has_unsloth is None else has_unsloth
    backend, reason = choose_backend(config.backend, cuda, has_unsloth)
    optim = ("adamw_8bit" if cuda else "adamw_torch") if config.optim == "auto" else config.optim
    return HardwarePlan(
        cuda=cuda,
        world_size=world_size() if processes is None else processes,
        backend=backend,
        backend_reason=reason,
        precision=choose_precision(backend, cuda),
        optim=optim,
        gradient_checkpointing=cuda if config.gradient_checkpointing is None else bool(config.gradient_checkpointing),
        load_in_4bit=bool(config.load_in_4bit and cuda),
        fast_inference=bool(config.fast_inference),
    )
