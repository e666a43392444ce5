"""``plan_memory``: which micro-batch of completions fits in GPU memory for a GAPO/GRPO step, and why.

A GAPO step has two phases that never hold their big tensors at the same time:

* generation: TRL generates the whole per-process generation batch (``prompts_per_step * num_generations
  / world_size`` sequences) in one ``generate`` call, so the KV cache and the prefill's activations scale
  with the generation batch and do not depend on the chunk size;
* training: the generation batch is cut into micro-batches of ``chunk_size`` completions (TRL's
  ``per_device_train_batch_size``), each run forward and backward, gradients accumulated over
  ``steps_per_generation`` micro-batches, then one optimizer step.

Peak = weights + LoRA/optimizer + CUDA overhead (+ vLLM's pool) + max(generation phase, training phase).

Terms (bytes; ``a`` = bytes per activation element: 2 for 4bit/16bit (bf16 compute), 4 for 32bit;
``c`` = chunk size, ``P``/``C`` = prompt/completion tokens, ``S = P + C``, ``L`` layers, ``h`` hidden,
``I`` intermediate, ``kv`` = kv_heads * head_dim, ``V`` vocab, ``r`` LoRA rank):

``weights``
    4bit: the seven projections as bitsandbytes NF4 with double quantization, 0.5 byte/param + an
    8-bit absmax per 64-block + an fp32 constant per 256 blocks (~0.516 byte/param) + 1092 bytes of codes per
    matrix (``nf4_bytes``; the bytes of the real tensors, ``benchmarks/memory.py --resident``); embeddings, lm_head,
    norms and biases stay 16-bit (Unsloth and bitsandbytes keep them unquantized). On the transformers
    backend peft's ``prepare_model_for_kbit_training`` casts those unquantized parameters to fp32, so
    they count 4 bytes there. 16bit: 2 bytes/param; 32bit: 4 bytes/param.
``lora_params_and_optimizer``
    LoRA on the seven projections, ``r * (in + out)`` per module per layer. The adapter is kept in fp32
    (``ADAPTER_BYTES``: Unsloth and peft upcast it, and ``build_trainer`` undoes the bf16 cast TRL's
    GRPOTrainer gives a quantized model's adapter, see ``keep_fp32_adapters``): param 4 + grad 4 + AdamW's
    two fp32 states 8 = 16 bytes/param; with ``optimizer="adamw_8bit"`` (the default: what ``train()`` uses
    on CUDA) the states are 1 byte each: 10 bytes/param.
``activations`` (training, one micro-batch of ``c * S`` tokens)
    A LoRA'd decoder layer saves ``20h + 3kv + 5I + 7r`` elements per token for its backward (norm
    inputs, q/k/v/o and attention output, gate/up/act/product, the dropout copies of the LoRA inputs and
    their rank-r outputs) and its backward adds ``2h + 2I`` of gradient buffers. With gradient
    checkpointing every layer's input is kept (``L * c*S * h * a``) and one layer at a time is
    recomputed: ``c*S * (22h + 3kv + 7I + 7r) * a``. Unsloth's ``"unsloth"`` checkpointing offloads the
    saved layer inputs to CPU RAM, so there only two layers' inputs are on the GPU; but below a
    ``max_seq_length`` of 512 Unsloth turns it into plain checkpointing, every layer's input kept
    (``apply_unsloth_gradient_checkpointing``, ``unsloth/models/_utils.py`` ~L502-509 in 2026.10.9, called by
    ``get_peft_model`` with the model's ``max_seq_length``, which ``load_model`` sets). Without
    checkpointing all ``L`` layers keep their saved elements. Plus the final norm and the last hidden
    states (``2 * c*S * h * a``). (``benchmarks/memory.py`` compares this and the logits term with the
    peak measured on CPU in fp32; no GPU measurement yet.)
``logits_and_logprobs`` (the vocabulary-sized term)
    transformers: TRL materialises the logits of the ``C + 1`` kept positions and their gradient,
    ``2 * c*(C+1) * V * a``, plus one completion's fp32 log-softmax workspace ``2 * C * V * 4``.
    unsloth: log-probs come from the hidden states through lm_head in chunks and full logits never
    exist: the completion hidden states and their gradient (``2 * c*C * h * a``) plus one chunk of
    logits at 8 bytes/logit (bf16 logits, fp32 copy, fp32 gradient). The chunk is the larger of Unsloth's
    two paths: ``ceil(C / unsloth_logit_chunk_multiplier)`` rows (chunks = rows x multiplier) and the
    fused lm-head path's rows per chunk, ``min(2 GiB / (8V), max(512, c*C / 8))``.
``kv_cache``
    ``n_seq * rows * L * 2 * kv * kv_bytes`` with ``n_seq = prompts_per_step * num_generations / world_size``
    (the whole generation batch is generated at once) and kv_bytes 2 (4 at 32bit). transformers: ``rows = S``.
    unsloth: its decode buffer (``unsloth/models/llama.py`` ~L265, ``KV_CACHE_INCREMENT = 512``; allocated in
    ``_decode_graphs.alloc_decode_buffers``) holds ``512 + P + 1`` rows per sequence and grows by 512 rows
    when full: ``rows = P + 1 + 512 * max(1, ceil((C - 1) / 512))``.
``generation_transient``
    What generation needs beyond the full KV cache: the prefill's one-layer activations over all prompt
    tokens, ``n_seq * P * (3I + 4h) * a``, minus the part of the KV cache not yet allocated then (transformers:
    the completion rows; unsloth: all but the prefill's ``P`` rows, as its buffer is allocated at the first
    decode step); or during decoding (transformers) one layer's KV concatenation copy, (unsloth) the prefill's
    ``P``-row cache still held while the first decode step copies it, plus the fp32 logits of the last
    position (``3 * n_seq * V * 4``), whichever is larger.
``vllm_pool`` (``fast_inference=True``: Unsloth's colocated vLLM)
    vLLM reserves ``gpu_memory_utilization`` of the GPU's total memory for the weights it shares with the
    trainer plus its own KV cache and activations; generation then happens inside that reservation, so
    ``kv_cache`` and ``generation_transient`` are 0 and this term is the reservation minus the weights.
``cuda_overhead``
    1 GiB for the CUDA context, cuBLAS workspaces and allocator fragmentation.

Unsloth GRPOConfig fields (backend ``"unsloth"``), as read in unsloth_zoo 2026.10.9
(``grpo_accumulated_loss``, ``autotune_batch_and_chunks``):

* ``unsloth_grpo_mini_batch`` -- SET by this planner to 1. Despite the name Unsloth uses it as the
  number of slices each log-prob call is cut into (rows per slice = ceil(rows / value);
  ``unsloth_zoo/rl_replacements.py`` ~L2932-2946, ~L3037-3045). The training forward is called on one
  micro-batch of ``chunk_size`` rows, which this plan sized to fit, so one slice keeps all of them in one
  forward pass (``steps_per_generation`` slices would cut a 32-row micro-batch into 4-row forwards). The
  no-grad log-prob calls over the whole generation batch do not run here (one iteration,
  ``steps_per_generation = gradient_accumulation_steps``, ``beta = 0``, no vLLM importance-sampling
  correction). Setting it also switches off Unsloth's autotuning of the slicing (which sizes against 80%
  of the free memory at call time).
* ``unsloth_logit_chunk_multiplier`` -- LEFT to Unsloth (not passed). With ``unsloth_grpo_mini_batch``
  set Unsloth then uses ``max(4, seq_len // 4096)``; the plan reports that value and the estimate
  assumes it. The default fused lm-head path chunks its logits by rows instead (see above).
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from gapo_lite import batching
from gapo_lite._bootstrap import LOADERS
from gapo_lite.memory.specs import ModelSpec
from gapo_lite.runplan import fast_inference_problem
from gapo_lite.upstream import unsloth as upstream_unsloth  # the values read from Unsloth's sources

GIB = 1024**3
# Per quantized matrix, whatever its size: the NF4 code (16 fp32), double quant's nested code (256 fp32) and offset.
NF4_STATE_BYTES_PER_MATRIX = 4 * (16 + 256 + 1)


def nf4_bytes(params: int) -> int:
    """Bytes of one matrix of ``params`` weights in bitsandbytes NF4 with double quantization: two weights a byte,
    a uint8 absmax per block of 64, an fp32 absmax per 256 of those blocks, and the per-matrix constants."""
    blocks = math.ceil(params / 64)
    return math.ceil(params / 2) + blocks + 4 * math.ceil(blocks / 256) + NF4_STATE_BYTES_PER_MATRIX
CUDA_OVERHEAD_BYTES = GIB
QUANTIZATIONS = ("4bit", "16bit", "32bit")
ADAPTER_BYTES = 4  # the LoRA adapter and its gradient are fp32 on both backends (gapo_lite.training.trainer.keep_fp32_adapters)
OPTIMIZER_STATE_BYTES = {"adamw": 8, "adamw_8bit": 2}  # AdamW's two states per parameter: fp32, or 8-bit
OPTIMIZERS = {name: 2 * ADAPTER_BYTES + state for name, state in OPTIMIZER_STATE_BYTES.items()}  # bytes per LoRA parameter
UNSLOTH_GRPO_MINI_BATCH = 1  # slices per log-prob call: the whole planned micro-batch in one forward
LORA_PROJECTIONS = 7
TERM_NAMES = (
    "weights",
    "lora_params_and_optimizer",
    "activations",
    "logits_and_logprobs",
    "kv_cache",
    "generation_transient",
    "vllm_pool",
    "cuda_overhead",
)


class MemoryPlanError(ValueError):
    """Even one completion per micro-batch does not fit; ``plan`` holds that smallest plan (``fits=False``)."""

    def __init__(self, message: str, plan: "MemoryPlan") -> None:
        super().__init__(message)
        self.plan = plan


DEFAULT_PROMPT_TOKENS = 256  # only when no tokenizer and dataset are at hand to measure


@dataclass(frozen=True)
class PlanSettings:
    """Everything a plan depends on besides the model and the chunk size, in the planner's terms (validated on creation).

    It has no defaults of its own: :func:`gapo_lite.training.planning.plan_settings` derives every field from a
    ``TrainConfig`` and its run plan, for ``train()`` and ``gapo-lite plan`` alike."""

    quantization: str
    lora_rank: int
    num_generations: int
    prompts_per_step: int
    prompt_tokens: int
    completion_tokens: int
    world_size: int
    backend: str
    gradient_checkpointing: bool
    max_seq_length: int
    optimizer: str
    fast_inference: bool
    gpu_memory_utilization: float
    gpu_total_bytes: int | None = None  # the GPU's total memory, for vLLM's share (None: the budget stands for it)

    def __post_init__(self) -> None:
        if self.quantization not in QUANTIZATIONS:
            raise ValueError(f"quantization must be one of {', '.join(QUANTIZATIONS)}, got {self.quantization!r}")
        if self.backend not in LOADERS:
            raise ValueError(f"backend must be one of {', '.join(LOADERS)}, got {self.backend!r}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {self.optimizer!r}")
        for key in ("lora_rank", "prompts_per_step", "prompt_tokens", "completion_tokens", "world_size", "max_seq_length"):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{key} must be a positive integer, got {value!r}")
        if not isinstance(self.num_generations, int) or self.num_generations < 2:
            raise ValueError(f"num_generations must be an integer >= 2 (GRPO needs a group), got {self.num_generations!r}")
        problem = fast_inference_problem(self.backend, cuda=True) if self.fast_inference else None  # a plan is for a CUDA GPU
        if problem:
            raise ValueError(problem)
        if not 0.0 < self.gpu_memory_utilization < 1.0:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1), got {self.gpu_memory_utilization!r}")
        if self.gpu_total_bytes is not None and self.gpu_total_bytes < 1:
            raise ValueError(f"gpu_total_bytes must be positive, got {self.gpu_total_bytes!r}")
        batching.per_process_batch(self.prompts_per_step, self.num_generations, self.world_size)

    @property
    def generation_batch_size(self) -> int:
        return self.prompts_per_step * self.num_generations

    @property
    def per_process_batch(self) -> int:
        return batching.per_process_batch(self.prompts_per_step, self.num_generations, self.world_size)

    @property
    def activation_bytes(self) -> int:
        return 4 if self.quantization == "32bit" else 2


def lora_parameter_count(spec: ModelSpec, rank: int) -> int:
    """LoRA parameters on q/k/v/o/gate/up/down: ``rank * (in + out)`` per module per layer; where q/k/v and gate/up
    are fused (Phi-3), one adapter each reads the hidden state once (``lora_targets`` adapts the fused modules)."""
    h, q, kv, i = spec.hidden_size, spec.q_dim, spec.kv_dim, spec.intermediate_size
    if spec.fused_projections:
        per_layer = (h + q + 2 * kv) + (q + h) + (h + 2 * i) + (i + h)
    else:
        per_layer = (h + q) + 2 * (h + kv) + (q + h) + 2 * (h + i) + (i + h)
    return spec.num_layers * rank * per_layer


def default_logit_chunk_multiplier(settings: PlanSettings) -> int:
    """Unsloth's default when ``unsloth_logit_chunk_multiplier`` is unset: ``max(4, seq_len // 4096)``."""
    return upstream_unsloth.logit_chunk_multiplier(settings.prompt_tokens + settings.completion_tokens)


