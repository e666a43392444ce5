"""``ModelSpec``: the shapes of a decoder-only causal LM that the memory planner needs, and where they come from.

:meth:`ModelSpec.resolve` looks in this order: a local folder (or ``config.json``, or ``.gguf`` file); the hub's
``config.json`` when the hub answers within a few seconds (skipped when ``HF_HUB_OFFLINE`` is set); the built-in
table below. A hub id found in none of them is a one-line error naming the nearest entries, raised before
anything is downloaded or loaded. ``train()`` does not resolve by name at all: it plans from the loaded
model's own config (:meth:`ModelSpec.from_config`).

The table holds the published ``config.json`` shapes (base and instruct variants share them). ``head_dim`` is
given where it differs from ``hidden / heads`` (Qwen3, Gemma, Mistral Nemo); Gemma has four norms per layer,
Qwen3 and Gemma 3 normalise queries and keys (``q_norm`` / ``k_norm``); Qwen2 has q/k/v biases. Gemma 3 4B and
up are multimodal: the table holds their language model (``text_config``), which is what LoRA trains.
"""
from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gapo_lite.errors import UserError, looks_like_local_path

HUB_TIMEOUT_SECONDS = 3.0

# name: (model_type, layers, hidden, heads, kv heads, head_dim or None, intermediate, vocab, tied)
_TABLE: dict[str, tuple[str, int, int, int, int, int | None, int, int, bool]] = {
    "Qwen2.5-0.5B": ("qwen2", 24, 896, 14, 2, None, 4864, 151936, True),
    "Qwen2.5-1.5B": ("qwen2", 28, 1536, 12, 2, None, 8960, 151936, True),
    "Qwen2.5-3B": ("qwen2", 36, 2048, 16, 2, None, 11008, 151936, True),
    "Qwen2.5-7B": ("qwen2", 28, 3584, 28, 4, None, 18944, 152064, False),
    "Qwen2.5-14B": ("qwen2", 48, 5120, 40, 8, None, 13824, 152064, False),
    "Qwen2.5-32B": ("qwen2", 64, 5120, 40, 8, None, 27648, 152064, False),
    "Qwen2.5-72B": ("qwen2", 80, 8192, 64, 8, None, 29568, 152064, False),
    "Qwen3-0.6B": ("qwen3", 28, 1024, 16, 8, 128, 3072, 151936, True),
    "Qwen3-1.7B": ("qwen3", 28, 2048, 16, 8, 128, 6144, 151936, True),
    "Qwen3-4B": ("qwen3", 36, 2560, 32, 8, 128, 9728, 151936, True),
    "Qwen3-8B": ("qwen3", 36, 4096, 32, 8, 128, 12288, 151936, False),
    "Qwen3-14B": ("qwen3", 40, 5120, 40, 8, 128, 17408, 151936, False),
    "Qwen3-32B": ("qwen3", 64, 5120, 64, 8, 128, 25600, 151936, False),
    "Llama-3.2-1B": ("llama", 16, 2048, 32, 8, 64, 8192, 128256, True),
    "Llama-3.2-3B": ("llama", 28, 3072, 24, 8, 128, 8192, 128256, True),
    "Llama-3.1-8B": ("llama", 32, 4096, 32, 8, None, 14336, 128256, False),
    "Llama-3.1-70B": ("llama", 80, 8192, 64, 8, None, 28672, 128256, False),
    "Llama-3.3-70B": ("llama", 80, 8192, 64, 8, None, 28672, 128256, False),
    "gemma-2-2b": ("gemma2", 26, 2304, 8, 4, 256, 9216, 256000, True),
    "gemma-2-9b": ("gemma2", 42, 3584, 16, 8, 256, 14336, 256000, True),
    "gemma-2-27b": ("gemma2", 46, 4608, 32, 16, 128, 36864, 256000, True),
    "gemma-3-1b": ("gemma3_text", 26, 1152, 4, 1, 256, 6912, 262144, True),
    "gemma-3-4b": ("gemma3_text", 34, 2560, 8, 4, 256, 10240, 262208, True),
    "gemma-3-12b": ("gemma3_text", 48, 3840, 16, 8, 256, 15360, 262208, True),
    "gemma-3-27b": ("gemma3_text", 62, 5376, 32, 16, 128, 21504, 262208, True),
    "Mistral-7B-v0.3": ("mistral", 32, 4096, 32, 8, None, 14336, 32768, False),
    "Mistral-Nemo-12B": ("mistral", 40, 5120, 32, 8, 128, 14336, 131072, False),
    "Phi-3.5-mini": ("phi3", 32, 3072, 32, 32, None, 8192, 32064, False),
    "phi-4": ("phi3", 40, 5120, 40, 10, None, 17920, 100352, False),
    "SmolLM2-135M": ("llama", 30, 576, 9, 3, None, 1536, 49152, True),
    "SmolLM2-360M": ("llama", 32, 960, 15, 5, None, 2560, 49152, True),
    "SmolLM2-1.7B": ("llama", 24, 2048, 32, 32, None, 8192, 49152, True),
}
# Names that differ from an entry by more than an organisation, a variant word or a quantisation suffix.
_ALIASES = {
    "mistral-nemo": "Mistral-Nemo-12B",
    "mistral-nemo-2407": "Mistral-Nemo-12B",
    "phi-3.5-mini-128k": "Phi-3.5-mini",
}
# Words of a hub id that name a variant of the same shapes: instruct / chat / base tunings, checkpoints
# re-published by Unsloth, quantised copies.
_VARIANT_WORDS = {"instruct", "it", "chat", "base", "pt", "hf", "unsloth", "bnb", "4bit", "8bit", "awq", "gptq", "int4", "int8",
                  "fp8", "gguf", "dynamic", "meta"}


