#!/usr/bin/env bash
# GPU check: 2 GAPO steps on random-initialised Qwen2.5-7B and 32B through the unsloth and transformers
# backends, with peak VRAM next to the memory planner's estimate. One NVIDIA GPU, no internet needed.
#   scripts/gpu_check.sh                 # everything (7B + 32B, both backends; pairs past 8 min are skipped)
#   scripts/gpu_check.sh --quick         # 7B, unsloth, 1 step
#   scripts/gpu_check.sh --skip-32b      # 7B, both backends
#   scripts/gpu_check.sh --dry-run       # CPU: tiny model through the same code path
# Options are those of scripts/gpu_check.py (--help).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${VIRTUAL_ENV:-}" && -f .venv/bin/activate ]]; then
  # shellcheck disable=SC1091
  . .venv/bin/activate
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export PYTORCH_CUDA_ALLOC_CONF="${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}"
if [[ " $* " != *" --dry-run "* ]] && ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "gpu_check.sh: nvidia-smi not found; this check needs an NVIDIA GPU (or pass --dry-run)" >&2
  exit 2
fi
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader || true
exec timeout "${GPU_CHECK_TIMEOUT_S:-570}" python scripts/gpu_check.py "$@"
