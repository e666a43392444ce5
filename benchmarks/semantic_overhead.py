"""What SemanticScorer adds to a GRPO step: its time per group of 32 completions (real all-MiniLM-L6-v2 on
the CPU, median over several groups) next to a measured GRPO step (G=32) on the tiny CPU model.

    python benchmarks/semantic_overhead.py [--groups 7] [--steps 5] [--words 60]

Runs in about a minute on 2 CPU cores. The tiny model's step is a lower bound for a real step (a 7B
LoRA step takes seconds on a GPU), so the printed ratio is an upper bound on the relative overhead.
"""
from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time

G = 32


def fake_completions(rng: random.Random, words: list[str], n: int, length: int) -> list[str]:
    """n completions of about ``length`` words; a quarter of them repeat an earlier one with a small edit."""
    out: list[str] = []
    for i in range(n):
        if out and i % 4 == 3:
            base = rng.choice(out).split()
            base[rng.randrange(len(base))] = rng.choice(words)
            out.append(" ".join(base))
        else:
            out.append(" ".join(rng.choice(words) for _ in range(rng.randint(length // 2, length))) + ".")
    return out


def time_semantic(num_groups: int, length: int) -> tuple[float, float]:
    """(model load seconds, median seconds per group of G completions) for SemanticScorer on the CPU."""
    from gapo_lite.data import vocabulary
    from gapo_lite.rewards import Group
    from gapo_lite.rewards.semantic import SemanticScorer, load_sentence_model

    start = time.perf_counter()
    load_sentence_model("all-MiniLM-L6-v2", "cpu")
    load_s = time.perf_counter() - start
    scorer = SemanticScorer(device="cpu")
    rng = random.Random(0)
    words = [w.lower() for w in vocabulary()] + ["the", "a", "and", "because", "is", "of", "my", "pick"]
    times = []
    for k in range(num_groups + 1):  # the first group warms up
        group = Group(key=str(k), prompt="p", completions=fake_completions(rng, words, G, length))
        start = time.perf_counter()
        rewards = scorer(group)
        scorer.answers(group)  # what GroupReward's metrics call costs (memoised)
        times.append(time.perf_counter() - start)
        assert len(rewards) == G
    return load_s, statistics.median(times[1:])


def time_grpo_step(num_steps: int, max_completion_length: int) -> float:
    """Median wall seconds per GRPO step (generation + scoring + update), G=32, tiny model with LoRA."""
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from gapo_lite.data import build_list_dataset
    from gapo_lite.demo.tiny import build_tiny_model
    from gapo_lite.models import LoraSettings, load_model

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.marks: list[float] = []

        def on_train_begin(self, args, state, control, **kwargs):
            self.marks.append(time.perf_counter())

        def on_step_end(self, args, state, control, **kwargs):
            self.marks.append(time.perf_counter())

    def trivial_reward(prompts, completions, **kwargs):
        return [float(len(str(c))) for c in completions]

    with tempfile.TemporaryDirectory() as tmp:
        model, tokenizer = load_model(build_tiny_model(f"{tmp}/tiny"), lora=LoraSettings(r=8, alpha=16, dropout=0.0))
        args = GRPOConfig(
            output_dir=f"{tmp}/out",
            per_device_train_batch_size=G,
            num_generations=G,
            max_completion_length=max_completion_length,
            max_steps=num_steps + 1,
            learning_rate=1e-3,
            logging_steps=1,
            report_to="none",
            use_cpu=True,
            bf16=False,
            gradient_checkpointing=False,
            save_strategy="no",
            beta=0.0,
            temperature=1.0,
            disable_tqdm=True,
        )
        timer = StepTimer()
        trainer = GRPOTrainer(
            model=model,
            processing_class=tokenizer,
            reward_funcs=[trivial_reward],
            args=args,
            train_dataset=build_list_dataset(num_steps + 1, seed=0),
            callbacks=[timer],
        )
        trainer.train()
    steps = [b - a for a, b in zip(timer.marks, timer.marks[1:])]
    return statistics.median(steps[1:])  # the first step warms up


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=7, help="groups of 32 completions to time (median)")
    parser.add_argument("--steps", type=int, default=5, help="GRPO steps to time (median), after one warm-up step")
    parser.add_argument("--words", type=int, default=60, help="longest completion, in words")
    parser.add_argument("--max-completion-length", type=int, default=32, help="GRPO completion tokens")
    args = parser.parse_args()

    import torch

    load_s, per_group_s = time_semantic(args.groups, args.words)
    _, short_s = time_semantic(args.groups, 6)
    step_s = time_grpo_step(args.steps, args.max_completion_length)
    print(f"torch threads: {torch.get_num_threads()}")
    print(f"MiniLM load (once): {load_s:.2f} s")
    print(f"SemanticScorer, G={G}, {args.words // 2}-{args.words} words: {per_group_s * 1000:.1f} ms per group (median of {args.groups})")
    print(f"SemanticScorer, G={G}, 3-6 words: {short_s * 1000:.1f} ms per group (median of {args.groups})")
    print(f"GRPO step, tiny model, G={G}, {args.max_completion_length} completion tokens: {step_s * 1000:.1f} ms (median of {args.steps})")
    print(f"ratio semantic / step: {per_group_s / step_s:.2f} (long), {short_s / step_s:.2f} (short)")


if __name__ == "__main__":
    main()