def _key(name: str) -> str:
    """``name`` with organisation, case and variant words removed: ``unsloth/Meta-Llama-3.1-8B-Instruct-bnb-4bit`` -> ``llama-3.1-8b``."""
    last = str(name).strip().rstrip("/").rsplit("/", 1)[-1].lower()
    words = [w for w in re.split(r"[-_]", last) if w and w not in _VARIANT_WORDS]
    return "-".join(words)


_BY_KEY: dict[str, str] = {**{_key(n): n for n in _TABLE}, **{_key(a): n for a, n in _ALIASES.items()}}


def builtin_names() -> list[str]:
    """The built-in model names, e.g. ``Qwen2.5-7B``, ``Llama-3.1-8B``."""
    return list(_TABLE)


def builtin_name(name: str) -> str | None:
    """The table entry ``name`` (a hub id or a short name) stands for, or None."""
    return _BY_KEY.get(_key(name))


def nearest_builtin_names(name: str, n: int = 3) -> list[str]:
    """Up to ``n`` table entries closest to ``name``."""
    keys = difflib.get_close_matches(_key(name), list(_BY_KEY), n=n, cutoff=0.0)
    return list(dict.fromkeys(_BY_KEY[k] for k in keys))


def family_traits(model_type: str, attention_bias: bool = False) -> dict[str, Any]:
    """What a family adds to the Llama layout: q/k/v biases (Qwen2), four norms per layer (Gemma 2/3), q/k norms (Qwen3,
    Gemma 3), q/k/v and gate/up fused into one matrix each (Phi-3, Phi-4: ``qkv_proj``, ``gate_up_proj``)."""
    t = model_type.lower()
    return dict(
        qkv_bias=(t.startswith("qwen2") and not t.startswith("qwen2_5_vl")) or bool(attention_bias),
        norms_per_layer=4 if t.startswith(("gemma2", "gemma3")) else 2,
        qk_norm=t.startswith(("qwen3", "gemma3")),
        fused_projections=t.startswith("phi3"),
    )


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
    norms_per_layer: int = 2,
    qk_norm: bool = False,
    fused_projections: bool = False,
) -> int:
    """Parameter count of a Llama-layout decoder from its shapes (a tied head is counted once).

    A fused ``qkv_proj`` / ``gate_up_proj`` (Phi-3) holds the same weights as the separate projections."""
    d = head_dim or hidden_size // num_heads
    q, kv = num_heads * d, num_kv_heads * d
    attention = hidden_size * q + 2 * hidden_size * kv + q * hidden_size + ((q + 2 * kv) if qkv_bias else 0)
    mlp = 3 * hidden_size * intermediate_size
    norms = norms_per_layer * hidden_size + (2 * d if qk_norm else 0)
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
    norms_per_layer: int = 2
    qk_norm: bool = False
    fused_projections: bool = False  # one qkv_proj and one gate_up_proj per layer, which LoRA adapts as one module each
    model_type: str = ""

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
    def projection_sizes(self) -> list[int]:
        """Parameters of each projection matrix of one layer, as the model holds them (Phi-3: fused qkv and gate/up)."""
        h, q, kv, i = self.hidden_size, self.q_dim, self.kv_dim, self.intermediate_size
        if self.fused_projections:
            return [h * (q + 2 * kv), q * h, h * 2 * i, i * h]
        return [h * q, h * kv, h * kv, q * h, h * i, h * i, i * h]

    @property
    def linear_params(self) -> int:
        """Weights of the seven projections in all layers (what 4-bit quantization packs)."""
        h = self.hidden_size
        per_layer = h * self.q_dim + 2 * h * self.kv_dim + self.q_dim * h + 3 * h * self.intermediate_size
        return self.num_layers * per_layer

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_shapes(cls, name: str, model_type: str, **shapes: Any) -> "ModelSpec":
        """A spec from its shapes and family (``model_type``), the parameter count computed from them."""
        shapes = {**family_traits(model_type, shapes.pop("attention_bias", False)), **shapes}
        return cls(name=name, num_params=count_parameters(**shapes), model_type=model_type, **shapes)

    @classmethod
    def builtin(cls, name: str) -> "ModelSpec":
        """A table entry by name or hub id: ``qwen2.5-7b``, ``meta-llama/Llama-3.1-8B-Instruct``, ``unsloth/gemma-3-4b-it-bnb-4bit``..."""
        entry = builtin_name(name)
        if entry is None:
            raise UserError(
                f"unknown model {name!r} (the hub is not reachable and it is not in the built-in table); nearest known: "
                f"{', '.join(nearest_builtin_names(name))}; or pass a local folder holding its config.json"
            )
        model_type, layers, hidden, heads, kv_heads, head_dim, intermediate, vocab, tied = _TABLE[entry]
        return cls.from_shapes(
            entry, model_type, num_layers=layers, hidden_size=hidden, num_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim,
            intermediate_size=intermediate, vocab_size=vocab, tie_word_embeddings=tied,
        )

    @classmethod
    def from_config(cls, path_or_dict: str | Path | Mapping[str, Any], name: str | None = None) -> "ModelSpec":
        """From a transformers ``config.json`` (a model folder, the file itself, its dict, or a loaded model's
        ``PretrainedConfig``); parameters counted from the shapes."""
        if hasattr(path_or_dict, "to_dict"):
            path_or_dict = path_or_dict.to_dict()
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
        return cls.from_shapes(
            name or default_name,
            str(config.get("model_type", "")),
            num_layers=int(config["num_hidden_layers"]),
            hidden_size=int(config["hidden_size"]),
            num_heads=int(config["num_attention_heads"]),
            num_kv_heads=int(config.get("num_key_value_heads") or config["num_attention_heads"]),
            intermediate_size=int(config["intermediate_size"]),
            vocab_size=int(config["vocab_size"]),
            tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
            head_dim=int(config["head_dim"]) if config.get("head_dim") else None,
            attention_bias=bool(config.get("attention_bias")),
        )

    @classmethod
    def resolve(cls, model: str | Path) -> "ModelSpec":
        """A local folder (or config.json, or .gguf file: its converted folder); else the hub's config.json; else the table."""
        text = str(model)
        path = Path(text).expanduser()
        if path.is_file() and path.suffix.lower() == ".gguf":
            from gapo_lite.gguf import gguf_checkpoint

            path = gguf_checkpoint(path)
        if path.exists():
            return cls.from_config(path)
        if looks_like_local_path(text):
            raise FileNotFoundError(f"model path {text!r} does not exist")
        config = hub_config(text)
        if config is not None:
            return cls.from_config(config, name=text)
        return cls.builtin(text)


def hub_config(repo_id: str, timeout: float = HUB_TIMEOUT_SECONDS) -> dict[str, Any] | None:
    """The hub's ``config.json`` for ``repo_id`` (from the local hub cache when it is there), or None when the
    hub is offline, slow, gated or has no such repo. Only ``Org/Model`` ids are asked, once, with no retries."""
    if repo_id.count("/") != 1:
        return None
    try:
        from huggingface_hub import constants, get_token, try_to_load_from_cache

        cached = try_to_load_from_cache(repo_id, "config.json")
        if isinstance(cached, str):
            return json.loads(Path(cached).read_text())
        if constants.HF_HUB_OFFLINE:
            return None
        return _fetch_json(f"{constants.ENDPOINT}/{repo_id}/resolve/main/config.json", get_token(), timeout)
    except Exception:  # noqa: BLE001  (any failure means: plan from the table instead)
        return None


def _fetch_json(url: str, token: str | None, timeout: float) -> dict[str, Any]:
    import urllib.request

    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read().decode())