def _weights(spec: ModelSpec, s: PlanSettings) -> int:
    if s.quantization == "32bit":
        return 4 * spec.num_params
    if s.quantization == "16bit":
        return 2 * spec.num_params
    other = spec.num_params - spec.linear_params
    other_bytes = 4 if s.backend == "transformers" else 2
    return spec.num_layers * sum(nf4_bytes(n) for n in spec.projection_sizes) + other_bytes * other


def layer_saved_elements(spec: ModelSpec, rank: int) -> int:
    """Elements per token a LoRA'd decoder layer saves for its backward (see the module docstring)."""
    h, kv, i = spec.hidden_size, spec.kv_dim, spec.intermediate_size
    return 20 * h + 3 * kv + 5 * i + LORA_PROJECTIONS * rank


def layer_backward_elements(spec: ModelSpec) -> int:
    """Elements per token of gradient buffers while one layer's backward runs."""
    return 2 * spec.hidden_size + 2 * spec.intermediate_size


def checkpointed_inputs_on_gpu(spec: ModelSpec, s: PlanSettings) -> int:
    """Layers whose saved inputs stay on the GPU under gradient checkpointing: two with Unsloth's offloading, which
    it uses from a ``max_seq_length`` of 512 (``OFFLOAD_MIN_SEQ`` in :mod:`gapo_lite.upstream.unsloth`), every layer otherwise."""
    offloading = s.backend == "unsloth" and s.max_seq_length >= upstream_unsloth.OFFLOAD_MIN_SEQ
    return 2 if offloading else spec.num_layers


