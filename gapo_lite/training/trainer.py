"""``train(config)``: run plan, model, data, memory plan, TRL GRPOConfig + GAPOTrainer with the GAPO hook, checkpoints.

The order matters: the run plan decides the backend first, and Unsloth (when chosen) is imported
before anything imports trl/transformers/peft; with ``backend="transformers"`` Unsloth is never imported.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gapo_lite.rewards import FrequencyScorer, GroupReward, InvalidBelowMode, TaskScorer, ValidityScorer, open_ended_scorer
from gapo_lite.runplan import RunPlan, run_plan_for
from gapo_lite.sampling import ensure_pad_token
from gapo_lite.training.config import TrainConfig
from gapo_lite.training.trl_config import check_trl_accepts, grpo_args, grpo_kwargs  # noqa: F401  (grpo_kwargs re-exported)

logger = logging.getLogger("gapo_lite")


@dataclass
class TrainResult:
    """Where a run left its outputs."""

    output_dir: Path
    adapter_dir: Path
    metrics_path: Path
    global_step: int
    log_history: list[dict[str, Any]]


def make_scorer(config: TrainConfig):
    """The group scorer of ``config``'s default data: GAPO's frequency reward (``reward="gapo"``) or per-sample
    validity (``"validity"``) on list prompts, and with ``open_share > 0`` on the open prompts beside them."""
    from gapo_lite.data.mixed import TASK_COLUMN, open_training_categories

    if config.reward not in ("gapo", "validity"):
        raise ValueError(f"unknown reward {config.reward!r}")
    gapo = FrequencyScorer(invalid_reward=config.invalid_reward, clean=config.clean_answers)
    if config.open_share > 0:
        opens = open_ended_scorer(config.split, config.invalid_reward, names=open_training_categories(config.split), clean=config.clean_answers,
                                  vocabulary=config.open_vocabulary)
        gapo = TaskScorer({"list": gapo, "open": opens}, column=TASK_COLUMN)
    if config.reward == "validity":
        return ValidityScorer(gapo, config.invalid_reward)
    return gapo if config.invalid_margin is None else InvalidBelowMode(gapo, config.invalid_margin)


def default_dataset(config: TrainConfig):
    """The rows ``config`` trains on when no dataset is given: list prompts, ``open_share`` of them open prompts."""
    from gapo_lite.data import build_list_dataset
    from gapo_lite.data.mixed import build_mixed_dataset

    n = config.num_prompts or config.max_steps * config.prompts_per_step
    if config.open_share > 0:
        return build_mixed_dataset(n, open_share=config.open_share, split=config.split, min_items=config.min_items, max_items=config.max_items,
                                   seed=config.data_seed)
    return build_list_dataset(n, split=config.split, min_items=config.min_items, max_items=config.max_items, seed=config.data_seed)


def kit_callbacks(config: TrainConfig, out: Path) -> list[Any]:
    """What every run of the kit gets: complete-only checkpoints, metrics.jsonl, and for GAPO the warning when its
    steps sharpen the mode (the validity baseline sharpens by design)."""
    from gapo_lite.training.callbacks import JsonlMetricsCallback, ModePressureCallback
    from gapo_lite.training.checkpoints import CompleteCheckpointCallback

    return [CompleteCheckpointCallback(), JsonlMetricsCallback(out / "metrics.jsonl"), *([ModePressureCallback()] if config.reward == "gapo" else [])]


def end_token_ids(trainer: Any) -> list[int]:
    """The ids a finished completion ends with, as TRL's own truncation rule reads them (its eos ids and pad)."""
    pad = trainer.processing_class.pad_token_id
    return [*trainer.eos_token_ids, *([] if pad is None else [pad])]


@dataclass(frozen=True)
class Chunking:
    """Completions per forward/backward pass, the memory plan behind it (CUDA only) and its Unsloth-only GRPOConfig fields."""

    chunk_size: int
    memory_plan: Any = None
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def table(self) -> str | None:
        return self.memory_plan.format_table() if self.memory_plan is not None else None


