"""``ModelSpec``: the shapes of a decoder-only causal LM that the memory planner needs."""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# Shapes from the public Qwen2.5 config.json files (base and -Instruct share them). The three small
# models tie the output head to the input embeddings and use a 151936-token vocabulary; 7B and up have
# a separate lm_head and a 152064-token (padded) vocabulary.
_QWEN25: dict[str, dict[str, Any]] = {
    "0.5b": dict(num_layers=24, hidden_size=896, num_heads=14, num_kv_heads=2, intermediate_size=4864, vocab_size=151936, tie_word_embeddings=True),
    "1.5b": dict(num_layers=28, hidden_size=1536, num_heads=12, num_kv_heads=2, intermediate_size=8960, vocab_size=151936, tie_word_embeddings=True),
    "3b": dict(num_layers=36, hidden_size=2048, num_heads=16, num_kv_heads=2, intermediate_size=11008, vocab_size=151936, tie_word_embeddings=True),
    "7b": dict(num_layers=28, hidden_size=3584, num_heads=28, num_kv_heads=4, intermediate_size=18944, vocab_size=152064, tie_word_embeddings=False),
    "14b": dict(num_layers=48, hidden_size=5120, num_heads=40, num_kv_heads=8, intermediate_size=13824, vocab_size=152064, tie_word_embeddings=False),
    "32b": dict(num_layers=64, hidden_size=5120, num_heads=40, num_kv_heads=8, intermediate_size=27648, vocab_size=152064, tie_word_embeddings=False),
}
_NAME_RE = re.compile(r"qwen2\.5-(\d+(?:\.\d+)?b)(?![a-z0-9.])")


def builtin_names() -> list[str]:
    """The built-in model names, e.g. ``Qwen2.5-7B``."""
    return [f"Qwen2.5-{size.upper()}" for size in _QWEN25]


def count_parameters(
    *,
    num_layers: int,
    hidden_size: int,
    num_heads: int,
    num_kv_heads: int,
    intermediate_size: int,
    vocab_size: int,
    tie_word_embeddings: bool,
    head_dim: int | None = None,
    qkv_bias: bool = True,
) -> int:
    """Parameter count of a Qwen2/Llama-style decoder from its shapes (a tied head is counted once)."""
    d = head_dim or hidden_size // num_heads
    q, kv = num_heads * d, num_kv_heads * d
    attention = hidden_size * q + 2 * hidden_size * kv + q * hidden_size + ((q + 2 * kv) if qkv_bias else 0)
    mlp = 3 * hidden_size * intermediate_size
    norms = 2 * hidden_size
    embeddings = vocab_size * hidden_size * (1 if tie_word_embeddings else 2)
    return num_layers * (attention + mlp + norms) + hidden_size + embeddings


