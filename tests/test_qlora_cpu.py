"""4-bit QLoRA on the CPU, for real: bitsandbytes NF4 through the kit's own transformers + peft path.

The plan decides 4-bit from a probe of the installed bitsandbytes (one NF4 forward), an explicit request that cannot
run is one line, and train() (GAPO through TRL's GRPOTrainer), --resume, eval --load-in-4bit and the saved adapter on
a full-precision base all run with a tiny model built here."""
from __future__ import annotations

import json

import pytest
import torch

from gapo_lite._bootstrap import cpu_bf16_native
from gapo_lite.errors import UserError
from gapo_lite.runplan import choose_4bit, resolve_run_plan

bnb = pytest.importorskip("bitsandbytes")


def needs_cpu_nf4() -> None:
    from gapo_lite.probes import bitsandbytes_4bit_problem

    problem = bitsandbytes_4bit_problem("cpu")
    if problem:
        pytest.skip(problem)


def test_the_probe_answers_for_each_device():
    from gapo_lite.probes import bitsandbytes_4bit_problem

    needs_cpu_nf4()
    assert bitsandbytes_4bit_problem("cpu") is None
    if not torch.cuda.is_available():
        assert bitsandbytes_4bit_problem("cuda") == "torch sees no CUDA GPU"
    assert "not 'mps'" in bitsandbytes_4bit_problem("mps")


def test_4bit_is_what_was_asked_for_or_what_the_device_can_do():
    assert choose_4bit(None, "transformers", cuda=False, problem=None) is False  # the CPU default: full precision
    assert choose_4bit(None, "unsloth", cuda=True, problem=None) is True  # the GPU default: the paper's QLoRA
    assert choose_4bit(True, "transformers", cuda=False, problem=None) is True
    assert choose_4bit(False, "transformers", cuda=True, problem=None) is False
    assert choose_4bit(None, "transformers", cuda=True, problem="broken build") is False  # auto says so and loads 16-bit
    with pytest.raises(UserError, match="cannot be honoured on this GPU: broken build"):
        choose_4bit(True, "transformers", cuda=True, problem="broken build")
    with pytest.raises(UserError, match="Unsloth's CPU fallback has no 4-bit"):
        choose_4bit(True, "unsloth", cuda=False, problem=None)


def test_this_cpu_runs_explicit_4bit_and_the_plan_line_says_so():
    needs_cpu_nf4()
    plan = resolve_run_plan(backend="transformers", load_in_4bit=True, cuda=None)
    assert plan.load_in_4bit and not plan.cuda and plan.quantization == "4bit"
    assert "weights nf4 (bitsandbytes, double quant), compute fp32" in plan.describe()
    if cpu_bf16_native():
        assert "compute bf16" in resolve_run_plan(backend="transformers", load_in_4bit=True, precision="bf16").describe()
    default = resolve_run_plan(backend="transformers")
    assert not default.load_in_4bit and "weights 32bit" in default.describe()


