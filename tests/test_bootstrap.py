"""Unsloth is imported only when the run's backend is Unsloth, before trl/transformers/peft, with a warning otherwise.

A stand-in ``unsloth`` package (it only records that it was imported) and a faked CUDA GPU keep this on a CPU.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from gapo_lite._bootstrap import choose_backend

SCRIPT = textwrap.dedent(
    """
    import json, logging, sys, types
    import torch
    torch.cuda.is_available = lambda: True  # a GPU, as far as gapo-lite can tell
    torch.cuda.is_bf16_supported = lambda including_emulation=True: True
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stdout)
    import gapo_lite
    from gapo_lite.training import TrainConfig
    from gapo_lite.runplan import run_plan_for
    after_import = "unsloth" in sys.modules
    hw = run_plan_for(TrainConfig(backend=sys.argv[1]))
    if sys.argv[2] == "early":
        sys.modules["peft"] = types.ModuleType("peft")  # as if the user imported peft before training
    hw.import_backend()
    print("RESULT " + json.dumps({"after_import": after_import, "backend": hw.backend,
                                  "unsloth": "unsloth" in sys.modules, "fake": getattr(sys.modules.get("unsloth"), "FAKE", False)}))
    """
)


def run(tmp_path, backend: str, env_backend: str = "auto", early: bool = False) -> tuple[dict, str]:
    fake = tmp_path / "fake" / "unsloth"
    fake.mkdir(parents=True, exist_ok=True)
    (fake / "__init__.py").write_text("FAKE = True\n")
    env = {**os.environ, "GAPO_LITE_BACKEND": env_backend,
           "PYTHONPATH": os.pathsep.join([str(tmp_path / "fake"), *sys.path])}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, backend, "early" if early else "-"], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1][7:]), proc.stdout


def test_transformers_backend_on_a_gpu_never_imports_unsloth(tmp_path):
    result, _ = run(tmp_path, "transformers")
    assert result == {"after_import": False, "backend": "transformers", "unsloth": False, "fake": False}


def test_auto_backend_on_a_gpu_imports_unsloth_when_the_plan_says_so(tmp_path):
    result, out = run(tmp_path, "auto")
    assert result["backend"] == "unsloth" and result["unsloth"] and result["fake"]
    assert not result["after_import"]  # `import gapo_lite` alone does not: the run's plan decides
    assert "imported before unsloth" not in out


def test_environment_asks_for_unsloth_at_import(tmp_path):
    result, _ = run(tmp_path, "unsloth", env_backend="unsloth")
    assert result["after_import"] and result["fake"]


def test_late_unsloth_import_warns(tmp_path):
    result, out = run(tmp_path, "auto", early=True)
    assert result["unsloth"]
    assert "peft imported before unsloth" in out


def test_choose_backend_rules():
    assert choose_backend("auto", cuda=True, has_unsloth=True)[0] == "unsloth"
    assert choose_backend("auto", cuda=True, has_unsloth=False)[0] == "transformers"
    assert choose_backend("auto", cuda=False, has_unsloth=True)[0] == "transformers"
    assert "CPU fallback" in choose_backend("unsloth", cuda=False, has_unsloth=True)[1]
    with pytest.raises(ImportError, match="not installed"):
        choose_backend("unsloth", cuda=True, has_unsloth=False)
    with pytest.raises(ValueError, match="unknown backend"):
        choose_backend("jax", cuda=True, has_unsloth=True)


def test_cpu_precision_is_bf16_only_where_the_cpu_has_it(monkeypatch):
    from gapo_lite import _bootstrap

    monkeypatch.delenv(_bootstrap.PRECISION_ENV, raising=False)
    monkeypatch.setattr(_bootstrap, "cpu_bf16_native", lambda: False)
    assert _bootstrap.cpu_precision() == "fp32" and _bootstrap.cpu_precision("fp32") == "fp32"
    with pytest.raises(ValueError, match="no native bf16"):
        _bootstrap.cpu_precision("bf16")
    monkeypatch.setattr(_bootstrap, "measured_bf16_ratio", lambda: pytest.fail("no measurement without native bf16"))
    assert _bootstrap.cpu_precision() == "fp32"
    monkeypatch.setattr(_bootstrap, "cpu_bf16_native", lambda: True)
    assert _bootstrap.cpu_precision("bf16") == "bf16" and _bootstrap.cpu_precision("fp32") == "fp32"
    for ratio, chosen in ((0.6, "bf16"), (0.8, "fp32"), (1.34, "fp32")):  # auto: bf16 only where measured faster by the margin
        monkeypatch.setattr(_bootstrap, "measured_bf16_ratio", lambda ratio=ratio: ratio)
        assert _bootstrap.cpu_precision() == chosen
    monkeypatch.setenv(_bootstrap.PRECISION_ENV, "bf16")
    assert _bootstrap.cpu_precision() == "bf16"
    monkeypatch.setenv(_bootstrap.PRECISION_ENV, "fp32")
    assert _bootstrap.cpu_precision() == "fp32"
    with pytest.raises(ValueError, match="must be 'auto', 'bf16' or 'fp32'"):
        _bootstrap.cpu_precision("fp16")


def test_bf16_autocast_on_the_cpu_stays_close_to_fp32(tiny_model_path):
    """What bf16 autocast changes in a forward pass of the tiny model: logits within bf16's rounding."""
    import torch

    from gapo_lite.models import load_model

    model, tok = load_model(tiny_model_path, lora=None)
    ids = tok("Cat Dog Owl Fox", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        fp32 = model(input_ids=ids).logits
        with torch.autocast("cpu", dtype=torch.bfloat16):
            bf16 = model(input_ids=ids).logits.float()
    assert bf16.dtype == torch.float32 and not torch.equal(bf16, fp32)  # autocast did compute in bf16
    assert torch.allclose(torch.softmax(bf16, -1), torch.softmax(fp32, -1), atol=2e-2)
    assert (bf16.argmax(-1) == fp32.argmax(-1)).float().mean() > 0.9


def test_auto_precision_measures_once_per_cpu_and_the_plan_line_says_what_it_measured(tmp_path, monkeypatch):
    import gapo_lite.probes
    from gapo_lite import _bootstrap
    from gapo_lite.runplan import resolve_run_plan

    monkeypatch.setenv("GAPO_LITE_CACHE", str(tmp_path))
    monkeypatch.delenv(_bootstrap.PRECISION_ENV, raising=False)
    monkeypatch.setattr(_bootstrap, "cpu_bf16_native", lambda: True)
    calls = []
    monkeypatch.setattr(gapo_lite.probes, "bf16_step_ratio", lambda: calls.append(1) or 0.6234)
    assert _bootstrap.cpu_precision() == "bf16" and _bootstrap.cpu_precision() == "bf16"
    assert calls == [1]  # measured once, then read from the cache
    cached = json.loads((tmp_path / "cpu_precision.json").read_text())
    assert cached == {_bootstrap.cpu_identity(): 0.623}
    plan = resolve_run_plan(backend="transformers", cuda=False)
    assert "precision bf16 autocast (bf16 autocast measured 0.62x fp32's time here, threshold 0.8)" in plan.describe()
    assert "measured" not in resolve_run_plan(backend="transformers", cuda=False, precision="fp32").describe()
    (tmp_path / "cpu_precision.json").write_text(json.dumps({_bootstrap.cpu_identity(): 1.34}))
    assert _bootstrap.cpu_precision() == "fp32" and calls == [1]


def test_the_bf16_probe_times_a_real_lora_step():
    """The probe's figure is a ratio of two timings of the same step: positive, and within what a CPU can do."""
    from gapo_lite.probes import bf16_step_ratio

    ratio = bf16_step_ratio(rounds=1, tokens=64)
    assert 0.05 < ratio < 20


def test_every_command_asks_for_a_backend_from_the_one_list(capsys):
    """train, plan and eval offer BACKENDS; train and plan default to DEFAULT_BACKEND ("auto", which plan resolves
    on the CUDA GPU with Unsloth it plans for), eval to EVAL_BACKEND."""
    from gapo_lite._bootstrap import BACKENDS, DEFAULT_BACKEND, EVAL_BACKEND
    from gapo_lite.cli import build_parser, main
    from gapo_lite.training import TrainConfig

    parser = build_parser()
    assert TrainConfig().backend == DEFAULT_BACKEND == "auto"
    assert parser.parse_args(["plan", "--budget-gb", "24"]).backend == DEFAULT_BACKEND
    assert parser.parse_args(["eval", "--model", "m", "--out", "o"]).backend == EVAL_BACKEND == "transformers"
    for command in (["plan", "--budget-gb", "24"], ["eval", "--model", "m", "--out", "o"]):
        with pytest.raises(SystemExit):
            parser.parse_args([*command, "--backend", "jax"])
        err = capsys.readouterr().err
        assert all(repr(b) in err for b in BACKENDS), err
    assert main(["plan", "--model", "qwen2.5-7b", "--budget-gb", "24", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["backend"] == "unsloth"