@dataclass(frozen=True)
class ModelSpec:
    """Shapes of a decoder-only LM. ``num_params`` counts a tied embedding/head once (as ``model.parameters()`` does)."""

    name: str
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    intermediate_size: int
    vocab_size: int
    num_params: int
    tie_word_embeddings: bool
    head_dim: int | None = field(default=None)
    qkv_bias: bool = True

    def __post_init__(self) -> None:
        for key in ("num_layers", "hidden_size", "num_heads", "num_kv_heads", "intermediate_size", "vocab_size", "num_params"):
            value = getattr(self, key)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"ModelSpec {self.name!r}: {key} must be a positive integer, got {value!r}")
        if self.head_dim is None and self.hidden_size % self.num_heads:
            raise ValueError(f"ModelSpec {self.name!r}: hidden_size {self.hidden_size} is not divisible by num_heads {self.num_heads}")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"ModelSpec {self.name!r}: num_heads {self.num_heads} is not a multiple of num_kv_heads {self.num_kv_heads}")

    @property
    def dim_per_head(self) -> int:
        return self.head_dim or self.hidden_size // self.num_heads

    @property
    def q_dim(self) -> int:
        return self.num_heads * self.dim_per_head

    @property
    def kv_dim(self) -> int:
        return self.num_kv_heads * self.dim_per_head

    @property
    def embedding_params(self) -> int:
        """Input embedding plus (if untied) output head parameters."""
        return self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)

    @property
    def linear_params(self) -> int:
        """Weights of the seven projections in all layers (what 4-bit quantization packs)."""
        h = self.hidden_size
        per_layer = h * self.q_dim + 2 * h * self.kv_dim + self.q_dim * h + 3 * h * self.intermediate_size
        return self.num_layers * per_layer

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def builtin(cls, name: str) -> "ModelSpec":
        """A Qwen2.5 size by name: ``qwen2.5-7b``, ``Qwen/Qwen2.5-7B-Instruct``, ``unsloth/Qwen2.5-32B-Instruct-bnb-4bit``..."""
        match = _NAME_RE.search(str(name).strip().lower())
        if not match or match.group(1) not in _QWEN25:
            raise ValueError(f"unknown model {name!r}; known models: {', '.join(builtin_names())} (or give a local folder with a config.json)")
        size = match.group(1)
        shapes = _QWEN25[size]
        return cls(name=f"Qwen2.5-{size.upper()}", num_params=count_parameters(**shapes), **shapes)

    @classmethod
    def from_config(cls, path_or_dict: str | Path | Mapping[str, Any], name: str | None = None) -> "ModelSpec":
        """From a transformers ``config.json`` (a model folder, the file itself, or its dict); parameters counted from the shapes."""
        if isinstance(path_or_dict, Mapping):
            config, default_name = dict(path_or_dict), str(path_or_dict.get("_name_or_path") or path_or_dict.get("model_type") or "model")
        else:
            path = Path(path_or_dict).expanduser()
            file = path / "config.json" if path.is_dir() else path
            if not file.is_file():
                raise FileNotFoundError(f"no config.json at {str(path)!r}; give a model folder or a config.json file")
            try:
                config = json.loads(file.read_text())
            except json.JSONDecodeError as err:
                raise ValueError(f"{file} is not valid JSON: {err}") from err
            default_name = (path if path.is_dir() else path.parent).name
        if isinstance(config.get("text_config"), Mapping):  # multimodal wrappers keep the LM under text_config
            config = {**config, **config["text_config"]}
        required = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size")
        missing = [k for k in required if k not in config]
        if missing:
            raise ValueError(f"config is missing {', '.join(missing)}; is it a decoder-only causal LM config?")
        model_type = str(config.get("model_type", ""))
        # Qwen2 always has q/k/v biases (its config.json carries no usable attention_bias); others say so.
        qkv_bias = model_type.startswith("qwen2") or bool(config.get("attention_bias"))
        shapes = dict(
            num_layers=int(config["num_hidden_layers"]),
            hidden_size=int(config["hidden_size"]),
            num_heads=int(config["num_attention_heads"]),
            num_kv_heads=int(config.get("num_key_value_heads") or config["num_attention_heads"]),
            intermediate_size=int(config["intermediate_size"]),
            vocab_size=int(config["vocab_size"]),
            tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
            head_dim=int(config["head_dim"]) if config.get("head_dim") else None,
            qkv_bias=qkv_bias,
        )
        return cls(name=name or default_name, num_params=count_parameters(**shapes), **shapes)

    @classmethod
    def resolve(cls, model: str | Path) -> "ModelSpec":
        """A local folder (or config.json, or a .gguf file: its converted folder) if one exists at ``model``, else a built-in name."""
        path = Path(str(model)).expanduser()
        if path.is_file() and path.suffix.lower() == ".gguf":
            from gapo_lite.gguf import gguf_checkpoint

            path = gguf_checkpoint(path)
        if path.exists():
            return cls.from_config(path)
        return cls.builtin(str(model))
