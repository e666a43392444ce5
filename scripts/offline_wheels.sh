#!/usr/bin/env bash
# Build the offline GPU machine's wheelhouse (what its image lacks for the GPU check), at most 40 MiB.
#   scripts/offline_wheels.sh                 # wheelhouse/ (ignored by git): Python 3.12, manylinux x86_64, CUDA 13.0
#   scripts/offline_wheels.sh DIR --python-version 3.11 --provided my_image.txt
# Options are those of scripts/offline_wheels.py (--help). Needs pip and the package registry; nothing is installed here.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
exec "$PY" scripts/offline_wheels.py "$@"
