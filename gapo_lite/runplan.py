"""The run plan: every decision about how a run executes, made once, from the config, the machine and (for
chunking) the loaded model. Everything downstream consumes this object and does not ask torch, the
environment or the config again.

Where each decision lives:

* backend (Unsloth or transformers + peft): :func:`gapo_lite._bootstrap.choose_backend`, called only from
  :func:`resolve_run_plan`. ``GAPO_LITE_BACKEND`` decides nothing about the run: it only tells ``import
  gapo_lite`` to import Unsloth first, before trl/transformers/peft, for scripts that import those early.
* precision: :func:`choose_precision` (GPU) and :func:`gapo_lite._bootstrap.cpu_precision` (CPU) ->
  ``RunPlan.precision``; the load dtype is ``RunPlan.torch_dtype`` and TRL's flags ``RunPlan.precision_flags()``.
* 4-bit weights: :func:`choose_4bit`, from what the installed bitsandbytes does on the device
  (:func:`gapo_lite.probes.bitsandbytes_4bit_problem`, one NF4 forward), not from "CUDA or not".
* optimizer, gradient checkpointing, ``fast_inference``: the fields of :class:`RunPlan`, set in
  :func:`resolve_run_plan` and checked in ``RunPlan.__post_init__``; "fast_inference needs Unsloth on CUDA" is
  :func:`fast_inference_problem`, which the memory planner asks too.
* world size: :func:`world_size` (``WORLD_SIZE``), read once into ``RunPlan.world_size``.
* batch divisibility: :mod:`gapo_lite.batching`, through ``RunPlan.per_process_batch`` / ``RunPlan.passes``
  (the planner and ``TrainConfig`` call the same functions).
* chunking: :func:`gapo_lite.training.trainer.resolve_chunk_size`, from this plan and, on CUDA, the memory plan
  of the loaded model's own config (:func:`gapo_lite.training.planning.plan_for_config`).
* "is this a local path?": :func:`gapo_lite.errors.looks_like_local_path`.

Precision: ``torch.cuda.is_bf16_supported()`` counts emulation and says True on a T4 (compute capability 7.5),
where Unsloth loads the model in fp16 and its trainer then refuses ``bf16=True``. So on the Unsloth backend
neither ``bf16`` nor ``fp16`` is passed (Unsloth picks from the loaded model: bf16 from capability 8.0, else
fp16); elsewhere bf16 is used only where the GPU has it natively (``is_bf16_supported(including_emulation=False)``),
else fp16. On a CPU: bf16 autocast (weights stay fp32) where the CPU computes bf16 natively and a timed LoRA step
says it is faster there, else fp32 (:func:`gapo_lite._bootstrap.cpu_precision`); ``TrainConfig.precision`` forces one.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

from gapo_lite import batching
from gapo_lite._bootstrap import (
    LOADERS,
    REQUESTED_PRECISIONS,
    choose_backend,
    cpu_precision,
    cpu_precision_note,
    cuda_available,
    import_backend,
    unsloth_installed,
)

PRECISIONS = ("unsloth", "bf16", "fp16", "fp32")
logger = logging.getLogger("gapo_lite")
EIGHT_BIT_OPTIMIZERS = ("adamw_8bit", "adamw_bnb_8bit", "paged_adamw_8bit", "adamw_torch_8bit")


def native_bf16() -> bool:
    """True when the current CUDA GPU computes in bf16 natively (compute capability >= 8), emulation not counted."""
    import torch

    return bool(torch.cuda.is_bf16_supported(including_emulation=False))


def visible_gpus() -> int:
    """CUDA GPUs this process sees (0 without CUDA)."""
    import torch

    return torch.cuda.device_count()


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


def fast_inference_problem(backend: str, cuda: bool) -> str | None:
    """Why ``fast_inference=True`` cannot run with ``backend`` here, or None when it can: it is Unsloth's colocated
    vLLM, so it needs the Unsloth backend on a CUDA GPU. The one statement of that rule: the run plan, the memory
    planner and its "what would fit" suggestions all ask here."""
    if not cuda:
        return "fast_inference=True is Unsloth's colocated vLLM: it needs backend 'unsloth' on a CUDA GPU (this machine has no CUDA GPU)"
    if backend != "unsloth":
        return f"fast_inference=True is Unsloth's colocated vLLM: it needs backend 'unsloth' on a CUDA GPU (the backend is {backend!r})"
    return None


@dataclass(frozen=True)
class RunPlan:
    """The run's decisions. Build it with :func:`run_plan_for` (from a ``TrainConfig``) or :func:`resolve_run_plan`."""

    cuda: bool
    world_size: int
    backend: str
    backend_reason: str
    precision: str
    optim: str
    gradient_checkpointing: bool
    load_in_4bit: bool
    fast_inference: bool = False
    precision_reason: str = ""  # on a CPU: what "auto" measured (gapo_lite._bootstrap.cpu_precision_note)

    def __post_init__(self) -> None:
        if self.backend not in LOADERS:
            raise ValueError(f"RunPlan.backend must be one of {LOADERS}, got {self.backend!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"RunPlan.precision must be one of {PRECISIONS}, got {self.precision!r}")
        if self.world_size < 1:
            raise ValueError(f"RunPlan.world_size must be >= 1, got {self.world_size}")
        if self.load_in_4bit and self.backend == "unsloth" and not self.cuda:
            raise ValueError("RunPlan.load_in_4bit on the CPU is served by the transformers backend; Unsloth's CPU fallback has no 4-bit")
        problem = fast_inference_problem(self.backend, self.cuda) if self.fast_inference else None
        if problem:
            raise ValueError(problem)

    def precision_flags(self) -> dict[str, bool]:
        """``bf16`` / ``fp16`` for TRL's config: both False on Unsloth (it picks); ``bf16`` on a CPU means autocast."""
        return {"bf16": self.precision == "bf16", "fp16": self.precision == "fp16"}

    @property
    def torch_dtype(self) -> Any:
        """The dtype the transformers backend loads weights in: the GPU's compute precision; fp32 on a CPU
        (bf16 there is autocast over fp32 weights)."""
        import torch

        if not self.cuda:
            return torch.float32
        return {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}.get(self.precision, torch.bfloat16)

    @property
    def compute_dtype(self) -> Any:
        """The dtype 4-bit layers compute in (bitsandbytes' ``bnb_4bit_compute_dtype``): the GPU's load dtype; on a
        CPU bf16 when the run autocasts to it, else fp32."""
        import torch

        if self.cuda:
            return self.torch_dtype
        return torch.bfloat16 if self.precision == "bf16" else torch.float32

    @property
    def planner_optimizer(self) -> str:
        """The memory planner's optimizer term for ``optim``: 8-bit AdamW states, or fp32 ones (AdamW and the rest)."""
        return "adamw_8bit" if self.optim in EIGHT_BIT_OPTIMIZERS else "adamw"

    @property
    def quantization(self) -> str:
        """Weights as the planner counts them: 4-bit, 16-bit on a GPU, 32-bit on a CPU."""
        if self.load_in_4bit:
            return "4bit"
        return "16bit" if self.cuda and self.precision != "fp32" else "32bit"

    def per_process_batch(self, config: Any) -> int:
        """Completions each process generates per step (the one divisibility rule, :mod:`gapo_lite.batching`)."""
        return batching.per_process_batch(config.prompts_per_step, config.num_generations, self.world_size)

    def passes(self, config: Any, chunk_size: int) -> int:
        """Forward/backward passes per optimizer step at ``chunk_size`` completions per pass."""
        return batching.passes_per_step(config.prompts_per_step, config.num_generations, self.world_size, chunk_size)

    @property
    def share_prompts(self) -> bool:
        """Whether each group's prompt goes through the model once (:mod:`gapo_lite.training.shared_prompt`), with
        gradient checkpointing on or off: on the transformers backend; Unsloth computes its log-probs its own way."""
        return self.backend == "transformers"

    @property
    def weights(self) -> str:
        """What the weights are, as the plan line says it."""
        if self.load_in_4bit:
            names = {"torch.bfloat16": "bf16", "torch.float16": "fp16", "torch.float32": "fp32"}
            compute = "as Unsloth picks" if self.precision == "unsloth" else names[str(self.compute_dtype)]
            return f"nf4 (bitsandbytes, double quant), compute {compute}"
        return self.quantization

    def describe(self) -> str:
        """One line for the log."""
        precision = f"{self.precision} autocast" if self.precision == "bf16" and not self.cuda else self.precision
        precision += self.precision_reason
        return (
            f"backend {self.backend} ({self.backend_reason}); {'CUDA' if self.cuda else 'CPU'}, {self.world_size} process(es); "
            f"precision {precision}; optimizer {self.optim}; gradient checkpointing {'on' if self.gradient_checkpointing else 'off'}; "
            f"weights {self.weights}{'; vLLM generation' if self.fast_inference else ''}"
            f"{'; each prompt computed once per group' if self.share_prompts else ''}"
        )

    def check_one_gpu_per_process(self, gpus: int | None = None) -> None:
        """Refuse a trainer that would drive several GPUs from one process.

        Launched without torchrun / accelerate, transformers' Trainer counts every visible GPU into ``n_gpu``
        (``training_args.py`` ~L1912-1917 in 5.17) and wraps the model in ``DataParallel``, which splits each
        micro-batch over the GPUs and multiplies the batch by their number (``trainer.py`` ~L1568): not the run
        the plan and the memory plan describe. ``gpus`` defaults to the GPUs torch sees."""
        gpus = visible_gpus() if gpus is None else gpus
        if self.cuda and self.world_size == 1 and gpus > 1:
            raise ValueError(
                f"{gpus} GPUs are visible to one training process, which transformers' Trainer would run as DataParallel "
                f"(each batch split over the GPUs and multiplied by {gpus}); train on one GPU (CUDA_VISIBLE_DEVICES=0 gapo-lite "
                f"train ...) or one process per GPU (accelerate launch --num_processes {gpus} -m gapo_lite.cli train ...)"
            )

    def import_backend(self) -> None:
        """Import the chosen backend's packages in the right order (Unsloth before trl); nothing for transformers."""
        import_backend(self.backend)


def choose_precision(backend: str, cuda: bool, requested: str = "auto") -> str:
    """``"unsloth"`` (Unsloth picks), ``"bf16"`` on a GPU with native bf16, ``"fp16"`` on one without; on a CPU
    :func:`~gapo_lite._bootstrap.cpu_precision`. ``requested`` ("auto", "bf16", "fp32") forces one; fp32 is refused
    on Unsloth on a GPU, whose trainer would autocast anyway (on its CPU fallback TRL's trainer runs, fp32 holds)."""
    if requested not in REQUESTED_PRECISIONS:
        raise ValueError(f"precision must be one of {REQUESTED_PRECISIONS}, got {requested!r}")
    if not cuda:
        return cpu_precision(requested)
    if requested == "fp32":
        if backend == "unsloth":
            raise ValueError(
                "precision 'fp32' cannot hold on the Unsloth backend: its trainer turns bf16 (or fp16) autocast on whenever "
                "neither is asked for (unsloth/models/rl.py ~L2673-2680 in 2026.10.9); use backend='transformers' for fp32, "
                "or precision 'auto'"
            )
        return "fp32"
    if requested == "bf16":
        if not native_bf16():
            raise ValueError("precision 'bf16' asked for, but this GPU has no native bf16 (compute capability < 8); use 'auto'")
        return "bf16"
    if backend == "unsloth":
        return "unsloth"
    return "bf16" if native_bf16() else "fp16"


def choose_4bit(requested: bool | None, backend: str, cuda: bool, problem: str | None) -> bool:
    """Whether the weights load in 4-bit: ``requested`` True / False, or None ("auto": on a CUDA GPU, not on a CPU).

    ``problem`` is why bitsandbytes cannot run 4-bit on the device (None: it can, see
    :func:`gapo_lite.probes.bitsandbytes_4bit_problem`). An explicit True that cannot be honoured is an error,
    never a quiet 16- or 32-bit run; "auto" on a GPU where bitsandbytes fails says so and loads 16-bit. "auto" on a
    CPU is 32-bit: NF4 there saves memory a small model does not need and dequantizes every weight at every
    forward (a SmolLM2 GAPO step is slower in 4-bit, docs/gpu.md)."""
    from gapo_lite.errors import UserError

    if requested is False or (requested is None and not cuda):
        return False
    if backend == "unsloth" and not cuda:
        if requested:
            raise UserError("load_in_4bit=True with backend 'unsloth' on a CPU: Unsloth's CPU fallback has no 4-bit; "
                            "use backend 'transformers' (bitsandbytes NF4 on the CPU) or load_in_4bit=false")
        return False
    if problem is None:
        return True
    if requested:
        raise UserError(f"load_in_4bit=True cannot be honoured on this {'GPU' if cuda else 'CPU'}: {problem}")
    logger.warning("gapo-lite: 4-bit weights off, loading 16-bit: %s", problem)
    return False


def resolve_run_plan(
    *,
    backend: str = "auto",
    load_in_4bit: bool | None = None,
    fast_inference: bool = False,
    optim: str = "auto",
    gradient_checkpointing: bool | None = None,
    precision: str = "auto",
    cuda: bool | None = None,
    has_unsloth: bool | None = None,
    processes: int | None = None,
    bitsandbytes_problem: str | None = None,
) -> RunPlan:
    """Decide backend, process count, precision, optimizer, checkpointing and 4-bit from what was asked for.

    ``cuda``, ``has_unsloth`` and ``processes`` default to what this machine says (torch, the installed
    packages, ``WORLD_SIZE``); on this machine bitsandbytes is probed when 4-bit may run (:func:`choose_4bit`).
    A described machine (``cuda`` given) is taken to run bitsandbytes unless ``bitsandbytes_problem`` says why not.
    ``fast_inference`` without Unsloth on CUDA is an error."""
    measured = cuda is None
    cuda = cuda_available() if cuda is None else cuda
    has_unsloth = unsloth_installed() if has_unsloth is None else has_unsloth
    chosen, reason = choose_backend(backend, cuda, has_unsloth)
    if measured and load_in_4bit is not False and (cuda or load_in_4bit):
        from gapo_lite.probes import bitsandbytes_4bit_problem

        bitsandbytes_problem = bitsandbytes_4bit_problem("cuda" if cuda else "cpu")
    return RunPlan(
        cuda=cuda,
        world_size=world_size() if processes is None else processes,
        backend=chosen,
        backend_reason=reason,
        precision=choose_precision(chosen, cuda, precision),
        optim=("adamw_8bit" if cuda else "adamw_torch") if optim == "auto" else optim,
        gradient_checkpointing=cuda if gradient_checkpointing is None else bool(gradient_checkpointing),
        load_in_4bit=choose_4bit(load_in_4bit, chosen, cuda, bitsandbytes_problem),
        fast_inference=bool(fast_inference),
        precision_reason="" if cuda else cpu_precision_note(precision),
    )


PLANNED_FIELDS = ("backend", "load_in_4bit", "fast_inference", "optim", "gradient_checkpointing", "precision")  # what a TrainConfig asks for


def run_plan_for(config: Any, *, cuda: bool | None = None, has_unsloth: bool | None = None, processes: int | None = None) -> RunPlan:
    """The run plan for ``config`` (a ``TrainConfig``) on this machine (or the one described by the keywords)."""
    return resolve_run_plan(**{name: getattr(config, name) for name in PLANNED_FIELDS}, cuda=cuda, has_unsloth=has_unsloth, processes=processes)
