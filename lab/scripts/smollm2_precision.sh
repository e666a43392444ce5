#!/bin/bash
# The same short GAPO run in fp32 and under bf16 autocast, from one finished experiment's start and measured on its
# held-out lists, once per RL seed (rl_seed: the runs' samples, prompt order and LoRA init; the start, the lists and
# the measurement's samples stay the experiment's). The spread of one precision's runs over the RL seeds is the
# run's own noise; the bf16 - fp32 difference of each RL seed's pair is set against it
# (python -m lab.smollm2_report --precision FOLDER ...).
#
#   bash lab/scripts/smollm2_precision.sh runs/smollm2_p2_s1 [STEPS [RL_SEED ...]]   # default 40 steps, RL seeds 0 1 2
#   PREFIX=runs/smollm2_s1_precision bash lab/scripts/smollm2_precision.sh runs/smollm2_p2_s1 40 0 1 2   # docs/smollm2.md
#   SETS="--set prompts_per_step=1" bash lab/scripts/smollm2_precision.sh runs/smollm2_p2_s1                 # a cheaper step
#
# Each run gets its own folder, $PREFIX_{fp32,bf16}_rN (default runs/smollm2_precision_...), holding the start
# (hard links) and a GAPO run with the experiment's RL settings (SETS adds --set overrides); lists suite only;
# rerunning skips finished runs. THREADS: torch threads (default 2).
set -euo pipefail
source "$(dirname "$0")/smollm2_common.sh"
from=${1:?usage: bash lab/scripts/smollm2_precision.sh EXPERIMENT_FOLDER [STEPS [RL_SEED ...]]}
steps=${2:-40}
shift $(( $# < 2 ? $# : 2 ))
rl_seeds=("$@")
[ ${#rl_seeds[@]} -gt 0 ] || rl_seeds=(0 1 2)
if [ ! -f "$from/stages/start.json" ]; then
  echo "smollm2_precision: $from holds no measured start; run the experiment first (docs/smollm2.md)" >&2
  exit 2
fi
seed=$(recorded_value "$from/stages/settings.json" seed)
sets=$(recorded_sets "$from/stages/settings.json" warmup_steps invalid_reward num_generations prompts_per_step learning_rate rl_temperature)
prefix=${PREFIX:-runs/smollm2_precision}
for r in "${rl_seeds[@]}"; do
  for precision in fp32 bf16; do
    out=${prefix}_${precision}_r$r
    mkdir -p "$out/stages"
    [ -d "$out/pretrained" ] || cp -al "$from/pretrained" "$out/pretrained"  # hard links: the start is only read
    [ -f "$out/stages/start.json" ] || cp "$from/stages/start.json" "$out/stages/start.json"  # same seed, same lists: the start's measurement holds
    # shellcheck disable=SC2086
    python -m lab.smollm2 --out "$out" --set seed="$seed" --set rl_seed="$r" $sets --set threads="${THREADS:-2}" --set rl_steps="$steps" \
      --set runs=gapo --set precision=$precision ${SETS:-}
  done
done
