"""What the installed packages can do on this machine, found by trying it once (cached for the process).

The run plan asks here instead of assuming from "CUDA or not": bitsandbytes 0.50 runs NF4 on the CPU too, and a
GPU with a broken bitsandbytes build should be told so before a 7B model loads, not after."""
from __future__ import annotations

import functools


@functools.lru_cache(maxsize=None)
def bitsandbytes_4bit_problem(device: str) -> str | None:
    """None when bitsandbytes quantizes a weight to NF4 (double quant) on ``device`` ("cpu" or "cuda") and one
    ``Linear4bit`` forward there matches the product with the dequantized weight; otherwise why not, in one line.

    >>> bitsandbytes_4bit_problem("tpu")
    "bitsandbytes' 4-bit kernels run on 'cpu' or 'cuda', not 'tpu'"
    """
    if device not in ("cpu", "cuda"):
        return f"bitsandbytes' 4-bit kernels run on 'cpu' or 'cuda', not {device!r}"
    try:
        import bitsandbytes as bnb
    except Exception as err:  # not installed, or its native library fails to load
        return f"bitsandbytes cannot be imported ({type(err).__name__}: {err}); pip install bitsandbytes"
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        return "torch sees no CUDA GPU"
    try:
        generator = torch.Generator().manual_seed(0)
        weight = torch.randn(64, 64, generator=generator)
        layer = bnb.nn.Linear4bit(64, 64, bias=False, compute_dtype=torch.float32, compress_statistics=True, quant_type="nf4")
        layer.weight = bnb.nn.Params4bit(weight, requires_grad=False, compress_statistics=True, quant_type="nf4")
        layer = layer.to(device)  # bitsandbytes quantizes when the weight moves to its device
        x = torch.randn(4, 64, generator=generator).to(device)
        with torch.no_grad():
            y = layer(x)
            dense = x @ bnb.functional.dequantize_4bit(layer.weight.data, layer.weight.quant_state).to(x.dtype).T
    except Exception as err:
        return f"bitsandbytes {getattr(bnb, '__version__', '?')} failed a 4-bit forward on {device} ({type(err).__name__}: {str(err).splitlines()[0]})"
    if not torch.isfinite(y).all() or not torch.allclose(y.float(), dense.float(), rtol=1e-3, atol=1e-3):
        return f"bitsandbytes {bnb.__version__}'s 4-bit forward on {device} does not match its own dequantized weight"
    return None


def bf16_step_ratio(rounds: int = 5, tokens: int = 256) -> float:
    """Time under bf16 autocast over time in fp32 of a LoRA training step on this CPU: one decoder layer at SmolLM2's
    shapes (hidden 576, MLP 1536, 9 heads, LoRA r 64 on the seven projections, frozen fp32 weights) and an LM head
    of 2048 tokens (SmolLM2's head is a fifth of its step's work, as this one is of one layer's), forward and
    backward on 16 rows of ``tokens / 16``; the median of ``rounds`` alternating timings after one warm-up each.
    Below 1, bf16 is faster here. About a second.

    Frozen weights matter: autocast keeps bf16 copies only of weights that require grad, so under LoRA every
    frozen matrix is cast again at every forward, and whether that costs more than bf16 saves depends on the CPU."""
    import statistics
    import time

    import torch

    generator = torch.Generator().manual_seed(0)
    hidden, mlp, heads, rank, vocab, rows = 576, 1536, 9, 64, 2048, 16

    def frozen(out: int, inp: int) -> torch.Tensor:
        return torch.randn(out, inp, generator=generator) / inp**0.5

    def adapter(out: int, inp: int) -> tuple[torch.Tensor, torch.Tensor]:
        return (torch.randn(rank, inp, generator=generator) / inp**0.5).requires_grad_(), torch.full((out, rank), 1e-3).requires_grad_()

    shapes = {"q": (hidden, hidden), "k": (hidden, hidden), "v": (hidden, hidden), "o": (hidden, hidden),
              "gate": (mlp, hidden), "up": (mlp, hidden), "down": (hidden, mlp)}
    weights = {name: (frozen(*shape), *adapter(*shape)) for name, shape in shapes.items()}
    head = frozen(vocab, hidden)
    x = torch.randn(rows, tokens // rows, hidden, generator=generator)
    targets = torch.randint(vocab, (rows, tokens // rows), generator=generator)

    def proj(name: str, h: torch.Tensor) -> torch.Tensor:
        w, a, b = weights[name]
        return torch.nn.functional.linear(h, w) + torch.nn.functional.linear(torch.nn.functional.linear(h, a), b)

    def step(bf16: bool) -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            h = torch.nn.functional.rms_norm(x, (hidden,))
            q, k, v = (proj(n, h).unflatten(-1, (heads, -1)).transpose(1, 2) for n in "qkv")
            h = x + proj("o", torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).flatten(2))
            m = torch.nn.functional.rms_norm(h, (hidden,))
            h = h + proj("down", torch.nn.functional.silu(proj("gate", m)) * proj("up", m))
            logits = torch.nn.functional.linear(torch.nn.functional.rms_norm(h, (hidden,)), head)
            loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), targets.flatten())
        loss.backward()

    times: dict[bool, list[float]] = {False: [], True: []}
    for i in range(rounds + 1):
        for bf16 in (False, True):
            start = time.perf_counter()
            step(bf16)
            if i:  # the first round warms up
                times[bf16].append(time.perf_counter() - start)
    return statistics.median(times[True]) / statistics.median(times[False])
