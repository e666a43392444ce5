"""``TrainConfig``: every knob of a GAPO run, with the paper's defaults, and ``--set key=value`` parsing."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from gapo_lite import batching
from gapo_lite._bootstrap import BACKENDS, DEFAULT_BACKEND, REQUESTED_PRECISIONS, Backend, RequestedPrecision
from gapo_lite.data.open_prompts import VOCABULARIES as OPEN_VOCABULARIES
from gapo_lite.models import LoraSettings

REWARDS = ("gapo", "validity")
REPORT_TO = ("none", "tensorboard", "trackio", "wandb")
LOSS_TYPES = ("dapo", "grpo", "dr_grpo", "bnpo", "cispo", "sapo", "luspo", "vespo")
SCALE_REWARDS = ("group", "batch", "none")

# The groups of TrainConfig's fields, by their first field, for `gapo-lite train --list-settings` (the same as
# the comment headings below; tests/test_training_config.py keeps them so).
GROUPS = {"model": "Model", "reward": "Reward and objective", "split": "Data", "learning_rate": "Optimisation", "chunk_size": "Memory",
          "output_dir": "Bookkeeping"}


@dataclass
class TrainConfig:
    """A GAPO run. Defaults follow the paper: G=32, beta=0, lr 1e-5, LoRA r=64/alpha=32/dropout=0.1,
    8 prompts per step, lists of 4-12 items. Each field carries its help (``gapo-lite train --list-settings``
    prints them); the fields are grouped as TRL's ``GRPOConfig`` groups its own.

    The objective is spelled out so that TRL and Unsloth optimise the same thing: with ``loss_type="dapo"``
    Unsloth (not TRL) would otherwise also switch on ``mask_truncated_completions`` and ``epsilon_high=0.28``.
    The paper's objective is GRPO with PPO clipping: a symmetric clip (``epsilon = epsilon_high = 0.2``) and
    truncated completions kept (``mask_truncated_completions=False``: a list answer cut at
    ``max_completion_length`` is scored like any other)."""

    # --- Model ----------------------------------------------------------------------------------------------------
    model: str = field(
        default="Qwen/Qwen2.5-7B-Instruct",
        metadata={"help": "Model to train: a local folder, a hub id or a .gguf file."},
    )
    backend: Backend = field(
        default=DEFAULT_BACKEND,
        metadata={"help": "auto: Unsloth where a CUDA GPU and unsloth are present, else transformers + peft; or unsloth / transformers (gapo_lite/_bootstrap.py)."},
    )
    precision: RequestedPrecision = field(
        default="auto",
        metadata={"help": "auto: the run plan picks (native bf16 on a GPU, else fp16; on a CPU bf16 autocast where a timed step says it is faster, else fp32); bf16 "
                          "or fp32 force one."},
    )
    load_in_4bit: bool | None = field(
        default=None,
        metadata={"help": "None: 4-bit NF4 (bitsandbytes, double quant) on a CUDA GPU, full precision on a CPU; True: 4-bit wherever bitsandbytes runs it, the CPU "
                          "too, else a one-line error; False: never."},
    )
    max_seq_length: int = field(
        default=1024,
        metadata={"help": "Longest prompt + completion the model is loaded for (Unsloth offloads checkpointed layer inputs from 512)."},
    )
    use_lora: bool = field(
        default=True,
        metadata={"help": "Train a LoRA adapter; False: full fine-tuning."},
    )
    lora_r: int = field(
        default=LoraSettings.r,
        metadata={"help": "LoRA rank: the inner dimension of each adapter."},
    )
    lora_alpha: int = field(
        default=LoraSettings.alpha,
        metadata={"help": "LoRA alpha (the adapter's scale is alpha / r)."},
    )
    lora_dropout: float = field(
        default=LoraSettings.dropout,
        metadata={"help": "Dropout on the LoRA inputs."},
    )
    lora_target_modules: tuple[str, ...] = field(
        default=LoraSettings.target_modules,
        metadata={"help": "Modules LoRA attaches to, comma-separated; a fused qkv_proj or gate_up_proj stands in where a model has one."},
    )
    freeze_embeddings: bool = field(
        default=False,
        metadata={"help": "Full fine-tuning with the token embeddings fixed, as LoRA leaves them."},
    )
    # --- Reward and objective -------------------------------------------------------------------------------------
    reward: str = field(
        default="gapo",
        metadata={"help": "gapo: the frequency-aware reward; validity: the plain GRPO baseline (1 for a valid answer, invalid_reward otherwise)."},
    )
    invalid_reward: float = field(
        default=-1.0,
        metadata={"help": "What an invalid answer scores."},
    )
    invalid_margin: float | None = field(
        default=None,
        metadata={"help": "None: an invalid answer scores invalid_reward. A number m >= 0: the group's lowest valid reward minus m, never below invalid_reward, so "
                          "GAPO spreads where the constant sharpens below a validity threshold (docs/reward.md)."},
    )
    num_generations: int = field(
        default=32,
        metadata={"help": "G, completions per prompt: the group the reward compares."},
    )
    prompts_per_step: int = field(
        default=8,
        metadata={"help": "Prompts per optimizer step (the generation batch is prompts_per_step x G)."},
    )
    beta: float = field(
        default=0.0,
        metadata={"help": "KL coefficient to the reference model (the paper: 0, no KL)."},
    )
    loss_type: str = field(
        default="dapo",
        metadata={"help": f"TRL's loss normalisation: one of {', '.join(LOSS_TYPES)}."},
    )
    scale_rewards: str = field(
        default="group",
        metadata={"help": "Advantages divided by the group's reward std (group), the batch's (batch), or not at all (none)."},
    )
    epsilon: float = field(
        default=0.2,
        metadata={"help": "PPO clip range, below."},
    )
    epsilon_high: float | None = field(
        default=None,
        metadata={"help": "PPO clip range, above; None: epsilon (5.0 for cispo, whose cap is the weight itself); the resolved value is always passed."},
    )
    mask_truncated_completions: bool = field(
        default=False,
        metadata={"help": "Leave completions cut at max_completion_length out of the loss; False keeps them, with the negative advantage that teaches the model to "
                          "end its turn."},
    )
    temperature: float = field(
        default=1.0,
        metadata={"help": "Sampling temperature of the completions."},
    )
    max_completion_length: int = field(
        default=32,
        metadata={"help": "Longest completion, in tokens."},
    )
    clean_answers: bool = field(
        default=True,
        metadata={"help": "An answer counts only when the reply is that answer alone and ended its turn inside max_completion_length (gapo_lite.answers.clean); "
                          "False: the first answer found counts."},
    )
    # --- Data -----------------------------------------------------------------------------------------------------
    split: Literal["train", "heldout", "all"] = field(
        default="train",
        metadata={"help": "Word-list categories the prompts are drawn from (heldout: the evaluation's)."},
    )
    open_share: float = field(
        default=0.0,
        metadata={"help": "Share of open-ended naming prompts among the list prompts (gapo_lite.data.mixed)."},
    )
    open_vocabulary: str = field(
        default="wordnet",
        metadata={"help": "Valid answers to the open prompts: wordnet (the category's word list and every noun WordNet files under it) or word_lists (its 25 items: a "
                          "real model's answers outside them would score invalid)."},
    )
    num_prompts: int | None = field(
        default=None,
        metadata={"help": "Prompts in the dataset; None: max_steps x prompts_per_step."},
    )
    min_items: int = field(
        default=4,
        metadata={"help": "Fewest items in a list prompt."},
    )
    max_items: int = field(
        default=12,
        metadata={"help": "Most items in a list prompt."},
    )
    data_seed: int = field(
        default=0,
        metadata={"help": "Seed of the prompts drawn."},
    )
    # --- Optimisation ---------------------------------------------------------------------------------------------
    learning_rate: float = field(
        default=1e-5,
        metadata={"help": "Learning rate."},
    )
    lr_scheduler_type: str = field(
        default="constant",
        metadata={"help": "transformers' learning-rate schedule (constant, cosine, linear, ...)."},
    )
    warmup_ratio: float = field(
        default=0.0,
        metadata={"help": "Share of max_steps spent warming the learning rate up."},
    )
    weight_decay: float = field(
        default=0.0,
        metadata={"help": "AdamW's weight decay."},
    )
    max_grad_norm: float = field(
        default=1.0,
        metadata={"help": "Gradient clipping norm (0: none)."},
    )
    optim: str = field(
        default="auto",
        metadata={"help": "auto: 8-bit AdamW on a GPU, torch's AdamW on a CPU; or any optimizer name transformers knows."},
    )
    max_steps: int = field(
        default=500,
        metadata={"help": "Optimizer steps."},
    )
    # --- Memory ---------------------------------------------------------------------------------------------------
    chunk_size: int | None = field(
        default=None,
        metadata={"help": "Completions per forward/backward pass; None: the memory plan's on a GPU, one pass per process on a CPU."},
    )
    memory_budget_gb: float | None = field(
        default=None,
        metadata={"help": "GPU memory the memory plan may use, in GiB; None: the GPU's free memory."},
    )
    gradient_checkpointing: bool | None = field(
        default=None,
        metadata={"help": "None: on with a GPU, off on a CPU."},
    )
    fast_inference: bool = field(
        default=False,
        metadata={"help": "Generate with Unsloth's colocated vLLM (Unsloth on a CUDA GPU only)."},
    )
    gpu_memory_utilization: float = field(
        default=0.5,
        metadata={"help": "vLLM's share of the GPU with fast_inference."},
    )
    # --- Bookkeeping ----------------------------------------------------------------------------------------------
    output_dir: str = field(
        default="runs/gapo",
        metadata={"help": "Where checkpoints, metrics.jsonl, config.yaml and the adapter go."},
    )
    save_steps: int = field(
        default=50,
        metadata={"help": "Steps between checkpoints."},
    )
    save_total_limit: int | None = field(
        default=3,
        metadata={"help": "Checkpoints kept; None: all."},
    )
    logging_steps: int = field(
        default=1,
        metadata={"help": "Steps between logged lines."},
    )
    report_to: str = field(
        default="none",
        metadata={"help": f"Where TRL reports metrics besides metrics.jsonl: one of {', '.join(REPORT_TO)}."},
    )
    seed: int = field(
        default=0,
        metadata={"help": "Training seed (sampling, LoRA initialisation, shuffling)."},
    )
    resume: bool = field(
        default=False,
        metadata={"help": "Resume from the latest complete checkpoint in output_dir."},
    )
    extra_grpo_args: dict[str, Any] = field(
        default_factory=dict,
        metadata={"help": "Further trl.GRPOConfig fields, as JSON; they override the kit's."},
    )

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first bad field."""
        positive = ["num_generations", "prompts_per_step", "max_completion_length", "max_steps", "save_steps", "logging_steps", "max_seq_length", "min_items"]
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"TrainConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.num_generations < 2:
            raise ValueError(f"TrainConfig.num_generations must be >= 2 (a group needs two answers), got {self.num_generations}")
        if self.max_items < self.min_items:
            raise ValueError(f"TrainConfig.max_items ({self.max_items}) < min_items ({self.min_items})")
        if self.reward not in REWARDS:
            raise ValueError(f"TrainConfig.reward must be one of {REWARDS}, got {self.reward!r}")
        if self.report_to not in REPORT_TO:
            raise ValueError(f"TrainConfig.report_to must be one of {REPORT_TO}, got {self.report_to!r}")
        if self.loss_type not in LOSS_TYPES:
            raise ValueError(f"TrainConfig.loss_type must be one of {LOSS_TYPES}, got {self.loss_type!r}")
        if self.backend not in BACKENDS:
            raise ValueError(f"TrainConfig.backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.scale_rewards not in SCALE_REWARDS:
            raise ValueError(f"TrainConfig.scale_rewards must be one of {SCALE_REWARDS}, got {self.scale_rewards!r}")
        if self.loss_type == "dr_grpo" and self.scale_rewards == "group":
            raise ValueError(
                "TrainConfig: loss_type='dr_grpo' with scale_rewards='group' is not one objective on both backends "
                "(Unsloth silently switches it to 'none', as the Dr GRPO paper says); set scale_rewards='none' (or 'batch')"
            )
        if self.epsilon <= 0 or (self.epsilon_high is not None and self.epsilon_high <= 0):
            raise ValueError(f"TrainConfig.epsilon and epsilon_high must be > 0, got {self.epsilon} and {self.epsilon_high}")
        if not 0.0 < self.gpu_memory_utilization < 1.0:
            raise ValueError(f"TrainConfig.gpu_memory_utilization must be in (0, 1), got {self.gpu_memory_utilization}")
        if not 0.0 <= self.open_share <= 1.0:
            raise ValueError(f"TrainConfig.open_share must be in [0, 1], got {self.open_share}")
        if self.open_vocabulary not in OPEN_VOCABULARIES:
            raise ValueError(f"TrainConfig.open_vocabulary must be one of {OPEN_VOCABULARIES}, got {self.open_vocabulary!r}")
        if self.invalid_margin is not None and self.invalid_margin < 0:
            raise ValueError(f"TrainConfig.invalid_margin must be >= 0 or None, got {self.invalid_margin}")
        if self.learning_rate <= 0:
            raise ValueError(f"TrainConfig.learning_rate must be > 0, got {self.learning_rate}")
        if self.temperature <= 0:
            raise ValueError(f"TrainConfig.temperature must be > 0, got {self.temperature}")
        if self.precision not in REQUESTED_PRECISIONS:
            raise ValueError(f"TrainConfig.precision must be one of {REQUESTED_PRECISIONS}, got {self.precision!r}")
        if self.chunk_size is not None:
            try:
                batching.passes_per_step(self.prompts_per_step, self.num_generations, 1, self.chunk_size)
            except ValueError as err:
                raise ValueError(f"TrainConfig.{err}") from None

    @property
    def generation_batch_size(self) -> int:
        return self.prompts_per_step * self.num_generations

    @property
    def resolved_epsilon_high(self) -> float:
        """``epsilon_high`` as passed to TRL: as set, else ``epsilon`` (5.0 for ``cispo``, as Unsloth resolves it)."""
        if self.epsilon_high is not None:
            return self.epsilon_high
        return 5.0 if self.loss_type == "cispo" else self.epsilon

    def lora_settings(self) -> LoraSettings | None:
        """The LoRA adapter this config asks for (None for full fine-tuning)."""
        return LoraSettings(self.lora_r, self.lora_alpha, self.lora_dropout, tuple(self.lora_target_modules)) if self.use_lora else None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["lora_target_modules"] = list(self.lora_target_modules)
        return d

    def save(self, path: str | Path) -> None:
        """Write the resolved config as YAML."""
        import yaml

        Path(path).write_text(yaml.safe_dump(self.to_dict(), sort_keys=False))

    @classmethod
    def load(cls, path: str | Path) -> "TrainConfig":
        import yaml

        return cls.from_dict(yaml.safe_load(Path(path).read_text()) or {})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TrainConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown TrainConfig key(s): {', '.join(unknown)}; known keys: {', '.join(sorted(known))}")
        data = dict(data)
        if "lora_target_modules" in data:
            data["lora_target_modules"] = tuple(data["lora_target_modules"])
        return cls(**data)

    def with_overrides(self, assignments: list[str]) -> "TrainConfig":
        """A copy with ``key=value`` assignments applied (the one ``--set`` parser, :mod:`gapo_lite.overrides`)."""
        from gapo_lite.overrides import apply_overrides

        return apply_overrides(self, assignments, what="TrainConfig key")


def settings_help(width: int = 100) -> str:
    """Every ``TrainConfig`` field, group by group, with its type, default and help (``gapo-lite train --list-settings``)."""
    import textwrap
    import typing

    lines = ["TrainConfig settings (gapo-lite train --set key=value; a recipe sets them in its TrainConfig):"]
    defaults, hints = TrainConfig(), typing.get_type_hints(TrainConfig)
    for f in fields(TrainConfig):
        if f.name in GROUPS:
            lines += ["", GROUPS[f.name]]
        value = getattr(defaults, f.name)
        shown = ",".join(value) if isinstance(value, tuple) else value
        kind = " | ".join(typing.get_args(hints[f.name])) if typing.get_origin(hints[f.name]) is Literal else f.type
        lines.append(f"  {f.name}: {kind} = {shown}")
        lines += textwrap.wrap(f.metadata["help"], width=width, initial_indent="      ", subsequent_indent="      ")
    return "\n".join(lines)
