"""What the list-prompt miniatures share (the demo and the regime map): the parts their settings are made
of, the tiny model they build, the pretraining into the collapsed regime, the lists-suite measurement and
the RL run's config.

A settings class is the sum of the parts (:class:`TinyModel`, :class:`Pretraining`, :class:`RL`,
:class:`Measurement`) plus what is its own (the demo's one start, the regime map's grid): a field is
defined once, so both experiments run the same recipe unless one of them says otherwise, and the
settings stay flat (``--set key=value`` and the recorded ``settings`` dicts name fields directly).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SPREAD_MARGIN = 0.02  # a held-out JSD drop larger than this counts as "GAPO spread the model"


@dataclass(frozen=True)
class TinyModel:
    """The tiny word-level Qwen2 (one token per item of every category); as many key/value heads as heads."""

    hidden_size: int = 128
    num_layers: int = 2
    num_heads: int = 8
    embedding_std: float = 0.1  # larger than Qwen2's 0.02: an item copied from the prompt stands out in the logits sooner
    copy_head: bool = True  # the last attention layer starts as a copier (build_tiny_model): copying is learned in hundreds of steps


@dataclass(frozen=True)
class Pretraining:
    """How a start is pretrained into the paper's regime: copy an item of the list (uniform target, ``copy_lr``),
    then collapse onto the first item (``pretrain_steps`` at ``pretrain_lr``); see ``pretrain_collapsed``."""

    copy_lr: float = 3e-3
    pretrain_steps: int = 400  # long enough for the collapse to reach its target on every seed
    pretrain_batch: int = 32
    pretrain_lr: float = 3e-3
    mixed_share: float = 0.5
    lm_on_items: bool = False
    freeze_embeddings_in_collapse: bool = True
    # The collapse trains where the last attention layer looks (its queries and keys), not what it copies: the habit is
    # then a pure position, which GAPO undoes on categories it never trained on (lab/LOG.md).
    collapse_params: tuple[str, ...] | None = ("layers.1.self_attn.q_proj", "layers.1.self_attn.k_proj")


@dataclass(frozen=True)
class RL:
    """The RL runs from the start: full fine-tuning on the training categories, G completions per prompt."""

    rl_steps: int = 250
    rl_freeze_embeddings: bool = True  # as with LoRA: RL moves the blocks, not the words' embeddings
    prompts_per_step: int = 4
    num_generations: int = 32
    rl_lr: float = 3e-4
    rl_schedule: str = "cosine"  # decaying the RL learning rate lowers the noise floor the answers settle at
    rl_temperature: float = 0.7
    completion_tokens: int = 3  # RL and evaluation read the same text: an answer, then end-of-turn or more words


@dataclass(frozen=True)
class Measurement:
    """The lists suite on held-out and training categories: ``eval_lists`` lists, ``eval_samples`` samples each."""

    eval_lists: int = 10
    eval_samples: int = 100
    eval_temperatures: tuple[float, ...] = (0.7, 1.0)  # the first is the one reported first (the paper's 0.7)


QUICK = {"hidden_size": 32, "num_heads": 4, "prompts_per_step": 2, "num_generations": 4, "eval_lists": 2, "eval_samples": 8}
"""What every list miniature's ``quick()`` shrinks (seconds-long runs; figures meaningless)."""


def build_list_model(path: Path, s: Any) -> Path:
    """The untrained tiny Qwen2 of a list miniature (sizes and embedding scale from ``s``, seeded with ``s.seed``), saved to ``path``."""
    from gapo_lite.demo.tiny import build_tiny_model

    return build_tiny_model(path, hidden_size=s.hidden_size, num_layers=s.num_layers, num_heads=s.num_heads, num_kv_heads=s.num_heads,
                            seed=s.seed, embedding_std=s.embedding_std, copy_head=s.copy_head)


def pretrain_list_model(model: Any, tokenizer: Any, s: Any, *, copy_steps: int, collapse_steps: int, first_share: float | None,
                        seed: int, progress: bool = True) -> list[float]:
    """``pretrain_collapsed`` with the :class:`Pretraining` part of ``s``: ``copy_steps`` of copying, then
    ``collapse_steps`` of collapse onto the first item at ``first_share`` (None: no collapse phase)."""
    from gapo_lite.demo.pretrain import pretrain_collapsed

    if first_share is None and collapse_steps:
        raise ValueError("a collapse phase needs first_share")
    return pretrain_collapsed(model, tokenizer, copy_steps=copy_steps, copy_learning_rate=s.copy_lr, steps=collapse_steps, batch_size=s.pretrain_batch,
                              first_share=1.0 if first_share is None else first_share, learning_rate=s.pretrain_lr, mixed_share=s.mixed_share,
                              lm_on_items=s.lm_on_items, freeze_embeddings_in_collapse=s.freeze_embeddings_in_collapse,
                              collapse_params=s.collapse_params, seed=seed, progress=progress)


def measure(model: Any, tokenizer: Any, s: Any) -> dict[str, Any]:
    """Lists-suite metrics on held-out and training categories at each evaluation temperature."""
    from gapo_lite.demo.stages import LAB_PRECISION
    from gapo_lite.eval.list_suite import run_lists
    from gapo_lite.eval.settings import SampleSettings

    out: dict[str, Any] = {}
    for temperature in s.eval_temperatures:
        row: dict[str, Any] = {}
        for split in ("heldout", "train"):
            settings = SampleSettings(n=s.eval_samples, temperature=temperature, max_new_tokens=s.completion_tokens, batch_size=512, seed=s.seed,
                                      progress=False, precision=LAB_PRECISION)
            r = run_lists(model, tokenizer, settings, num_lists=s.eval_lists, split=split)
            row.update(
                {
                    f"{split}_pressure": r["pressure"],
                    f"{split}_jsd": r["mean_jsd"],
                    f"{split}_valid_rate": r["mean_valid_rate"],
                    f"{split}_unique": sum(sum(1 for c in lst["counts"].values() if c) for lst in r["lists"]) / len(r["lists"]),
                    f"{split}_first_share": r["position_shares"][0] if r["position_shares"] else math.nan,
                    f"{split}_position_shares": r["position_shares"],
                }
            )
        out[f"T{temperature:g}"] = row
    main = out.pop(f"T{s.eval_temperatures[0]:g}")
    return {**main, **{f"temperature_{k[1:]}": v for k, v in out.items()}}


def rl_config(s: Any, start: Path, out: Path, reward: str, invalid_reward: float = -1.0):
    """The RL run's TrainConfig (:func:`~gapo_lite.demo.stages.tiny_rl_config`) with the :class:`RL` part of ``s``:
    list prompts of the training categories, ``reward`` ("gapo" or "validity")."""
    from gapo_lite.demo.stages import tiny_rl_config

    return tiny_rl_config(s, start, out, freeze_embeddings=s.rl_freeze_embeddings, reward=reward, invalid_reward=invalid_reward,
                          max_completion_length=s.completion_tokens, lr_scheduler_type=s.rl_schedule, save_steps=max(1, s.rl_steps // 2),
                          split="train", data_seed=s.seed)