def test_an_explicit_4bit_request_that_cannot_run_is_one_line_before_anything_loads(tmp_path, monkeypatch, capsys):
    import gapo_lite.probes
    from gapo_lite.cli import entry

    monkeypatch.setattr(gapo_lite.probes, "bitsandbytes_4bit_problem", lambda device: "bitsandbytes 0.0 failed a 4-bit forward on cpu (test)")
    monkeypatch.chdir(tmp_path)
    code = entry(["train", "--recipe", "tiny_lists", "--set", "load_in_4bit=true", "--set", "max_steps=2", "--set", f"output_dir={tmp_path / 'run'}"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err == "gapo-lite train: error: load_in_4bit=True cannot be honoured on this CPU: bitsandbytes 0.0 failed a 4-bit forward on cpu (test)"
    assert not (tmp_path / "run").exists() and not (tmp_path / "runs").exists()  # nothing built, nothing trained


@pytest.fixture(scope="module")
def nf4_run(small_vocab_model, tmp_path_factory):
    """Two GAPO steps in NF4 through train(), then a third resumed from the step-2 checkpoint."""
    needs_cpu_nf4()
    from gapo_lite.training import TrainConfig, build_trainer, train

    path, dataset = small_vocab_model
    out = tmp_path_factory.mktemp("nf4") / "run"
    config = TrainConfig(model=str(path), backend="transformers", load_in_4bit=True, num_generations=8, prompts_per_step=2,
                         max_completion_length=3, max_steps=2, save_steps=1, learning_rate=1e-2, output_dir=str(out), lora_r=4,
                         lora_alpha=8, lora_dropout=0.0, temperature=1.5, seed=0)
    trainer = build_trainer(config, train_dataset=dataset)
    layers = [m for m in trainer.model.modules() if isinstance(m, bnb.nn.Linear4bit)]
    first = train(config, train_dataset=dataset)
    resumed = train(TrainConfig(**{**config.to_dict(), "max_steps": 3, "resume": True}), train_dataset=dataset)
    return {"config": config, "layers": len(layers), "first": first, "resumed": resumed, "path": path, "dataset": dataset}


def test_train_runs_gapo_on_nf4_weights_and_resumes(nf4_run):
    assert nf4_run["layers"] == 2 * 7  # every projection of both layers is a bitsandbytes Linear4bit
    first, resumed = nf4_run["first"], nf4_run["resumed"]
    assert first.global_step == 2 and resumed.global_step == 3
    assert (first.output_dir / "checkpoint-2").is_dir()
    rows = [json.loads(line) for line in first.metrics_path.read_text().splitlines()]
    steps = [r["step"] for r in rows if "loss" in r]
    assert steps == [1, 2, 3]  # the resumed run appended step 3 and did not redo 1-2
    assert any(float(r.get("grad_norm", 0)) > 0 for r in rows if "loss" in r)  # the groups carried a signal


def test_the_adapter_loads_onto_a_full_precision_base(nf4_run):
    from peft import PeftModel
    from safetensors.torch import load_file

    from gapo_lite.models import load_model

    adapter = nf4_run["resumed"].adapter_dir
    saved = load_file(str(adapter / "adapter_model.safetensors"))
    assert saved and all(t.dtype == torch.float32 for t in saved.values())  # the fp32 master copy, not TRL's bf16 cast
    assert any(t.abs().sum() > 0 for name, t in saved.items() if "lora_B" in name)  # trained away from B = 0
    base, tokenizer = load_model(nf4_run["path"], backend="transformers", load_in_4bit=False, lora=None)
    assert not any(isinstance(m, bnb.nn.Linear4bit) for m in base.modules())
    ids = tokenizer("Pick one animal", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        plain = base(ids).logits
        model = PeftModel.from_pretrained(base, str(adapter))
        adapted = model(ids).logits
    loaded = {k.replace(".default", ""): v for k, v in model.state_dict().items() if "lora_" in k}
    assert all(torch.equal(loaded[k.replace("base_model.model.", "base_model.model.", 1)], v) for k, v in saved.items() if k in loaded)
    assert len([k for k in saved if k in loaded]) == len(saved)
    assert not torch.allclose(plain, adapted)


def test_eval_loads_the_base_in_4bit_with_the_adapter(nf4_run, tmp_path, capsys):
    from gapo_lite.cli import main

    out = tmp_path / "eval"
    argv = ["eval", "--model", str(nf4_run["path"]), "--adapter", str(nf4_run["resumed"].adapter_dir), "--load-in-4bit", "--out", str(out),
            "--suite", "lists", "--n", "3", "--max-new-tokens", "3", "--num-lists", "2", "--no-progress"]
    assert main(argv) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["config"]["load_in_4bit"] is True
    assert {"base", "adapter"} <= set(results["variants"])
    assert "4-bit=True" in capsys.readouterr().out  # load_model's line: the base really loaded in NF4


def test_the_planners_resident_terms_are_the_bytes_of_the_real_nf4_tensors(small_vocab_model):
    """benchmarks/memory.py --resident on a model built here: weights (packed NF4, its quantization states, the fp32
    rest), LoRA parameters, gradients and AdamW states after one step, each within 5% of the planner's term."""
    import runpy
    from pathlib import Path

    needs_cpu_nf4()
    bench = runpy.run_path(str(Path(__file__).resolve().parents[1] / "benchmarks" / "memory.py"), run_name="memory_bench")
    path, _ = small_vocab_model
    measured, predicted = bench["resident_terms"](path, 8), bench["predicted_resident_terms"](path, 8)
    assert set(measured) == set(predicted) == {"weights", "lora_params", "lora_grads", "optimizer_states"}
    for term in measured:
        assert abs(predicted[term] / measured[term] - 1) < 0.05, (term, predicted[term], measured[term])
