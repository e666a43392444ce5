"""Generation for a GAPO step of several prompts: one decoding loop for all of them against one loop per prompt.

    bash scripts/get_smollm2.sh && python benchmarks/shared_prefix_generation.py [--prompts 2 4 8] [--group 32] [--rounds 3]

A step of P prompts x G completions samples P * G rows of up to 16 new tokens. Three ways, alternating in one
process, each on the same rows:

- ``padded``: TRL's own call, every row's prompt prefilled once per row, one decoding loop;
- ``loop per prompt``: each prompt prefilled once, then one ``generate`` call per prompt (gapo-lite before this
  benchmark: P decoding loops of G rows);
- ``shared prefix``: :func:`gapo_lite.sampling.generate_shared_prefix` as it is, the prompts prefilled once
  each and one decoding loop over all P * G rows.

A ``generate`` call decodes until every one of its rows has ended, so where the samples stop matters: one loop per
prompt stops each prompt's rows on their own, one loop for all runs as long as the longest row of the step. Both
are timed: rows that stop at the end-of-turn token as sampled (the work varies with the draws, so the medians
carry noise), and ``--full-length`` rows held to all 16 tokens (``min_new_tokens``; the same work every round).
Prints each way's median seconds per step and its ratio to ``padded``. Run it on an otherwise idle machine.
"""
from __future__ import annotations

import argparse
import statistics
import time


def loop_per_prompt(model, input_ids, attention_mask, **kwargs):
    """The baseline: each prompt's cache made once and its rows decoded by their own ``generate`` call."""
    import torch

    from gapo_lite.sampling import prompt_groups

    outputs = {}
    for rows in prompt_groups(input_ids, attention_mask, input_ids.shape[1]):
        ids, mask = input_ids[rows[:1]], attention_mask[rows[:1]]
        positions = (mask.long().cumsum(-1) - 1).clamp(min=0)
        cache = model(input_ids=ids[:, :-1], attention_mask=mask[:, :-1], position_ids=positions[:, :-1], use_cache=True, logits_to_keep=1).past_key_values
        cache.batch_repeat_interleave(len(rows))
        out = model.generate(input_ids=ids.repeat(len(rows), 1), attention_mask=mask.repeat(len(rows), 1), past_key_values=cache, **kwargs)
        outputs.update(zip(rows.tolist(), out))
    width = max(o.shape[0] for o in outputs.values())  # prompts that stopped early, padded on the right
    return torch.stack([torch.nn.functional.pad(outputs[i], (0, width - outputs[i].shape[0]), value=kwargs["pad_token_id"]) for i in range(len(outputs))])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--group", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--full-length", action="store_true", help="every row decodes all --new-tokens tokens")
    args = parser.parse_args()

    import torch

    from gapo_lite.data.list_prompts import build_list_dataset
    from gapo_lite.gguf import smollm2_path
    from gapo_lite.models import check_model_path, load_model
    from gapo_lite.sampling import generate_shared_prefix, render_prompt

    torch.set_num_threads(args.threads)
    model, tok = load_model(check_model_path(smollm2_path()), lora=None, load_in_4bit=False)
    model.eval()
    tok.padding_side = "left"
    kwargs = dict(max_new_tokens=args.new_tokens, do_sample=True, temperature=0.7, top_k=0, pad_token_id=tok.pad_token_id)
    if args.full_length:
        kwargs["min_new_tokens"] = args.new_tokens
    ways = {
        "padded": lambda ids, mask: model.generate(input_ids=ids, attention_mask=mask, **kwargs),
        "loop per prompt": lambda ids, mask: loop_per_prompt(model, ids, mask, **kwargs),
        "shared prefix": lambda ids, mask: generate_shared_prefix(model, ids, mask, **kwargs),
    }
    length = f"all {args.new_tokens} new tokens a row" if args.full_length else f"up to {args.new_tokens} new tokens a row, stopping as sampled"
    print(f"SmolLM2-135M, {args.threads} threads, G = {args.group}, {length}; median of {args.rounds} rounds")
    print(f"{'prompts':>7}  " + "  ".join(f"{name:>16}" for name in ways) + "  shared / padded  shared / loop")
    for p in args.prompts:
        rows = [render_prompt(tok, r["prompt"]) for r in build_list_dataset(p, seed=p) for _ in range(args.group)]
        batch = tok(rows, return_tensors="pt", padding=True, add_special_tokens=False)
        times: dict[str, list[float]] = {name: [] for name in ways}
        with torch.no_grad():
            for _ in range(args.rounds + 1):  # the first round warms up and is dropped
                for name, way in ways.items():
                    start = time.perf_counter()
                    way(batch["input_ids"], batch["attention_mask"])
                    times[name].append(time.perf_counter() - start)
        median = {name: statistics.median(t[1:]) for name, t in times.items()}
        print(f"{p:>7}  " + "  ".join(f"{median[name]:>15.2f}s" for name in ways)
              + f"  {median['shared prefix'] / median['padded']:>15.2f}  {median['shared prefix'] / median['loop per prompt']:>13.2f}")


if __name__ == "__main__":
    main()
