# ---
# jupyter:
#   accelerator: GPU
#   colab:
#     gpuType: T4
#     provenance: []
#   jupytext:
#     formats: ipynb,py:percent
#     notebook_metadata_filter: accelerator,colab
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # GAPO on Qwen2.5-7B-Instruct, on one Colab GPU
#
# <a href="https://colab.research.google.com/github/YOUR-GITHUB-USER/gapo-lite/blob/main/notebooks/gapo_qwen7b_colab.ipynb"><img src="https://colab.research.google.com/assets/colab-badge.svg" alt="Open In Colab"/></a>
# (`YOUR-GITHUB-USER` is a placeholder: point it at wherever gapo-lite lives)
#
# **GAPO** (Group-Aware Policy Optimization, Anschel et al., EMNLP 2025) is GRPO whose reward looks at the
# whole group of completions sampled for a prompt: a valid answer `o` scores `1 - (f(o) - 1/L)`, where `f(o)` is
# its share among the group's valid answers and `L` the number of valid answers; an invalid answer scores -1.
# Answers the group already repeats score below 1, rare ones above 1, so the model learns to spread its choices.
#
# This notebook trains Qwen2.5-7B-Instruct in 4-bit (QLoRA, through Unsloth) to pick uniformly from lists, with
# the paper's settings (LoRA r=64, alpha=32, dropout 0.1, G=32 completions per prompt, lr 1e-5, no KL):
# install, load, plan, data, train, evaluate, save.
#
# **Runtime → Change runtime type → GPU** (a T4 works; an L4 or A100 is faster). The times given are estimates.

# %% [markdown]
# ### 1. Install
# Set `REPO_URL` to where gapo-lite lives. The cell clones it and runs `scripts/gpu_install.py`: it reads Colab's
# torch (without importing it) and stops with a message, before any pip call, if the pinned Unsloth does not
# accept it; otherwise it installs the kit with its `[gpu]` extra in one resolve (`pip install -c constraints.txt
# -c held-constraints.txt "gapo-lite[gpu]"`), Colab's torch, numpy and pillow held. `WITH_VLLM = True` adds vLLM
# (for `FAST_INFERENCE` below) in a separate step, only where a vLLM release is built for Colab's torch.
# *Estimate: 3-6 minutes.* If pip asks for a restart, restart the session and go on from the next cell.

# %% tags=["colab-only"]
REPO_URL = "https://github.com/YOUR-GITHUB-USER/gapo-lite"  # <-- PLACEHOLDER: your fork / the project's real URL
REPO_DIR = "gapo-lite"
WITH_VLLM = False  # True: also install vLLM (generation through it: FAST_INFERENCE = True below)

import pathlib, runpy, subprocess

if not pathlib.Path(REPO_DIR, "pyproject.toml").is_file():
    if "YOUR-GITHUB-USER" in REPO_URL or not REPO_URL.strip():
        raise SystemExit("Set REPO_URL (first line of this cell) to the git URL of gapo-lite (your fork, or the "
                         "project's own repository), then run this cell again. Nothing was installed.")
    subprocess.run(["git", "clone", "--depth", "1", REPO_URL, REPO_DIR], check=True)

installer = runpy.run_path(f"{REPO_DIR}/scripts/gpu_install.py", run_name="gpu_install")
if installer["main"](["--held", "held-constraints.txt", *(["--vllm"] if WITH_VLLM else [])]) != 0:
    raise SystemExit("Stopped before pip: see the message above. Nothing was installed.")

# %% [markdown]
# ### 2. Settings and the GPU
# The paper's settings. `PROMPTS_PER_STEP = 8` prompts x `G = 32` completions = 256 completions per optimizer step.
# That does not fit a 15 GB T4: with `AUTO_FIT` the plan below halves `PROMPTS_PER_STEP` until it fits (on a T4:
# 2 prompts x 32), keeping the group size `G` that GAPO's reward depends on.

