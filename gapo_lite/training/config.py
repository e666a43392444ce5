"""``TrainConfig``: every knob of a GAPO run, with the paper's defaults, and ``--set key=value`` parsing."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from gapo_lite import batching
from gapo_lite._bootstrap import BACKENDS, DEFAULT_BACKEND, REQUESTED_PRECISIONS, Backend, RequestedPrecision
from gapo_lite.data.open_ended import VOCABULARIES as OPEN_VOCABULARIES
from gapo_lite.models import LoraSettings

REWARDS = ("gapo", "validity")
REPORT_TO = ("none", "tensorboard", "trackio", "wandb")
LOSS_TYPES = ("dapo", "grpo", "dr_grpo", "bnpo", "cispo", "sapo", "luspo", "vespo")
SCALE_REWARDS = ("group", "batch", "none")


@dataclass
class TrainConfig:
    """A GAPO run. Defaults follow the paper: G=32, beta=0, lr 1e-5, LoRA r=64/alpha=32/dropout=0.1,
    8 prompts per step, lists of 4-12 items.

    The objective is spelled out so that TRL and Unsloth optimise the same thing: with ``loss_type="dapo"``
    Unsloth (not TRL) would otherwise also switch on ``mask_truncated_completions`` and ``epsilon_high=0.28``.
    The paper's objective is GRPO with PPO clipping: a symmetric clip (``epsilon = epsilon_high = 0.2``) and
    truncated completions kept (``mask_truncated_completions=False``: a list answer cut at
    ``max_completion_length`` is scored like any other). ``epsilon_high=None`` resolves to ``epsilon``
    (to 5.0 for ``cispo``, whose cap is the weight itself); the resolved value is always passed.
    ``gpu_memory_utilization`` is vLLM's share of the GPU when ``fast_inference=True``. ``precision`` "auto"
    lets the run plan pick (see :mod:`gapo_lite.runplan`); "bf16" / "fp32" force one."""

    # model
    model: str = "Qwen/Qwen2.5-7B-Instruct"
    backend: Backend = DEFAULT_BACKEND
    precision: RequestedPrecision = "auto"
    # None: 4-bit on a CUDA GPU (bitsandbytes NF4, double quant), full precision on a CPU; True: 4-bit wherever
    # bitsandbytes runs it (the CPU too), else a one-line error; False: never (gapo_lite.runplan.choose_4bit).
    load_in_4bit: bool | None = None
    max_seq_length: int = 1024
    use_lora: bool = True
    lora_r: int = LoraSettings.r
    lora_alpha: int = LoraSettings.alpha
    lora_dropout: float = LoraSettings.dropout
    lora_target_modules: tuple[str, ...] = LoraSettings.target_modules
    freeze_embeddings: bool = False  # full fine-tuning (use_lora=False) with the token embeddings fixed, as LoRA leaves them
    # reward and objective
    reward: str = "gapo"
    invalid_reward: float = -1.0
    # None: an invalid answer scores invalid_reward. A number m >= 0: it scores the group's lowest valid reward (the
    # favourite's) minus m, never less than invalid_reward (gapo_lite.rewards.invalid): being valid no longer pays
    # the favourite much, so GAPO spreads where the constant sharpens below a validity threshold; m is what is
    # left of the push towards valid, well-formed replies (docs/reward.md).
    invalid_margin: float | None = None
    num_generations: int = 32
    prompts_per_step: int = 8
    beta: float = 0.0
    loss_type: str = "dapo"
    scale_rewards: str = "group"
    epsilon: float = 0.2
    epsilon_high: float | None = None
    mask_truncated_completions: bool = False
    temperature: float = 1.0
    max_completion_length: int = 32
    # An answer counts only when the reply is that answer alone and ended its turn inside max_completion_length
    # (gapo_lite.answers.clean): the list parser otherwise pays a cut-off "Cat Cat Cat ..." whose first item
    # parses, and RL learns to stop ending its turn (docs/smollm2.md). False: the first answer found counts.
    clean_answers: bool = True
    # data
    split: Literal["train", "heldout", "all"] = "train"
    open_share: float = 0.0  # share of open-ended naming prompts among the list prompts (gapo_lite.data.mixed)
    # Which answers to the open prompts are valid: "wordnet" (the category's word list and every noun WordNet files
    # under it, gapo_lite.data.open_ended.open_vocabulary) or "word_lists" (25 items: a real model's "Mango" would
    # score as invalid and RL would learn to avoid answers outside the list).
    open_vocabulary: str = "wordnet"
    num_prompts: int | None = None
    min_items: int = 4
    max_items: int = 12
    data_seed: int = 0
    # optimisation
    learning_rate: float = 1e-5
    lr_scheduler_type: str = "constant"
    warmup_ratio: float = 0.0
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    optim: str = "auto"
    max_steps: int = 500
    # memory
    chunk_size: int | None = None
    memory_budget_gb: float | None = None
    gradient_checkpointing: bool | None = None
    fast_inference: bool = False
    gpu_memory_utilization: float = 0.5
    # bookkeeping
    output_dir: str = "runs/gapo"
    save_steps: int = 50
    save_total_limit: int | None = 3
    logging_steps: int = 1
    report_to: str = "none"
    seed: int = 0
    resume: bool = False
    extra_grpo_args: dict[str, Any] = field(default_factory=dict)

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
