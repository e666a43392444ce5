"""``load_model``: a causal LM with a LoRA adapter, through Unsloth (GPU) or transformers + peft."""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from gapo_lite._bootstrap import choose_backend, import_unsloth, unsloth_installed
from gapo_lite.gguf import gguf_checkpoint, is_gguf
from gapo_lite.sampling import ensure_pad_token

logger = logging.getLogger("gapo_lite")

Backend = Literal["auto", "unsloth", "transformers"]
_GENERIC_FAST_TOKENIZERS = {"PreTrainedTokenizerFast", "TokenizersBackend"}  # the latter is transformers 5's name
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class LoraSettings:
    """LoRA adapter settings; defaults are the paper's (r=64, alpha=32, dropout=0.1, all seven projections)."""

    r: int = 64
    alpha: int = 32
    dropout: float = 0.1
    target_modules: tuple[str, ...] = field(default=PROJECTIONS)

    def __post_init__(self) -> None:
        if self.r < 1:
            raise ValueError(f"LoRA rank r must be >= 1, got {self.r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"LoRA dropout must be in [0, 1), got {self.dropout}")
        if not self.target_modules:
            raise ValueError("LoRA target_modules is empty")


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def resolve_backend(backend: str) -> tuple[str, str]:
    """The concrete backend for ``backend`` on this machine and the reason it was chosen (one rule for the
    whole kit: ``gapo_lite._bootstrap.choose_backend``)."""
    return choose_backend(backend, cuda_available(), unsloth_installed())


def compute_dtype() -> Any:
    """The dtype for a transformers-backend model: bf16 on a GPU with native bf16 (compute capability >= 8),
    fp16 on one without (a T4: ``is_bf16_supported()`` alone would count emulation), fp32 on a CPU."""
    import torch

    if not cuda_available():
        return torch.float32
    return torch.bfloat16 if torch.cuda.is_bf16_supported(including_emulation=False) else torch.float16


def check_model_path(name_or_path: str | Path) -> str:
    """Reject a local-looking path that does not hold a model, naming what is missing.

    A ``.gguf`` file is converted once to a plain checkpoint folder (:mod:`gapo_lite.gguf`), whose path is returned.
    """
    text = str(name_or_path)
    if is_gguf(text):
        if not Path(text).expanduser().is_file():
            raise FileNotFoundError(f"GGUF file {text!r} does not exist")
        return str(gguf_checkpoint(text))
    path = Path(text).expanduser()
    looks_local = path.exists() or text.startswith((".", "/", "~")) or text.count("/") > 1 or "\\" in text
    if looks_local:
        if not path.is_dir():
            raise FileNotFoundError(f"model path {text!r} does not exist (or is not a folder)")
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"model folder {text!r} has no config.json; is it a saved model?")
        return str(path)
    return text


def load_tokenizer(name_or_path: str | Path):
    """The folder's tokenizer, honouring the class it was saved with.

    ``AutoTokenizer`` maps any qwen2 folder to ``Qwen2Tokenizer``, which mangles a custom tokenizer; a folder
    saved as ``PreTrainedTokenizerFast`` is loaded as exactly that.
    """
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    config = Path(str(name_or_path)) / "tokenizer_config.json"
    saved_class = json.loads(config.read_text()).get("tokenizer_class") if config.is_file() else None
    if saved_class in _GENERIC_FAST_TOKENIZERS:
        tokenizer = PreTrainedTokenizerFast.from_pretrained(str(name_or_path))
    else:
        tokenizer = AutoTokenizer.from_pretrained(str(name_or_path))
    return ensure_pad_token(tokenizer)