def resolve_chunk_size(
    config: TrainConfig, run_plan: RunPlan, prompt_tokens: int | None = None, already_allocated: int = 0, model: Any = None
) -> Chunking:
    """How ``config``'s generation batch is cut into forward/backward passes on ``run_plan``.

    ``config.chunk_size`` wins; on a CPU one pass per process (memory is not the constraint); on CUDA the
    memory plan of ``model``'s own config (``config.model`` resolved by name only when no model is given) with
    ``prompt_tokens`` measured from the dataset and ``already_allocated`` bytes (a model loaded before
    planning) counted as budget. A plan that does not fit raises :class:`~gapo_lite.memory.MemoryPlanError`
    whose message is the table with what would fit."""
    per_process = run_plan.per_process_batch(config)
    if config.chunk_size is not None:
        run_plan.passes(config, config.chunk_size)
        return Chunking(config.chunk_size)
    if not run_plan.cuda:
        return Chunking(per_process)
    from gapo_lite.training.planning import DEFAULT_PROMPT_TOKENS, plan_for_config

    memory_plan = plan_for_config(config, prompt_tokens=prompt_tokens or DEFAULT_PROMPT_TOKENS, already_allocated=already_allocated,
                                  run_plan=run_plan, model=model)
    print(memory_plan.format_table())
    extras = {k: v for k, v in memory_plan.grpo_kwargs().items() if k.startswith("unsloth_")}
    return Chunking(memory_plan.chunk_size, memory_plan, extras)


def freeze_token_embeddings(model: Any) -> None:
    """Keep the input embeddings (and an output head tied to them) out of training.

    LoRA never trains them; in full fine-tuning Adam gives every embedding row a full-size step even when
    its gradient is tiny (a token that only meets the softmax's normaliser), so rows of words that RL never
    samples drift item by item."""
    model.get_input_embeddings().weight.requires_grad_(False)


def keep_fp32_adapters(model: Any) -> int:
    """Put the trainable parameters back in fp32 where they are 16-bit; returns how many were cast.

    TRL's ``GRPOTrainer.__init__`` casts every trainable parameter of a quantized model to bf16, following the
    QLoRA paper (trl/trainer/grpo_trainer.py ~L520-523 in trl 1.14.2). At GAPO's learning rate, 1e-5, much of a
    bf16 adapter cannot move: an entry changes only when the update is more than half its spacing, and in bf16
    that spacing is 3e-5 or more for every entry of size 2^-8 or more. At Qwen2.5-7B's shapes an Adam step
    changes 37% of the LoRA A entries in bf16, all of them in fp32 (``scripts/lora_bf16_updates.py``,
    docs/gpu.md). So the adapter is the fp32 master copy, as peft keeps it on
    an unquantized model; the forward still computes in the run's precision (autocast), and the optimizer,
    made when training starts, keeps its states for fp32 parameters. Call it after the trainer is built."""
    import torch

    cast = 0
    for param in model.parameters():
        if param.requires_grad and param.dtype in (torch.bfloat16, torch.float16):
            param.data = param.data.float()
            cast += 1
    return cast


def load_for_config(config: TrainConfig, run_plan: RunPlan) -> tuple[Any, Any]:
    """The model and tokenizer ``config`` names, loaded as ``run_plan`` decided."""
    from gapo_lite.models import load_model

    return load_model(config.model, run_plan=run_plan, max_seq_length=config.max_seq_length, lora=config.lora_settings(),
                      gpu_memory_utilization=config.gpu_memory_utilization)


