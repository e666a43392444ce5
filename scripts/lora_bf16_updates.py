"""How many LoRA entries an Adam step at the paper's lr 1e-5 changes when the adapter is kept in bf16 (as TRL's
GRPOTrainer leaves a quantized model's) and in fp32: Qwen2.5-7B's shapes, r=64, one decoder layer's seven projections.

    python scripts/lora_bf16_updates.py            # the markdown table of docs/gpu.md (CPU, about a minute)

Each projection's adapter starts as peft makes it (A: kaiming-uniform with a = sqrt(5), B: zeros) and is trained
on a fixed surrogate loss, sum(t * B A x) over 16 random tokens x and targets t, so its gradients keep their
signs from step to step: each Adam update is then about lr in size, the largest Adam makes, the best case for
bf16. Step 1 moves only B (A's gradient is zero while B is); from step 2 both move. bf16 stores 8 significant
bits: an entry of size |w| changes only when the update exceeds half its spacing, 2^(floor(log2 |w|) - 8), so
at lr 1e-5 every A entry above 2^-8 = 0.0039 stays where it is, and kaiming's A of fan-in 3584 is spread up to
1/sqrt(3584) = 0.017. Optimizers: torch's AdamW (``adamw_torch``) and bitsandbytes' 8-bit AdamW (``adamw_8bit``,
the kit's CUDA default; it computes the update in fp32 and rounds it into the bf16 parameter, no stochastic
rounding).
"""
from __future__ import annotations

import math

HIDDEN, INTERMEDIATE, KV = 3584, 18944, 512  # Qwen2.5-7B: hidden size, MLP width, key/value width (4 heads x 128)
PROJECTIONS = {  # name: (in_features, out_features)
    "q_proj": (HIDDEN, HIDDEN), "k_proj": (HIDDEN, KV), "v_proj": (HIDDEN, KV), "o_proj": (HIDDEN, HIDDEN),
    "gate_proj": (HIDDEN, INTERMEDIATE), "up_proj": (HIDDEN, INTERMEDIATE), "down_proj": (INTERMEDIATE, HIDDEN),
}
RANK, LR, TOKENS, STEPS, REPORTED_STEPS = 64, 1e-5, 16, 10, (1, 2, 10)
OPTIMIZERS = ("adamw_torch", "adamw_8bit")


def changed_shares(optimizer: str, dtype_name: str, steps: int = STEPS, seed: int = 0) -> list[dict[str, float]]:
    """For each step, the share of A entries, of B entries and of all entries that the step changed."""
    import torch

    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
    generator = torch.Generator().manual_seed(seed)
    adapters, data = [], []
    for fan_in, fan_out in PROJECTIONS.values():
        a = torch.empty(RANK, fan_in)
        torch.nn.init.kaiming_uniform_(a, a=math.sqrt(5), generator=generator)  # peft's LoRA A init
        adapters += [torch.nn.Parameter(a.to(dtype)), torch.nn.Parameter(torch.zeros(fan_out, RANK, dtype=dtype))]
        data.append((torch.randn(TOKENS, fan_in, generator=generator), torch.randn(TOKENS, fan_out, generator=generator)))
    if optimizer == "adamw_8bit":
        import bitsandbytes as bnb

        opt = bnb.optim.AdamW8bit(adapters, lr=LR, weight_decay=0.0)
    else:
        opt = torch.optim.AdamW(adapters, lr=LR, weight_decay=0.0)
    shares = []
    for _ in range(steps):
        opt.zero_grad()
        loss = sum(((x @ a.float().T @ b.float().T) * t).sum() for (x, t), a, b in zip(data, adapters[0::2], adapters[1::2]))
        loss.backward()
        before = [p.detach().clone() for p in adapters]
        opt.step()
        changed = [int((p.detach() != old).sum()) for p, old in zip(adapters, before)]
        size_a, size_b = sum(p.numel() for p in adapters[0::2]), sum(p.numel() for p in adapters[1::2])
        shares.append({"A": sum(changed[0::2]) / size_a, "B": sum(changed[1::2]) / size_b, "all": sum(changed) / (size_a + size_b)})
    return shares


def render() -> str:
    """The markdown table: one row per optimizer and adapter dtype, the share of entries changed at the reported steps."""
    header = ["optimizer", "adapter dtype"] + [f"step {s}: A / B / all" for s in REPORTED_STEPS]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for optimizer in OPTIMIZERS:
        for dtype in ("fp32", "bf16"):
            shares = changed_shares(optimizer, dtype)
            cells = [" / ".join(f"{100 * shares[s - 1][k]:.1f}%" for k in ("A", "B", "all")) for s in REPORTED_STEPS]
            lines.append("| " + " | ".join([optimizer, dtype, *cells]) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render())