def _activations(spec: ModelSpec, s: PlanSettings, chunk: int) -> int:
    a, tokens = s.activation_bytes, chunk * (s.prompt_tokens + s.completion_tokens)
    saved = tokens * layer_saved_elements(spec, s.lora_rank) * a
    backward = tokens * layer_backward_elements(spec) * a
    if s.gradient_checkpointing:
        total = checkpointed_inputs_on_gpu(spec, s) * tokens * spec.hidden_size * a + saved + backward
    else:
        total = spec.num_layers * saved + backward
    return total + 2 * tokens * spec.hidden_size * a


def _logits(spec: ModelSpec, s: PlanSettings, chunk: int, multiplier: int | None) -> int:
    a, C, V = s.activation_bytes, s.completion_tokens, spec.vocab_size
    if s.backend == "transformers":
        return 2 * chunk * (C + 1) * V * a + 2 * C * V * 4
    hidden = 2 * chunk * C * spec.hidden_size * a
    rows_multiplier = math.ceil(C / (multiplier or default_logit_chunk_multiplier(s)))
    per_logit, chunk_bytes = upstream_unsloth.BYTES_PER_LOGIT, int(upstream_unsloth.FUSED_CHUNK_GB * GIB)
    rows_fused = min(chunk_bytes // (V * per_logit), max(upstream_unsloth.FUSED_MIN_ROWS, math.ceil(chunk * C / 8)))
    rows = min(max(rows_multiplier, rows_fused), chunk * C)
    return hidden + rows * V * per_logit


def _kv_bytes(spec: ModelSpec, s: PlanSettings, tokens: int) -> int:
    kv_bytes = 4 if s.quantization == "32bit" else 2
    return s.per_process_batch * tokens * spec.num_layers * 2 * spec.kv_dim * kv_bytes


def kv_cache_rows(s: PlanSettings) -> int:
    """KV cache rows per sequence: ``P + C`` (transformers), Unsloth's decode buffer ``P + 1 + 512k`` (unsloth)."""
    if s.backend != "unsloth":
        return s.prompt_tokens + s.completion_tokens
    step = upstream_unsloth.KV_CACHE_INCREMENT
    increments = max(1, math.ceil((s.completion_tokens - 1) / step))
    return s.prompt_tokens + 1 + step * increments


def _kv_cache(spec: ModelSpec, s: PlanSettings) -> int:
    return 0 if s.fast_inference else _kv_bytes(spec, s, kv_cache_rows(s))


def _generation_transient(spec: ModelSpec, s: PlanSettings) -> int:
    if s.fast_inference:
        return 0  # inside vLLM's reservation (vllm_pool)
    a, n = s.activation_bytes, s.per_process_batch
    prefill = n * s.prompt_tokens * (3 * spec.intermediate_size + 4 * spec.hidden_size) * a
    prompt_cache = _kv_bytes(spec, s, s.prompt_tokens)
    not_yet_cached = _kv_cache(spec, s) - prompt_cache
    if s.backend == "unsloth":
        held = prompt_cache  # the prefill's cache, until the first decode step has copied it into the buffer
    else:
        held = _kv_bytes(spec, s, s.prompt_tokens + s.completion_tokens) // spec.num_layers  # one layer's KV copy
    decode = held + 3 * n * spec.vocab_size * 4
    return max(prefill - not_yet_cached, decode)


def vllm_reserved_bytes(s: PlanSettings, budget: int | None) -> int:
    """vLLM's reservation: ``gpu_memory_utilization`` x the GPU's total memory (the budget when that is not given)."""
    return int(s.gpu_memory_utilization * (s.gpu_total_bytes or budget or 0))


def _vllm_pool(spec: ModelSpec, s: PlanSettings, budget: int | None) -> int:
    if not s.fast_inference:
        return 0
    if budget is None and s.gpu_total_bytes is None:
        raise ValueError("planning vLLM's share needs the budget or the GPU's total memory")
    reserved, weights = vllm_reserved_bytes(s, budget), _weights(spec, s)
    if reserved <= weights:
        raise ValueError(
            f"gpu_memory_utilization={s.gpu_memory_utilization} gives vLLM {reserved / GIB:.2f} GiB, not even the "
            f"{weights / GIB:.2f} GiB of weights it holds; raise gpu_memory_utilization"
        )
    return reserved - weights


def estimate_terms(
    spec: ModelSpec, settings: PlanSettings, chunk_size: int, logit_chunk_multiplier: int | None = None, budget_bytes: int | None = None
) -> dict[str, int]:
    """Every memory term in bytes for ``chunk_size`` completions per micro-batch (see the module docstring).

    ``budget_bytes`` is needed only with ``fast_inference`` and no ``gpu_total_bytes`` (vLLM's share of it)."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    s = settings
    return {
        "weights": _weights(spec, s),
        "lora_params_and_optimizer": lora_parameter_count(spec, s.lora_rank) * OPTIMIZERS[s.optimizer],
        "activations": _activations(spec, s, chunk_size),
        "logits_and_logprobs": _logits(spec, s, chunk_size, logit_chunk_multiplier),
        "kv_cache": _kv_cache(spec, s),
        "generation_transient": _generation_transient(spec, s),
        "vllm_pool": _vllm_pool(spec, s, budget_bytes),
        "cuda_overhead": CUDA_OVERHEAD_BYTES,
    }


def phase_bytes(terms: dict[str, int]) -> dict[str, int]:
    """Resident, training and generation totals, and the peak (resident + the larger phase)."""
    resident = terms["weights"] + terms["lora_params_and_optimizer"] + terms["cuda_overhead"] + terms.get("vllm_pool", 0)
    training = terms["activations"] + terms["logits_and_logprobs"]
    generation = terms["kv_cache"] + terms["generation_transient"]
    return {"resident": resident, "training": training, "generation": generation, "peak": resident + max(training, generation)}


@dataclass(frozen=True)
class MemoryPlan:
    """A chunking of the generation batch and its memory estimate (bytes). See :func:`plan_memory`."""

    model: str
    fits: bool
    chunk_size: int
    steps_per_generation: int
    generation_batch_size: int
    num_generations: int
    world_size: int
    estimated_peak_bytes: int
    terms: dict[str, int]
    budget_bytes: int
    backend: str
    quantization: str
    peak_phase: str
    unsloth_grpo_mini_batch: int | None = None
    unsloth_logit_chunk_multiplier: int | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    suggestions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def gradient_accumulation_steps(self) -> int:
        return self.steps_per_generation

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["gradient_accumulation_steps"] = self.gradient_accumulation_steps
        out["phases"] = phase_bytes(self.terms)
        return out

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def grpo_kwargs(self, include_unsloth: bool | None = None) -> dict[str, Any]:
        """Keyword arguments for ``trl.GRPOConfig``.

        ``generation_batch_size`` is left out (TRL rejects it together with ``steps_per_generation``; it
        follows as per_device x world x steps_per_generation). ``unsloth_grpo_mini_batch`` is added when
        ``include_unsloth`` (default: backend is unsloth); only Unsloth's patched GRPOConfig accepts it.
        """
        kwargs: dict[str, Any] = {
            "per_device_train_batch_size": self.chunk_size,
            "gradient_accumulation_steps": self.gradient_accumulation_steps,
            "steps_per_generation": self.steps_per_generation,
            "num_generations": self.num_generations,
        }
        if self.settings.get("optimizer") == "adamw_8bit":
            kwargs["optim"] = "adamw_8bit"
        if include_unsloth is None:
            include_unsloth = self.backend == "unsloth"
        if include_unsloth and self.unsloth_grpo_mini_batch is not None:
            kwargs["unsloth_grpo_mini_batch"] = self.unsloth_grpo_mini_batch
        return kwargs

    def format_table(self) -> str:
        """A human-readable table in GiB."""
        phases = phase_bytes(self.terms)
        s = self.settings
        lines = [
            f"memory plan: {self.model}, {self.quantization}, backend {self.backend}, LoRA r={s.get('lora_rank')}, "
            f"world size {self.world_size}",
            f"  {s.get('prompts_per_step')} prompts x G={self.num_generations} = generation batch {self.generation_batch_size}; "
            f"{s.get('prompt_tokens')} prompt + {s.get('completion_tokens')} completion tokens",
            "",
            f"  {'term':<28}{'GiB':>9}",
            f"  {'-' * 37}",
        ]
        for name in TERM_NAMES:
            lines.append(f"  {name:<28}{self.terms[name] / GIB:>9.2f}")
        lines += [
            f"  {'-' * 37}",
            f"  {'resident (weights+LoRA+ctx)':<28}{phases['resident'] / GIB:>9.2f}"
            + ("   (+ vLLM's pool)" if self.terms.get("vllm_pool") else ""),
            f"  {'training phase':<28}{phases['training'] / GIB:>9.2f}",
            f"  {'generation phase':<28}{phases['generation'] / GIB:>9.2f}",
            f"  {'estimated peak':<28}{self.estimated_peak_bytes / GIB:>9.2f}   ({self.peak_phase})",
            f"  {'budget':<28}{self.budget_bytes / GIB:>9.2f}",
            "",
            f"  fits: {'yes' if self.fits else 'NO'}",
            f"  chunk_size (per_device_train_batch_size): {self.chunk_size}",
            f"  steps_per_generation = gradient_accumulation_steps: {self.steps_per_generation}",
            f"  generation_batch_size: {self.generation_batch_size}",
        ]
        if self.backend == "unsloth":
            lines += [
                f"  unsloth_grpo_mini_batch: {self.unsloth_grpo_mini_batch} (set: each forward keeps the micro-batch's {self.chunk_size} rows)",
                f"  unsloth_logit_chunk_multiplier: {self.unsloth_logit_chunk_multiplier} (Unsloth's default; not passed)",
            ]
        if self.suggestions:
            lines += ["", "  what would fit (each change alone):"]
            lines += [f"    {format_suggestion(x)}" for x in self.suggestions]
        return "\n".join(lines)


def format_suggestion(s: dict[str, Any]) -> str:
    """One line of the table's "what would fit" section."""
    peak = f"estimated peak {s['estimated_peak_bytes'] / GIB:.2f} GiB"
    detail = f"{peak}, chunk_size {s['chunk_size']}" if s["fits"] else f"{peak}; does not fit either"
    if s["change"] == "memory_budget_gb":
        return f"a budget of at least {s['value']:.2f} GiB ({detail})"
    if s["change"] == "fast_inference":
        return f"fast_inference=True, vLLM generation ({detail})"
    return f"{s['change']}={s['value']} ({detail})"


def free_cuda_bytes() -> int:
    """Free memory on the current CUDA device; a clear error without one."""
    import torch

    if not torch.cuda.is_available():
        raise ValueError("no CUDA GPU here to measure free memory; give a budget (budget_bytes=..., or --budget-gb on the command line)")
    free, _total = torch.cuda.mem_get_info()
    return int(free)


def candidate_chunk_sizes(settings: PlanSettings) -> list[int]:
    """Divisors of the per-process generation batch, largest first."""
    return batching.chunk_sizes(settings.per_process_batch)


def _make_plan(spec: ModelSpec, s: PlanSettings, chunk: int, budget: int) -> MemoryPlan:
    multiplier = default_logit_chunk_multiplier(s) if s.backend == "unsloth" else None
    terms = estimate_terms(spec, s, chunk, multiplier, budget)
    phases = phase_bytes(terms)
    steps = s.per_process_batch // chunk
    return MemoryPlan(
        model=spec.name,
        fits=phases["peak"] <= budget,
        chunk_size=chunk,
        steps_per_generation=steps,
        generation_batch_size=s.generation_batch_size,
        num_generations=s.num_generations,
        world_size=s.world_size,
        estimated_peak_bytes=phases["peak"],
        terms=terms,
        budget_bytes=budget,
        backend=s.backend,
        quantization=s.quantization,
        peak_phase="training" if phases["training"] >= phases["generation"] else "generation",
        unsloth_grpo_mini_batch=UNSLOTH_GRPO_MINI_BATCH if s.backend == "unsloth" else None,
        unsloth_logit_chunk_multiplier=multiplier,
        settings=asdict(s),
    )


def plan_memory(spec: ModelSpec, settings: PlanSettings, *, budget_bytes: int | None = None) -> MemoryPlan:
    """The largest chunk size (completions per micro-batch) that divides the per-process generation batch and fits.

    ``settings`` says what runs. ``budget_bytes=None`` uses the free memory of the current CUDA device (an error on
    a machine without one). Raises :class:`MemoryPlanError` (a ``ValueError``, message includes the table and what
    would fit) when even chunk size 1 does not fit.
    """
    budget = free_cuda_bytes() if budget_bytes is None else int(budget_bytes)
    if budget <= 0:
        raise ValueError(f"budget_bytes must be positive, got {budget_bytes!r}")
    plan = fitting_plan(spec, settings, budget)
    if plan is not None:
        return plan
    smallest = dataclasses.replace(_make_plan(spec, settings, 1, budget), suggestions=what_would_fit(spec, settings, budget))
    phases = phase_bytes(smallest.terms)
    short = smallest.estimated_peak_bytes - budget
    hint = (
        "the generation phase (KV cache and prefill of the whole generation batch) alone is too big: "
        "lower prompts_per_step, num_generations or the token lengths"
        if phases["resident"] + phases["generation"] > budget
        else "lower the LoRA rank, the token lengths, or use 4bit"
    )
    raise MemoryPlanError(
        f"{spec.name} does not fit in {budget / GIB:.2f} GiB even with one completion per micro-batch "
        f"(estimated peak {smallest.estimated_peak_bytes / GIB:.2f} GiB, {short / GIB:.2f} GiB short); {hint}.\n"
        + smallest.format_table(),
        smallest,
    )


def fitting_plan(spec: ModelSpec, settings: PlanSettings, budget: int) -> MemoryPlan | None:
    """The plan at the largest chunk size that fits in ``budget``, or None."""
    for chunk in candidate_chunk_sizes(settings):
        plan = _make_plan(spec, settings, chunk, budget)
        if plan.fits:
            return plan
    return None


def _suggestion(change: str, value: Any, plan: MemoryPlan) -> dict[str, Any]:
    return {"change": change, "value": value, "fits": plan.fits, "chunk_size": plan.chunk_size, "estimated_peak_bytes": plan.estimated_peak_bytes}


def what_would_fit(spec: ModelSpec, settings: PlanSettings, budget: int) -> list[dict[str, Any]]:
    """The ways out of a plan that does not fit, each a single change with its estimated peak: the largest
    ``prompts_per_step`` that fits at the same G, the longest completions that fit, vLLM generation
    (``fast_inference``, on the Unsloth backend) and the smallest budget that fits as asked."""
    out: list[dict[str, Any]] = []
    for prompts in range(settings.prompts_per_step - 1, 0, -1):
        if prompts % settings.world_size == 0:
            plan = fitting_plan(spec, dataclasses.replace(settings, prompts_per_step=prompts), budget)
            if plan is not None:
                out.append(_suggestion("prompts_per_step", prompts, plan))
                break
    shorter = _longest_fitting_completion(spec, settings, budget)
    if shorter is None and settings.completion_tokens > 1:  # not even one token: say how far off the shortest is
        shorter = _make_plan(spec, dataclasses.replace(settings, completion_tokens=1), 1, budget)
    if shorter is not None:
        out.append(_suggestion("max_completion_length", shorter.settings["completion_tokens"], shorter))
    if not settings.fast_inference and fast_inference_problem(settings.backend, cuda=True) is None:
        try:
            vllm = dataclasses.replace(settings, fast_inference=True)
            out.append(_suggestion("fast_inference", True, fitting_plan(spec, vllm, budget) or _make_plan(spec, vllm, 1, budget)))
        except ValueError:  # vLLM's share would not even hold the weights
            pass
    if not settings.fast_inference or settings.gpu_total_bytes is not None:
        needed = minimum_budget_bytes(spec, settings)
        out.append(_suggestion("memory_budget_gb", math.ceil(needed / GIB * 100) / 100, _make_plan(spec, settings, 1, needed)))
    return out


def _longest_fitting_completion(spec: ModelSpec, settings: PlanSettings, budget: int) -> MemoryPlan | None:
    """The plan at the longest ``completion_tokens`` below the asked one that fits (every term grows with it)."""
    low, high, best = 1, settings.completion_tokens - 1, None
    while low <= high:
        mid = (low + high) // 2
        plan = fitting_plan(spec, dataclasses.replace(settings, completion_tokens=mid), budget)
        if plan is None:
            high = mid - 1
        else:
            best, low = plan, mid + 1
    return best


def minimum_budget_bytes(spec: ModelSpec, settings: PlanSettings) -> int:
    """The smallest budget :func:`plan_memory` accepts for ``settings``: the estimated peak at one completion per pass.

    (Every term grows with the chunk size, so chunk size 1 is the cheapest plan.) Not defined with
    ``fast_inference`` and no ``gpu_total_bytes``, where vLLM's share itself depends on the budget."""
    if settings.fast_inference and settings.gpu_total_bytes is None:
        raise ValueError("with fast_inference the smallest budget depends on the GPU's total memory: give gpu_total_bytes")
    multiplier = default_logit_chunk_multiplier(settings) if settings.backend == "unsloth" else None
    return phase_bytes(estimate_terms(spec, settings, 1, multiplier, settings.gpu_total_bytes))["peak"]
