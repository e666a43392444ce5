"""``load_model``: a causal LM with a LoRA adapter, through Unsloth (GPU) or transformers + peft."""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gapo_lite._bootstrap import DEFAULT_BACKEND, Backend
from gapo_lite.errors import looks_like_local_path
from gapo_lite.gguf import gguf_checkpoint, is_gguf
from gapo_lite.runplan import RunPlan, resolve_run_plan
from gapo_lite.sampling import ensure_pad_token, pads_with_eos

logger = logging.getLogger("gapo_lite")

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


def check_model_path(name_or_path: str | Path) -> str:
    """Reject a local path (see :func:`~gapo_lite.errors.looks_like_local_path`) that does not hold a model,
    naming what is missing; a hub id is returned as is.

    A ``.gguf`` file is converted once to a plain checkpoint folder (:mod:`gapo_lite.gguf`), whose path is returned.
    """
    text = str(name_or_path)
    if is_gguf(text):
        if not Path(text).expanduser().is_file():
            raise FileNotFoundError(f"GGUF file {text!r} does not exist")
        return str(gguf_checkpoint(text))
    path = Path(text).expanduser()
    if path.exists() or looks_like_local_path(text):
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
    backend: Backend = DEFAULT_BACKEND,
    load_in_4bit: bool | None = None,
    max_seq_length: int = 1024,
    lora: LoraSettings | None = LoraSettings(),
    fast_inference: bool = False,
    gpu_memory_utilization: float = 0.5,
    random_state: int = 3407,
    gradient_checkpointing: bool = True,
    run_plan: RunPlan | None = None,
) -> tuple[Any, Any]:
    """Load a causal LM and its tokenizer with a LoRA adapter attached (``lora=None``: no adapter).

    How it loads is the run plan's decision (:mod:`gapo_lite.runplan`): ``run_plan``, or one resolved here from
    ``backend``, ``load_in_4bit`` and ``fast_inference``. ``auto`` uses Unsloth (fused kernels, 4-bit, gradient
    checkpointing "unsloth") when a CUDA GPU and unsloth are present, otherwise transformers + peft
    (bitsandbytes NF4 on CUDA; fp32 on a CPU, or NF4 there too with ``load_in_4bit=True``). ``fast_inference=True`` (vLLM colocated generation) needs
    Unsloth on a CUDA GPU; vLLM then takes ``gpu_memory_utilization`` of the GPU (``pip install gapo-lite[vllm]``).
    ``gradient_checkpointing=False`` turns off Unsloth's ``"unsloth"`` checkpointing (transformers: see TRL's flag).
    """
    path = check_model_path(name_or_path)
    if run_plan is None:
        run_plan = resolve_run_plan(backend=backend, load_in_4bit=load_in_4bit, fast_inference=fast_inference,
                                    gradient_checkpointing=gradient_checkpointing)
    logger.info("gapo-lite: %s", run_plan.describe())
    print(f"gapo-lite: loading {path} with backend={run_plan.backend} ({run_plan.backend_reason}), 4-bit={run_plan.load_in_4bit}")
    if run_plan.backend == "unsloth":
        return _load_unsloth(path, run_plan, max_seq_length, lora, gpu_memory_utilization, random_state)
    return _load_transformers(path, run_plan, lora, random_state)


def _load_unsloth(path: str, run_plan: RunPlan, max_seq_length: int, lora: LoraSettings | None, gpu_memory_utilization: float, random_state: int):
    run_plan.import_backend()
    from unsloth import FastLanguageModel

    kwargs: dict[str, Any] = dict(
        model_name=path,
        max_seq_length=max_seq_length,
        load_in_4bit=run_plan.load_in_4bit,
        fast_inference=run_plan.fast_inference,
        max_lora_rank=lora.r if lora else LoraSettings.r,
    )
    if run_plan.fast_inference:
        kwargs["gpu_memory_utilization"] = gpu_memory_utilization
    model, tokenizer = FastLanguageModel.from_pretrained(**kwargs)
    if Path(path).is_dir():
        tokenizer = load_tokenizer(path)  # keep a custom tokenizer's own class (see load_tokenizer)
        if pads_with_eos(tokenizer):
            raise ValueError(
                f"{path}: its tokenizer has no token to pad with but its end-of-sequence token {tokenizer.eos_token!r}, and "
                "Unsloth's GRPO loss drops every pad-id token, so that token would leave the loss; give the tokenizer a pad "
                "token (tokenizer.add_special_tokens and model.resize_token_embeddings) or use backend='transformers'"
            )
    if lora is not None:
        model = FastLanguageModel.get_peft_model(
            model,
            r=lora.r,
            lora_alpha=lora.alpha,
            lora_dropout=lora.dropout,
            target_modules=lora_targets(model, lora.target_modules, path),
            use_gradient_checkpointing="unsloth" if run_plan.gradient_checkpointing else False,
            random_state=random_state,
        )
    return model, tokenizer


# Fused projections some families use instead of the seven (Phi-3 / Phi-4: one qkv_proj, one gate_up_proj).
FUSED_PROJECTIONS = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}


def lora_targets(model: Any, wanted: tuple[str, ...], where: str = "the model") -> list[str]:
    """The module names LoRA attaches to for ``wanted``, read from ``model``'s own module names: each wanted
    name the model has, and a fused projection (Phi-3's ``qkv_proj``, ``gate_up_proj``) standing for wanted
    names it has not; a clear error naming its linear layers when nothing matches."""
    import torch

    present = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
    targets = [m for m in wanted if m in present]
    for fused, parts in FUSED_PROJECTIONS.items():
        if fused in present and fused not in targets and any(p in wanted and p not in present for p in parts):
            targets.append(fused)
    if not targets:
        linear = sorted({name.rsplit(".", 1)[-1] for name, module in model.named_modules() if isinstance(module, torch.nn.Linear)})
        raise ValueError(f"none of the LoRA target modules {list(wanted)} exist in {where}; its linear layers are named {linear}")
    return targets


def _load_transformers(path: str, run_plan: RunPlan, lora: LoraSettings | None, random_state: int):
    import torch
    from transformers import AutoModelForCausalLM

    kwargs: dict[str, Any] = {"dtype": run_plan.torch_dtype}
    if run_plan.cuda:
        kwargs["device_map"] = {"": torch.cuda.current_device()}
    if run_plan.load_in_4bit:
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=run_plan.compute_dtype
        )
        kwargs.setdefault("device_map", "cpu")  # bitsandbytes quantizes each weight as it is placed
    try:
        model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    except OSError as err:  # a hub id that does not exist or cannot be reached: one clear line in the CLI
        from gapo_lite.errors import UserFileNotFoundError

        raise UserFileNotFoundError(f"could not load model {path!r}: {err}") from err
    tokenizer = load_tokenizer(path)
    if lora is None:
        return model, tokenizer
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training

    if run_plan.load_in_4bit:
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=run_plan.gradient_checkpointing)
    targets = lora_targets(model, lora.target_modules, path)
    torch.manual_seed(random_state)
    config = LoraConfig(r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout, target_modules=targets, task_type="CAUSAL_LM")
    return get_peft_model(model, config), tokenizer
