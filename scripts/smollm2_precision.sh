#!/bin/bash
# The same short GAPO run in fp32 and under bf16 autocast, from one finished experiment's start, to check that
# bf16 (asked for with precision=bf16 where the CPU has native bf16; the kit's default is fp32) moves the held-out
# figures only within the run's noise: the same pair with the next seed (other RL samples and prompts, same start)
# shows how large that noise is.
#
#   bash scripts/smollm2_precision.sh runs/smollm2_t07_s0 [STEPS]            # default 40 steps; lists suite only
#   PREFIX=runs/smollm2_cos_precision bash scripts/smollm2_precision.sh runs/smollm2_cos_s0 40
#
# Each run gets its own folder, $PREFIX_{fp32,bf16}_sN (default runs/smollm2_precision_...), holding the start
# (hard links) and a GAPO run with the first experiment's RL settings; rerunning skips finished stages.
set -euo pipefail
source "$(dirname "$0")/smollm2_common.sh"
from=${1:?usage: bash scripts/smollm2_precision.sh EXPERIMENT_FOLDER [STEPS]}
steps=${2:-40}
if [ ! -f "$from/stages/start.json" ]; then
  echo "smollm2_precision: $from holds no measured start; run the experiment first (docs/smollm2.md)" >&2
  exit 2
fi
seed=$(recorded_value "$from/stages/settings.json" seed)
sets=$(recorded_sets "$from/stages/settings.json" warmup_steps invalid_reward num_generations prompts_per_step learning_rate rl_temperature)
prefix=${PREFIX:-runs/smollm2_precision}
for run in "fp32 $seed" "bf16 $seed" "bf16 $((seed + 1))" "fp32 $((seed + 1))"; do
  read -r precision s <<< "$run"
  out=${prefix}_${precision}_s$s
  mkdir -p "$out/stages"
  [ -d "$out/pretrained" ] || cp -al "$from/pretrained" "$out/pretrained"  # hard links: the start is only read
  [ -f "$out/stages/start.json" ] || cp "$from/stages/start.json" "$out/stages/start.json"
  # shellcheck disable=SC2086
  python -m gapo_lite.lab.smollm2 --out "$out" --set seed="$s" $sets --set threads="${THREADS:-2}" --set rl_steps="$steps" --set runs=gapo --set precision=$precision
done