# %% tags=["parameters"]
MODEL = "Qwen/Qwen2.5-7B-Instruct"  # with Unsloth and 4-bit, its pre-quantized copy is downloaded (~5.5 GB)
BACKEND = "unsloth"  # "transformers": transformers + peft + bitsandbytes (slower, more memory)
LOAD_IN_4BIT = True
MAX_SEQ_LENGTH = 512
LORA_R, LORA_ALPHA, LORA_DROPOUT = 64, 32, 0.1  # the paper's LoRA
G = 32  # completions per prompt: the group GAPO's reward is computed over
PROMPTS_PER_STEP = 8  # the paper's batch
AUTO_FIT = True  # halve PROMPTS_PER_STEP until the memory plan fits the GPU
MAX_STEPS = 100
LEARNING_RATE = 1e-5
TEMPERATURE = 1.0  # sampling temperature during training
MAX_COMPLETION_LENGTH = 32
SAVE_STEPS = 25
MEMORY_BUDGET_GB = None  # None: the GPU's free memory now, before the model is loaded
FAST_INFERENCE = False  # True: generate with vLLM (install cell: WITH_VLLM = True), Unsloth backend only
GPU_MEMORY_UTILIZATION = 0.5  # vLLM's share of the GPU with FAST_INFERENCE
OUTPUT_DIR = "runs/qwen7b_colab"
# evaluation (the paper: 10 unseen 8-item lists x 100 samples at T=0.7; open-ended: 500 samples per prompt)
EVAL_LISTS = 10
EVAL_N = 100  # samples per list
EVAL_OPEN_N = 100  # samples per open-ended prompt (500 for the paper's Unique@500; 5x the time)
EVAL_TEMPERATURE = 0.7
EVAL_BATCH_SIZE = 64
# saving
SAVE_MERGED = False  # merged 16-bit model (~15 GB)
SAVE_GGUF = False  # GGUF for llama.cpp / Ollama
GGUF_QUANTIZATION = "q4_k_m"

# %% [markdown]
# `import gapo_lite` comes first, so Unsloth is imported before trl / transformers / peft and its patches apply.
# The GPU's free memory is read now, before the model is loaded: it is the memory plan's budget. A T4 has no
# native bf16 (it emulates it, so `torch.cuda.is_bf16_supported()` alone says True): Unsloth trains it in fp16.

# %%
import gapo_lite  # first: imports Unsloth (on a GPU) before trl / transformers / peft
import torch

GIB = 2**30
CUDA = torch.cuda.is_available()
FREE_GB = None  # the GPU's free memory before anything is loaded: the memory plan's budget
if CUDA:
    free, total = torch.cuda.mem_get_info()
    FREE_GB = free / GIB
    NATIVE_BF16 = torch.cuda.is_bf16_supported(including_emulation=False)  # False on a T4 (capability 7.5)
    print(f"GPU: {torch.cuda.get_device_name(0)}: {total / GIB:.1f} GiB, {FREE_GB:.1f} GiB free, "
          f"native bf16: {NATIVE_BF16}{'' if NATIVE_BF16 else ' (trains in fp16)'}")
else:
    print("No CUDA GPU: Runtime > Change runtime type > GPU. (On a CPU only a tiny stand-in model is practical.)")
print(f"torch {torch.__version__}, gapo-lite {gapo_lite.__version__}")

# %% [markdown]
# ### 3. Load the model in 4-bit with a LoRA adapter
# `gapo_lite.models.load_model` goes through Unsloth's `FastLanguageModel` on a GPU (4-bit weights, LoRA on the
# seven projections, Unsloth's gradient checkpointing). The adapter starts at zero, so until training the model
# answers exactly like Qwen2.5-7B-Instruct. *Estimate: 2-4 minutes (download and load).*

# %%
from gapo_lite.models import LoraSettings, load_model

model, tokenizer = load_model(
    MODEL, backend=BACKEND, load_in_4bit=LOAD_IN_4BIT, max_seq_length=MAX_SEQ_LENGTH,
    lora=LoraSettings(r=LORA_R, alpha=LORA_ALPHA, dropout=LORA_DROPOUT),
    fast_inference=FAST_INFERENCE, gpu_memory_utilization=GPU_MEMORY_UTILIZATION,
)
model.print_trainable_parameters()

# %% [markdown]
# ### 4. Memory plan
# The planner estimates the peak GPU memory of a step (weights, LoRA and optimizer, KV cache and generation,
# activations, log-probs) at the budget read above and picks how many completions go through each
# forward/backward pass; the prompts' length is measured with the tokenizer on a sample of training prompts.
# The same from the command line: `gapo-lite plan --model Qwen/Qwen2.5-7B-Instruct --budget-gb 15`.

# %%
import dataclasses
from gapo_lite import build_list_dataset
from gapo_lite.memory import MemoryPlanError
from gapo_lite.training import TrainConfig
from gapo_lite.runplan import run_plan_for
from gapo_lite.training.planning import measure_prompt_tokens, plan_for_config

if MEMORY_BUDGET_GB is not None:
    budget_gb = MEMORY_BUDGET_GB
