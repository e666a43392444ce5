# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
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
# # GAPO in miniature, on a CPU
#
# GAPO (Group-Aware Policy Optimization) is GRPO whose reward looks at the whole group of completions for a
# prompt: a valid answer `o` scores `1 - (f(o) - 1/L)` (`f(o)`: its share among the group's valid answers, `L`:
# how many are valid), an invalid one -1. This notebook reproduces the paper's effect with no GPU:
#
# 1. build a tiny Qwen2 whose word-level vocabulary holds every list item;
# 2. "pretrain" it on list prompts of all categories to answer mostly the *first* item (mode collapse);
# 3. train it with GAPO on the *training* categories only, and, from the same start, with plain GRPO and a
#    per-sample validity reward (the baseline);
# 4. measure all three on *held-out* categories at T = 0.7 (the paper's) and T = 1.0.
#
# The whole run (`QUICK = False`) takes about 3 minutes on an idle 2-core CPU (`make demo`: 197 s on a Zen 3 EPYC); `QUICK = True`
# takes about half a minute and checks the plumbing only (its figures mean nothing). The same run from a shell:
# `gapo-lite demo` (or `make demo`).

# %% tags=["colab-only"]
import sys

if "google.colab" in sys.modules:  # on Colab (a CPU runtime is enough): install gapo-lite first
    REPO_URL = "https://github.com/YOUR-GITHUB-USER/gapo-lite"  # <-- PLACEHOLDER: your fork / the project's real URL
    import subprocess
    subprocess.run(["git", "clone", "--depth", "1", REPO_URL, "gapo-lite"], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "./gapo-lite"], check=True)

# %% tags=["parameters"]
QUICK = False  # True: a seconds-long smoke run (figures meaningless)
OUT_DIR = "runs/demo_notebook"

# %%
import dataclasses
from gapo_lite.demo.run import DemoSettings, run_demo

settings = DemoSettings.quick() if QUICK else DemoSettings()
print(settings)
results = run_demo(OUT_DIR, settings)

# %% [markdown]
# ### Before / GAPO / baseline
# Held-out categories never took part in RL. GAPO should bring the held-out JSD to uniform well below the
# collapsed model's while keeping answers valid; the validity-rewarded baseline should stay collapsed.

# %%
from gapo_lite.demo.run import format_table

print(format_table(results))
print()
print(results["reading"])

# %% [markdown]
# ### Which position of the list gets chosen
# Share of valid answers by the chosen item's position in the shown list (held-out lists, T = 0.7). The
# collapsed model piles onto position 1.

# %%
from pathlib import Path
from IPython.display import Image, display

display(Image(filename=str(Path(OUT_DIR) / "choices.png")))

# %% [markdown]
# ### JSD to uniform and valid rate at both temperatures

# %%
import math
import matplotlib.pyplot as plt
import numpy as np
from gapo_lite.demo.run import LABELS, MODELS

temperatures = list(results["settings"]["eval_temperatures"])


def at(name, temperature, key):
    r = results[name] if temperature == temperatures[0] else results[name][f"temperature_{temperature:g}"]
    return r[key]


COLOURS = {"before": "#888888", "gapo": "#2a7ab9", "grpo_baseline": "#d9822b"}  # as in choices.png
fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
x = np.arange(len(temperatures))
panels = (("heldout_jsd", "held-out JSD to uniform (lower = more uniform)"), ("heldout_valid_rate", "held-out valid rate"))
for ax, (key, label) in zip(axes, panels):
    for k, name in enumerate(MODELS):
        values = [at(name, t, key) for t in temperatures]
        offsets = x + (k - 1) * 0.27
        heights = [v if math.isfinite(v) else 0.0 for v in values]  # NaN: no valid answer to measure; marked n/a
        ax.bar(offsets, heights, 0.27, label=LABELS[name], color=COLOURS[name])
        for xo, h, v in zip(offsets, heights, values):
            ax.annotate(f"{v:.2f}" if math.isfinite(v) else "n/a", (xo, h), xytext=(0, 2), textcoords="offset points", ha="center", fontsize=7)
    ax.set_xticks(x)
    ax.set_xticklabels([f"T = {t:g}" for t in temperatures])
    ax.set_title(label, fontsize=10)
axes[0].axhline(0.1, color="black", linestyle=":", linewidth=1, label="target 0.1")
axes[0].legend(fontsize=8)
axes[1].set_ylim(0, 1.1)
fig.tight_layout()
fig.savefig(Path(OUT_DIR) / "jsd_by_temperature.png", dpi=100)
plt.close(fig)
display(Image(filename=str(Path(OUT_DIR) / "jsd_by_temperature.png")))
print(f"wall time {results['wall_seconds']:.0f} s; stages: " + ", ".join(f"{k} {v:.0f} s" for k, v in results["stage_seconds"].items()))
