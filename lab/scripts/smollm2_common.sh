# Sourced by lab/scripts/smollm2_longer.sh and lab/scripts/smollm2_precision.sh.
# recorded_value SETTINGS_JSON KEY: one recorded setting's value.
recorded_value() {
  python -c "import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"
}

# recorded_sets SETTINGS_JSON KEY ...: "--set key=value" for each KEY an experiment recorded (null ones left out),
# so that a follow-up run keeps what the first one trained and measured with.
recorded_sets() {
  python - "$@" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(" ".join(f"--set {k}={s[k]}" for k in sys.argv[2:] if s.get(k) is not None))
PY
}

# recorded_sets_but SETTINGS_JSON KEY ...: "--set key=value" for every setting an experiment recorded but the KEYs
# (null ones left out), so that a continued run keeps all it was trained and measured with, settings added later too.
recorded_sets_but() {
  python - "$@" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(" ".join(f"--set {k}={v}" for k, v in s.items() if k not in sys.argv[2:] and v is not None))
PY
}
