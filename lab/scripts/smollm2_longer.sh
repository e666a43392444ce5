#!/bin/bash
# Continue a SmolLM2 spreading run's GAPO (or, with RUN=grpo_baseline, its baseline) in stages: each stage a new
# experiment folder that starts from the previous one's start and last checkpoint of that run, trains to the
# stage's step count and measures (lists and open suites). Rerunning skips finished stages; an interrupted one
# resumes from its checkpoint.
#
#   bash lab/scripts/smollm2_longer.sh SEED [STEPS ...]                        # default stages: 500 750 1000
#   FROM=runs/smollm2_more_s1_750 SCHEDULE=linear bash lab/scripts/smollm2_longer.sh 1 1000
#   THREADS=2 ...                                                            # torch threads (default 1: two seeds side by side)
#   FROM=runs/smollm2_t07_s0 PREFIX=runs/smollm2_t07_more_s0 bash lab/scripts/smollm2_longer.sh 0 450
#   RUN=grpo_baseline FROM=runs/smollm2_p2_s0 PREFIX=runs/smollm2_p2_base_s0 bash lab/scripts/smollm2_longer.sh 0 600
#   SETS="--set beta=0.04" FROM=runs/smollm2_p2_s0 PREFIX=runs/smollm2_p2_kl_s0 bash lab/scripts/smollm2_longer.sh 0 450
#
# The first folder is $FROM (default runs/smollm2_spread_s$SEED, 250 steps, docs/smollm2.md), whose recorded
# settings every stage keeps (but rl_steps and the schedule; SETS adds --set overrides of its own to each stage);
# stage N is $PREFIX_N (default runs/smollm2_more_s${SEED}_N), or $PREFIX_N_$SCHEDULE with a learning-rate schedule
# (TrainConfig.lr_scheduler_type, e.g. linear: the resumed run decays from where that schedule stands at its step).
set -euo pipefail
source "$(dirname "$0")/smollm2_common.sh"
seed=${1:?usage: bash lab/scripts/smollm2_longer.sh SEED [STEPS ...]}
shift
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(500 750 1000)
prev=${FROM:-runs/smollm2_spread_s$seed}
schedule=${SCHEDULE:-}
run=${RUN:-gapo}
if [ ! -f "$prev/stages/$run.json" ]; then
  echo "smollm2_longer: $prev holds no finished $run run to continue; run the spreading experiment first (docs/smollm2.md)" >&2
  exit 2
fi
prev_steps=$(recorded_value "$prev/stages/settings.json" rl_steps)
# Every setting the first run recorded (how its start was warmed, what was trained and measured, its RL seed, its
# adapter's shape: the resumed checkpoint holds that adapter), but those each stage sets itself: the seed, the
# threads, the steps, the runs and the schedule.
sets=$(recorded_sets_but "$prev/stages/settings.json" seed threads rl_steps runs rl_schedule)
prefix=${PREFIX:-runs/smollm2_more_s$seed}
for steps in "${stages[@]}"; do
  out=${prefix}_$steps${schedule:+_$schedule}
  if [ ! -f "$out/stages/$run.json" ]; then
    mkdir -p "$out/stages" "$out/$run"
    [ -d "$out/pretrained" ] || cp -al "$prev/pretrained" "$out/pretrained"  # hard links: the start is only read
    cp "$prev/stages/start.json" "$out/stages/start.json"
    cp "$prev/stages/settings.json" "$out/stages/continued_from.json"  # what the resumed checkpoint was trained with
    if [ ! -f "$out/$run/latest_checkpoint.txt" ]; then
      cp -r "$prev/$run/checkpoint-$prev_steps" "$out/$run/"
      cp "$prev/$run/metrics.jsonl" "$out/$run/metrics.jsonl"  # the training curves go on from the previous stage's
      echo "checkpoint-$prev_steps" > "$out/$run/latest_checkpoint.txt"
    fi
    # shellcheck disable=SC2086
    python -m lab.smollm2 --out "$out" --set seed="$seed" --set threads="${THREADS:-1}" $sets --set rl_steps="$steps" \
      --set runs=$run ${schedule:+--set rl_schedule=$schedule} ${SETS:-}
  fi
  prev=$out
  prev_steps=$steps
done
