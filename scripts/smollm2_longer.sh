#!/bin/bash
# Continue a SmolLM2 spreading run's GAPO in stages: each stage a new experiment folder that starts from the
# previous one's start and last GAPO checkpoint, trains to the stage's step count and measures (lists and open
# suites). Rerunning skips finished stages; an interrupted one resumes from its checkpoint.
#
#   bash scripts/smollm2_longer.sh SEED [STEPS ...]                        # default stages: 500 750 1000
#   FROM=runs/smollm2_more_s1_750 SCHEDULE=linear bash scripts/smollm2_longer.sh 1 1000
#   THREADS=2 ...                                                            # torch threads (default 1: two seeds side by side)
#
# The first folder is $FROM (default runs/smollm2_spread_s$SEED, 250 steps, docs/smollm2.md); stage N is
# runs/smollm2_more_s${SEED}_N, or runs/smollm2_more_s${SEED}_N_$SCHEDULE with a learning-rate schedule
# (TrainConfig.lr_scheduler_type, e.g. linear: the resumed run decays from where that schedule stands at its step).
set -euo pipefail
seed=${1:?usage: bash scripts/smollm2_longer.sh SEED [STEPS ...]}
shift
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(500 750 1000)
prev=${FROM:-runs/smollm2_spread_s$seed}
schedule=${SCHEDULE:-}
if [ ! -f "$prev/stages/gapo.json" ]; then
  echo "smollm2_longer: $prev holds no finished GAPO run to continue; run the spreading experiment first (docs/smollm2.md)" >&2
  exit 2
fi
prev_steps=$(python -c "import json,sys; print(json.load(open(sys.argv[1]))['rl_steps'])" "$prev/stages/settings.json")
for steps in "${stages[@]}"; do
  out=runs/smollm2_more_s${seed}_$steps${schedule:+_$schedule}
  if [ ! -f "$out/stages/gapo.json" ]; then
    mkdir -p "$out/stages" "$out/gapo"
    [ -d "$out/pretrained" ] || cp -al "$prev/pretrained" "$out/pretrained"  # hard links: the start is only read
    cp "$prev/stages/start.json" "$out/stages/start.json"
    if [ ! -f "$out/gapo/latest_checkpoint.txt" ]; then
      cp -r "$prev/gapo/checkpoint-$prev_steps" "$out/gapo/"
      cp "$prev/gapo/metrics.jsonl" "$out/gapo/metrics.jsonl"  # the training curves go on from the previous stage's
      echo "checkpoint-$prev_steps" > "$out/gapo/latest_checkpoint.txt"
    fi
    python -m gapo_lite.lab.smollm2 --out "$out" --set seed="$seed" --set threads="${THREADS:-1}" --set warmup_steps=24 --set invalid_reward=0 \
      --set num_generations=16 --set prompts_per_step=1 --set learning_rate=4e-4 --set rl_steps="$steps" --set open_samples=100 \
      --set runs=gapo ${schedule:+--set rl_schedule=$schedule}
  fi
  prev=$out
  prev_steps=$steps
done
