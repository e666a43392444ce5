#!/usr/bin/env bash
# GPU check: the GPU path on random-initialised Qwen2.5-7B (and 32B when there is room), stage by stage, each
# stage's figures printed the moment they are measured (a timeout keeps what was printed). One NVIDIA GPU,
# no internet needed. The default run ends within 7 minutes (stages past --time-budget-s are skipped, each
# stage is stopped at --stage-timeout-s, and this wrapper stops everything at GPU_CHECK_TIMEOUT_S, 420 s).
#   scripts/gpu_check.sh                 # 7B: unsloth plan check, train() of qwen7b_lists; Llama-3.1-8B (1 step); 7B transformers; 32B if room and time
#   scripts/gpu_check.sh --quick         # 7B, unsloth, 1 step, no train() stage
#   scripts/gpu_check.sh --skip-32b      # 7B and Llama-3.1-8B only
#   scripts/gpu_check.sh --dry-run       # CPU: tiny model through the same stages
# Options are those of scripts/gpu_check.py (--help). PYTHON picks the interpreter (default python).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${VIRTUAL_ENV:-}" && -f .venv/bin/activate ]]; then
  # shellcheck disable=SC1091
  . .venv/bin/activate
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
export PYTORCH_CUDA_ALLOC_CONF="${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}"
if [[ " $* " != *" --dry-run "* ]] && ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "gpu_check.sh: nvidia-smi not found; this check needs an NVIDIA GPU (or pass --dry-run)" >&2
  exit 2
fi
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader || true
exec timeout --kill-after=10 "${GPU_CHECK_TIMEOUT_S:-420}" "${PYTHON:-python}" -u scripts/gpu_check.py "$@"