def build_trainer(
    config: TrainConfig,
    *,
    scorer: Any = None,
    model: Any = None,
    tokenizer: Any = None,
    train_dataset: Any = None,
    callbacks: Sequence[Any] = (),
    run_plan: RunPlan | None = None,
):
    """A ready ``GAPOTrainer`` for ``config`` (model and data built unless given) on ``run_plan`` (resolved here unless given)."""
    run_plan = run_plan or run_plan_for(config)
    print(f"gapo-lite: {run_plan.describe()}")
    run_plan.check_one_gpu_per_process()
    run_plan.import_backend()  # Unsloth before trl/transformers/peft, when it is the backend
    from gapo_lite.training.gapo_trainer import GAPOState, gapo_trainer_class

    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    check_trl_accepts(config, run_plan)  # before loading: the GRPOConfig itself waits for the chunking, which may need the model
    if model is None:
        model, tokenizer = load_for_config(config, run_plan)
    if config.freeze_embeddings and not config.use_lora:
        freeze_token_embeddings(model)
    if tokenizer is None:
        raise ValueError("build_trainer: a tokenizer is required when a model is given")
    ensure_pad_token(tokenizer)
    if train_dataset is None:
        train_dataset = default_dataset(config)
    prompt_tokens, allocated = None, 0
    if run_plan.cuda and config.chunk_size is None:
        import torch

        from gapo_lite.training.planning import measure_prompt_tokens

        prompt_tokens = measure_prompt_tokens(tokenizer, train_dataset)
        allocated = torch.cuda.memory_allocated()
    chunking = resolve_chunk_size(config, run_plan, prompt_tokens, allocated, model=model)
    chunk_size = chunking.chunk_size
    args = grpo_args(config, run_plan, chunk_size, chunking.extras)
    hook = GroupReward(scorer if scorer is not None else make_scorer(config), num_generations=config.num_generations)
    config.save(out / "config.yaml")
    trainer = gapo_trainer_class()(
        model=model,
        processing_class=tokenizer,
        reward_funcs=[hook],
        args=args,
        train_dataset=train_dataset,
        callbacks=[*kit_callbacks(config, out), *callbacks],
        gapo=GAPOState(run_plan=run_plan, memory_plan=chunking.memory_plan, prompts_per_step=config.prompts_per_step,
                       share_prompts=run_plan.share_prompts),
    )
    if "disable_tqdm" not in config.extra_grpo_args:  # TRL's own switch: set it to get TRL's bar and its per-step dicts back
        from gapo_lite.training.callbacks import use_progress_bar

        use_progress_bar(trainer, "GAPO" if config.reward == "gapo" else f"GRPO ({config.reward} reward)")
    if config.clean_answers:
        hook.end_token_ids = frozenset(end_token_ids(trainer))  # a completion cut off at max_completion_length scores invalid
    if config.use_lora and run_plan.backend == "transformers":  # Unsloth's trainer leaves its adapters as it made them
        keep_fp32_adapters(trainer.model)
    if run_plan.share_prompts:
        from gapo_lite.training.shared_prompt import share_prompts_in_generation

        share_prompts_in_generation(trainer.model)
    print(
        f"gapo-lite: {config.prompts_per_step} prompts x {config.num_generations} completions per step, "
        f"{chunk_size} completions per forward/backward pass ({args.gradient_accumulation_steps} passes per step)"
    )
    return trainer


def train(config: TrainConfig, **overrides: Any) -> TrainResult:
    """Train with GAPO as ``config`` says; resume from the latest complete checkpoint when ``config.resume``."""
    from gapo_lite.quiet import run_log

    with run_log(Path(config.output_dir) / "train.log"):  # the libraries' log records stay in the run's folder
        return _train(config, **overrides)


def _train(config: TrainConfig, **overrides: Any) -> TrainResult:
    from gapo_lite.training.checkpoints import find_latest_checkpoint

    trainer = build_trainer(config, **overrides)
    resume_from = None
    if config.resume:
        latest = find_latest_checkpoint(config.output_dir)
        if latest is None:
            print(f"gapo-lite: no complete checkpoint in {config.output_dir}; starting from scratch")
        else:
            print(f"gapo-lite: resuming from {latest}")
            resume_from = str(latest)
    trainer.train(resume_from_checkpoint=resume_from)
    out = Path(config.output_dir)
    adapter_dir = out / ("adapter" if config.use_lora else "model")
    trainer.save_model(str(adapter_dir))
    trainer.processing_class.save_pretrained(str(adapter_dir))
    return TrainResult(out, adapter_dir, out / "metrics.jsonl", trainer.state.global_step, list(trainer.state.log_history))
