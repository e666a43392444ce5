#!/usr/bin/env bash
# The GPU check on an offline machine, in one command: install the wheelhouse into a folder, put it on
# PYTHONPATH, print the versions in use, run scripts/gpu_check.sh, all within 9 minutes (a 10-minute call less one).
#   scripts/offline_gpu_check.sh WHEELHOUSE RESULTS_DIR [gpu_check.py options]
#   scripts/offline_gpu_check.sh wheelhouse "$OUT"             # the documented device call (docs/gpu.md)
# RESULTS_DIR gets gpu_check.json (rewritten after every stage), gpu_check_partial.json (the stage in flight's
# figures so far) and gpu_check.log (everything printed): a run cut short keeps what it measured.
# Then, anywhere: python scripts/gpu_table.py RESULTS_DIR/gpu_check.json --write
# Environment: PYTHON (default python, else python3), OFFLINE_SITE (where the wheels go, default
# ${TMPDIR:-/tmp}/gapo_offline_site), OFFLINE_TOTAL_S (the whole command's limit, default 540 = 9 minutes).
# Beforehand, on a CPU: the wheelhouse (scripts/offline_wheels.sh, needs network) and the learning stage's start
# (python scripts/gpu_check_learn.py build runs/gpu_check_start), both carried (docs/gpu.md).
set -euo pipefail
if [[ $# -lt 2 ]]; then
  echo "usage: scripts/offline_gpu_check.sh WHEELHOUSE RESULTS_DIR [gpu_check.py options]" >&2
  exit 2
fi
start=$SECONDS
invoked="scripts/offline_gpu_check.sh $*"  # recorded in gpu_check.json: the command that measured each figure
total="${OFFLINE_TOTAL_S:-540}"
wheelhouse="$(cd "$1" 2>/dev/null && pwd)" || { echo "offline_gpu_check: no wheelhouse folder at $1" >&2; exit 2; }
mkdir -p "$2"
results="$(cd "$2" && pwd)"
shift 2
cd "$(dirname "$0")/.."
PY="${PYTHON:-$(command -v python || command -v python3 || true)}"
[[ -n "$PY" ]] || { echo "offline_gpu_check: no python on PATH (set PYTHON)" >&2; exit 2; }
export PYTHON="$PY"
site="${OFFLINE_SITE:-${TMPDIR:-/tmp}/gapo_offline_site}"
exec > >(tee "$results/gpu_check.log") 2>&1

shopt -s nullglob
wheels=("$wheelhouse"/*.whl)
[[ ${#wheels[@]} -gt 0 ]] || { echo "offline_gpu_check: no .whl files in $wheelhouse" >&2; exit 2; }
echo "offline_gpu_check: $(date -u '+%Y-%m-%d %H:%M UTC'); installing ${#wheels[@]} wheels ($(du -sh "$wheelhouse" | cut -f1)) into $site"
rm -rf "$site"
if "$PY" -m pip --version >/dev/null 2>&1; then
  "$PY" -m pip install --quiet --no-index --no-deps --no-warn-script-location --disable-pip-version-check --target "$site" "${wheels[@]}"
else  # no pip in the image: a wheel is a zip of what goes into site-packages (its .data/purelib|platlib too)
  echo "offline_gpu_check: no pip for $PY; unpacking the wheels instead"
  "$PY" - "$site" "${wheels[@]}" <<'PYEOF'
import sys, zipfile, pathlib, re
site = pathlib.Path(sys.argv[1])
for wheel in sys.argv[2:]:
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            name = re.sub(r"^[^/]+\.data/(purelib|platlib)/", "", info.filename)
            if info.is_dir() or re.match(r"^[^/]+\.data/", name):
                continue
            dest = site / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(zf.read(info))
PYEOF
fi
export PYTHONPATH="$site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
echo "offline_gpu_check: installed in $((SECONDS - start)) s; versions in use ($PY, Python $("$PY" -c 'import sys; print(sys.version.split()[0])')):"
"$PY" scripts/gpu_versions.py | sed 's/^/  /' || true  # gpu_check.py itself stops on a version out of range
left=$((total - (SECONDS - start)))
INSTALL_ALLOWANCE_S=60  # what installing and the versions may take (tests/test_gpu_check.py: with gpu_check.py's
# default budget it fits OFFLINE_TOTAL_S); whatever they take, the check gets what is left, less 30 s for the stage
# in flight to be stopped and the last JSON written.
[[ $((SECONDS - start)) -le $INSTALL_ALLOWANCE_S ]] || echo "offline_gpu_check: WARNING installing took over ${INSTALL_ALLOWANCE_S} s; the check gets less"
budget=$((left - 30))
if [[ $budget -lt 60 ]]; then
  echo "offline_gpu_check: only ${left} s left of ${total} s after installing; not starting the check" >&2
  exit 3
fi
echo "offline_gpu_check: running scripts/gpu_check.sh within ${left} s (time budget ${budget} s); results in $results"
set +e
GPU_CHECK_COMMAND="$invoked" GPU_CHECK_TIMEOUT_S="$((left - 10))" \
  scripts/gpu_check.sh --time-budget-s "$budget" --json-out "$results/gpu_check.json" "$@"
rc=$?
set -e
echo "offline_gpu_check: gpu_check.sh exited $rc after $((SECONDS - start)) s in all; figures in $results/gpu_check.json"
[[ $rc -ne 124 && $rc -ne 137 ]] || echo "offline_gpu_check: stopped at the time limit; gpu_check.json keeps every stage that finished, gpu_check_partial.json the one in flight"
exit $rc