def load_model(
    name_or_path: str | Path,
    *,
    backend: Backend = "auto",
    load_in_4bit: bool = True,
    max_seq_length: int = 1024,
    lora: LoraSettings | None = LoraSettings(),
    fast_inference: bool = False,
    gpu_memory_utilization: float = 0.5,
    random_state: int = 3407,
    gradient_checkpointing: bool = True,
) -> tuple[Any, Any]:
    """Load a causal LM and its tokenizer with a LoRA adapter attached (``lora=None``: no adapter).

    ``auto`` uses Unsloth (fused kernels, 4-bit, gradient checkpointing "unsloth") when a CUDA GPU and
    unsloth are present, otherwise transformers + peft (bitsandbytes NF4 on CUDA, float32 on CPU).
    ``fast_inference=True`` (vLLM colocated generation) needs Unsloth on a CUDA GPU; vLLM then takes
    ``gpu_memory_utilization`` of the GPU (install it with ``pip install gapo-lite[vllm]``).
    ``gradient_checkpointing=False`` turns off Unsloth's ``"unsloth"`` checkpointing (transformers: see TRL's flag).
    """
    path = check_model_path(name_or_path)
    chosen, reason = resolve_backend(backend)
    if fast_inference and not cuda_available():
        raise ValueError("fast_inference=True needs vLLM on a CUDA GPU; this machine has none. Use fast_inference=False.")
    if fast_inference and chosen != "unsloth":
        raise ValueError("fast_inference=True is Unsloth's colocated vLLM; use backend='unsloth' (or 'auto' with unsloth installed)")
    if load_in_4bit and not cuda_available():
        logger.info("gapo-lite: 4-bit quantization needs CUDA; loading in full precision instead")
        load_in_4bit = False
    logger.info("gapo-lite: backend=%s (%s)", chosen, reason)
    print(f"gapo-lite: loading {path} with backend={chosen} ({reason}), 4-bit={load_in_4bit}")
    if chosen == "unsloth":
        return _load_unsloth(path, load_in_4bit, max_seq_length, lora, fast_inference, gpu_memory_utilization, random_state, gradient_checkpointing)
    return _load_transformers(path, load_in_4bit, lora, random_state)


def _load_unsloth(path, load_in_4bit, max_seq_length, lora, fast_inference, gpu_memory_utilization, random_state, gradient_checkpointing=True):
    import_unsloth()
    from unsloth import FastLanguageModel

    kwargs: dict[str, Any] = dict(
        model_name=path,
        max_seq_length=max_seq_length,
        load_in_4bit=load_in_4bit,
        fast_inference=fast_inference,
        max_lora_rank=lora.r if lora else 64,
    )
    if fast_inference:
        kwargs["gpu_memory_utilization"] = gpu_memory_utilization
    model, tokenizer = FastLanguageModel.from_pretrained(**kwargs)
    if Path(path).is_dir():
        tokenizer = load_tokenizer(path)  # keep a custom tokenizer's own class (see load_tokenizer)
    if lora is not None:
        model = FastLanguageModel.get_peft_model(
            model,
            r=lora.r,
            lora_alpha=lora.alpha,
            lora_dropout=lora.dropout,
            target_modules=list(lora.target_modules),
            use_gradient_checkpointing="unsloth" if gradient_checkpointing else False,
            random_state=random_state,
        )
    return model, tokenizer


def lora_targets(model: Any, wanted: tuple[str, ...], where: str = "the model") -> list[str]:
    """The names of ``wanted`` that ``model`` has as module names (Qwen2 and Llama both name their seven
    projections q/k/v/o_proj, gate/up/down_proj); a clear error naming its linear layers when none match."""
    import torch

    present = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
    targets = [m for m in wanted if m in present]
    if not targets:
        linear = sorted({name.rsplit(".", 1)[-1] for name, module in model.named_modules() if isinstance(module, torch.nn.Linear)})
        raise ValueError(f"none of the LoRA target modules {list(wanted)} exist in {where}; its linear layers are named {linear}")
    return targets


def _load_transformers(path, load_in_4bit, lora, random_state):
    import torch
    from transformers import AutoModelForCausalLM

    kwargs: dict[str, Any] = {}
    if cuda_available():
        dtype = compute_dtype()
        kwargs.update(dtype=dtype, device_map={"": torch.cuda.current_device()})
        if load_in_4bit:
            from transformers import BitsAndBytesConfig

            kwargs["quantization_config"] = BitsAndBytesConfig(
                load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=dtype
            )
    else:
        kwargs["dtype"] = torch.float32
    try:
        model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    except OSError as err:  # a hub id that does not exist or cannot be reached: one clear line in the CLI
        from gapo_lite.errors import UserFileNotFoundError

        raise UserFileNotFoundError(f"could not load model {path!r}: {err}") from err
    tokenizer = load_tokenizer(path)
    if lora is None:
        return model, tokenizer
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training

    if load_in_4bit:
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=True)
    targets = lora_targets(model, lora.target_modules, path)
    torch.manual_seed(random_state)
    config = LoraConfig(r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout, target_modules=targets, task_type="CAUSAL_LM")
    return get_peft_model(model, config), tokenizer