elif FREE_GB is not None:
    budget_gb = FREE_GB  # measured before the model was loaded (the plan counts the weights itself)
else:
    budget_gb = 14.5  # no GPU here: plan as for a Colab T4 (about 14.5 GiB free)
config = TrainConfig(
    model=MODEL, backend=BACKEND, load_in_4bit=LOAD_IN_4BIT, max_seq_length=MAX_SEQ_LENGTH,
    lora_r=LORA_R, lora_alpha=LORA_ALPHA, lora_dropout=LORA_DROPOUT,
    num_generations=G, prompts_per_step=PROMPTS_PER_STEP, learning_rate=LEARNING_RATE, temperature=TEMPERATURE,
    max_completion_length=MAX_COMPLETION_LENGTH, max_steps=MAX_STEPS, save_steps=SAVE_STEPS,
    output_dir=OUTPUT_DIR, memory_budget_gb=budget_gb,
    fast_inference=FAST_INFERENCE, gpu_memory_utilization=GPU_MEMORY_UTILIZATION,
)
run_plan = run_plan_for(config)
print(run_plan.describe())
PROMPT_TOKENS = measure_prompt_tokens(tokenizer, build_list_dataset(256, split="train", seed=0))
print(f"longest of 256 sampled training prompts: {PROMPT_TOKENS} tokens")
while True:
    try:
        plan = plan_for_config(config, prompt_tokens=PROMPT_TOKENS)
        break
    except MemoryPlanError as err:
        if not AUTO_FIT or config.prompts_per_step == 1:
            raise
        print(f"{config.prompts_per_step} prompts x G={G} does not fit in {budget_gb:.1f} GiB; trying {config.prompts_per_step // 2}")
        config = dataclasses.replace(config, prompts_per_step=config.prompts_per_step // 2)
print(plan.format_table())
print(f"\n=> {config.prompts_per_step} prompts x {G} completions per step, {plan.chunk_size} completions per forward/backward pass")

# %% [markdown]
# ### 5. Data and reward
# Training prompts ask to pick one item at random from a list of 4-12 items of a *training* category; the
# evaluation uses *held-out* categories the model never trains on. Below, the rewards of one group: "Mars" is
# over-represented (3 of the 5 valid answers) and scores below 1, the rare valid answers above 1, the answer
# that is not on the list -1.

# %%
from gapo_lite import build_list_dataset, frequency_aware_rewards
from gapo_lite.data import categories

train_dataset = build_list_dataset(config.max_steps * config.prompts_per_step, split="train",
                                   min_items=config.min_items, max_items=config.max_items, seed=config.data_seed)
print(train_dataset)
for row in train_dataset.select(range(3)):
    print(f"- [{row['category']}] {row['prompt'][-1]['content']}")
print("\nheld-out categories (evaluation only):", ", ".join(sorted(categories("heldout"))))

items = ["Mars", "Venus", "Saturn", "Jupiter"]  # the list shown: L = 4 valid answers
answers = ["Mars", "Mars", "Mars", "Venus", "Saturn", "Pluto"]  # one group of G = 6 completions
print(f"\nGAPO rewards of one group for the list {items}:")
for answer, reward in zip(answers, frequency_aware_rewards(answers, items)):
    print(f"{answer:>8}: {reward:+.3f}")

# %% [markdown]
# ### 6. Evaluate the base model: will GAPO spread it?
# Lists: 10 held-out 8-item lists, each shown in 4 orders, `EVAL_N` samples per list at T=0.7: JSD to the
# uniform distribution (0 = uniform), valid rate and position bias. Open-ended: "Name a city." and nine more,
# `EVAL_OPEN_N` samples each: Unique@N. The last line is the mode-pressure diagnostic: GAPO spreads a model only
# when it is valid often enough; below the threshold, raise validity first (a clearer prompt, a warm-up).
# *Estimate: 3-6 min on a T4, 1-3 min on an L4 or A100.*

# %%
import contextlib
from gapo_lite.eval.list_suite import run_lists
from gapo_lite.eval.open_suite import run_open
from gapo_lite.eval.runner import DEFAULT_MAX_NEW_TOKENS
from gapo_lite.eval.settings import SampleSettings


@contextlib.contextmanager
def inference_mode(model):
    """Unsloth's generation mode while sampling (back to training mode after); nothing to do for transformers."""
    if BACKEND != "unsloth" or not CUDA:
        yield
        return
    from unsloth import FastLanguageModel
    FastLanguageModel.for_inference(model)
    try:
        yield
    finally:
        FastLanguageModel.for_training(model)


def measure(model, tokenizer):
    """Lists and open-ended suites on the model as it is now (same seeds before and after)."""
    settings = {suite: SampleSettings(n=n, temperature=EVAL_TEMPERATURE, max_new_tokens=DEFAULT_MAX_NEW_TOKENS[suite],
                                      batch_size=EVAL_BATCH_SIZE, seed=0)
                for suite, n in (("lists", EVAL_N), ("open", EVAL_OPEN_N))}
    with inference_mode(model):
        lists = run_lists(model, tokenizer, settings["lists"], num_lists=EVAL_LISTS)
        open_ended = run_open(model, tokenizer, settings["open"])
    for r in (lists, open_ended):
        r.pop("samples", None)  # per-sample rows; only the metrics are kept here
        r.pop("completions", None)
    return {"lists": lists, "open": open_ended}


def summary(m):
    return {
        "lists: mean JSD to uniform (lower = more uniform)": m["lists"]["mean_jsd"],
        "lists: mean valid rate": m["lists"]["mean_valid_rate"],
        "lists: position bias (TV from uniform)": m["lists"]["position_tv"],
        f"open: mean Unique@{m['open']['n']}": m["open"]["mean_unique"],
    }


before = measure(model, tokenizer)
for name, value in summary(before).items():
    print(f"{name:52s}{value:8.3f}")
print("\nwill GAPO spread it?", before["lists"]["pressure"]["verdict"])

# %% [markdown]
# ### 7. Train with GAPO
# `gapo_lite.training.train` builds TRL's `GRPOTrainer` (Unsloth's patched one on a GPU) with the group-aware
# reward hook, the memory plan's chunking and out-of-memory back-off, and saves checkpoints every `SAVE_STEPS`
# (`dataclasses.replace(config, resume=True)` continues from the latest). Watch `reward` rise and the share of
# distinct answers per group grow.
# *Estimate for 100 steps: T4 (2 prompts x 32) about 1-1.5 h; L4 (8 x 32) about 1.5-2.5 h; A100 (8 x 32) about 40-60 min.*

# %%
from gapo_lite.training import train

result = train(config, model=model, tokenizer=tokenizer, train_dataset=train_dataset)
print(f"done at step {result.global_step}; adapter in {result.adapter_dir}; metrics in {result.metrics_path}")

# %%
import matplotlib.pyplot as plt
from IPython.display import Image, display
from gapo_lite.training.callbacks import read_metrics

rows = [r for r in read_metrics(result.metrics_path) if "reward" in r]
keys = ["reward", "reward_std"] + sorted({k for r in rows for k in r if k.startswith("gapo_frequency/")})
keys = [k for k in keys if any(k in r for r in rows)]
fig, axes = plt.subplots(1, len(keys), figsize=(4 * len(keys), 3), squeeze=False)
for ax, key in zip(axes[0], keys):
    points = [(r["step"], r[key]) for r in rows if key in r]
    ax.plot([p[0] for p in points], [p[1] for p in points], marker=".")
    ax.set_title(key, fontsize=9)
    ax.set_xlabel("step")
fig.tight_layout()
fig.savefig(f"{OUTPUT_DIR}/training_curves.png", dpi=100)
plt.close(fig)
display(Image(filename=f"{OUTPUT_DIR}/training_curves.png"))

# %% [markdown]
# ### 8. Evaluate the trained adapter, side by side
# The same suites, seeds and settings as before training.

# %%
import json

after = measure(model, tokenizer)
print(f"{'metric':52s}{'before':>8s}{'after':>8s}")
for (name, b), a in zip(summary(before).items(), summary(after).values()):
    print(f"{name:52s}{b:8.3f}{a:8.3f}")
with open(f"{OUTPUT_DIR}/eval_before_after.json", "w") as f:
    json.dump({"before": before, "after": after}, f, indent=1, default=float)

# %%
import numpy as np

fig, axes = plt.subplots(1, 3, figsize=(16, 3.8))
ax = axes[0]
x = np.arange(len(before["lists"]["lists"]))
for k, (label, m) in enumerate((("before", before), ("after GAPO", after))):
    jsd = [l["jsd"] for l in m["lists"]["lists"]]
    ax.bar(x + (k - 0.5) * 0.4, [v if np.isfinite(v) else 0.0 for v in jsd], 0.4, label=label)
    for xo, v in zip(x + (k - 0.5) * 0.4, jsd):
        if not np.isfinite(v):  # no valid answer on this list: nothing to measure
            ax.annotate("n/a", (xo, 0), xytext=(0, 2), textcoords="offset points", ha="center", fontsize=6)
ax.set_xticks(x)
ax.set_xticklabels([l["category"] for l in before["lists"]["lists"]], rotation=45, ha="right", fontsize=7)
ax.set_ylabel("JSD to uniform")
ax.set_title(f"held-out lists, T={EVAL_TEMPERATURE}")
ax.legend()
ax = axes[1]
width = len(before["lists"]["position_shares"])
for k, (label, m) in enumerate((("before", before), ("after GAPO", after))):
    ax.bar(np.arange(1, width + 1) + (k - 0.5) * 0.4, m["lists"]["position_shares"], 0.4, label=label)
ax.axhline(1 / width, color="black", linestyle="--", linewidth=1, label="uniform")
ax.set_xlabel("position of the chosen item in the shown list")
ax.set_ylabel("share of valid answers")
ax.set_title("position bias")
ax.legend()
ax = axes[2]
names = list(before["open"]["prompts"])
x = np.arange(len(names))
for k, (label, m) in enumerate((("before", before), ("after GAPO", after))):
    ax.bar(x + (k - 0.5) * 0.4, [m["open"]["prompts"][p]["unique"] for p in names], 0.4, label=label)
ax.set_xticks(x)
ax.set_xticklabels(names, rotation=45, ha="right", fontsize=7)
ax.set_ylabel(f"Unique@{before['open']['n']}")
ax.set_title("open-ended prompts")
ax.legend()
fig.tight_layout()
fig.savefig(f"{OUTPUT_DIR}/eval_before_after.png", dpi=100)
plt.close(fig)
display(Image(filename=f"{OUTPUT_DIR}/eval_before_after.png"))

# %% [markdown]
# ### Try it
# One held-out list, 32 samples at T=0.7: the answers should now spread over the items.

# %%
from collections import Counter
from gapo_lite import parse_choice
from gapo_lite.data import format_prompt
from gapo_lite.sampling import sample_completions

category, pool = sorted(categories("heldout").items())[0]
items = pool[:8]
prompt = [{"role": "user", "content": format_prompt(items, category)}]
print(prompt[0]["content"])
with inference_mode(model):
    texts = sample_completions(model, tokenizer, [prompt], n=32, temperature=0.7, max_new_tokens=24, progress=False)[0]
print(Counter(parse_choice(t, items) for t in texts).most_common())

# %% [markdown]
# ### 9. Save
# The LoRA adapter (a few hundred MB at r=64) is enough to use the model: load Qwen2.5-7B-Instruct and put the
# adapter on it (`gapo_lite.models.load_model` + `peft.PeftModel.from_pretrained`, or Unsloth). Training already
# wrote one to `OUTPUT_DIR/adapter`. Merged 16-bit (~15 GB, *estimate 5-10 min*) and GGUF (Unsloth builds
# llama.cpp, *estimate 10-20 min*) are behind `SAVE_MERGED` / `SAVE_GGUF` (both need the Unsloth backend).

# %%
LORA_DIR = f"{OUTPUT_DIR}/lora"
model.save_pretrained(LORA_DIR)  # what Unsloth's save_lora does: the adapter only
tokenizer.save_pretrained(LORA_DIR)
print("LoRA adapter saved to", LORA_DIR)

# %%
if SAVE_MERGED:
    if not hasattr(model, "save_pretrained_merged"):
        raise RuntimeError("SAVE_MERGED needs a model loaded with BACKEND = 'unsloth'")
    model.save_pretrained_merged(f"{OUTPUT_DIR}/merged_16bit", tokenizer, save_method="merged_16bit")

# %%
if SAVE_GGUF:
    if not hasattr(model, "save_pretrained_gguf"):
        raise RuntimeError("SAVE_GGUF needs a model loaded with BACKEND = 'unsloth'")
    model.save_pretrained_gguf(f"{OUTPUT_DIR}/gguf", tokenizer, quantization_method=GGUF_QUANTIZATION)

# %% [markdown]
# ### Next
# - The full report (creative writing, benchmarks, temperature sweep), from a fresh session so only one copy of the
#   model is in memory: `gapo-lite eval --model Qwen/Qwen2.5-7B-Instruct --adapter runs/qwen7b_colab/lora
#   --load-in-4bit --suite lists,open,creative,bench --out runs/qwen7b_eval`.
# - The same run from the command line: `gapo-lite train --recipe qwen7b_lists --set max_steps=100`.
# - No GPU? `notebooks/gapo_tiny_cpu.ipynb` reproduces the effect in miniature on a CPU.
