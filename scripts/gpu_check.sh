#!/usr/bin/env bash
# GPU check (scripts/gpu_check.py: the stages and their order): every figure printed the moment it is measured.
# One NVIDIA GPU, no internet needed. Stages are cut to --time-budget-s (default 450 s) and this wrapper stops
# everything at GPU_CHECK_TIMEOUT_S (default 480 s).
#   scripts/gpu_check.sh                 # (a) versions, errors (b) 7B transformers (c) 7B Unsloth (d) GAPO learning (e) train() + resume (f) the rest
#   scripts/gpu_check.sh --quick         # (a)-(e), 1 step per 7B stage
#   scripts/gpu_check.sh --dry-run       # CPU: tiny models through the same stages; those needing CUDA say skipped
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
exec timeout --kill-after=10 "${GPU_CHECK_TIMEOUT_S:-480}" "${PYTHON:-python}" -u scripts/gpu_check.py "$@"
