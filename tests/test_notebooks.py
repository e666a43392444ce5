"""The notebooks run: the CPU demo notebook end to end (quick settings), and the Colab notebook's cells on a CPU
with a tiny random model standing in for Qwen2.5-7B (cells tagged ``colab-only`` are skipped; parameters are
overridden papermill-style by a cell inserted after the one tagged ``parameters``)."""
from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]
COLAB = ROOT / "notebooks" / "gapo_qwen7b_colab.ipynb"
CPU = ROOT / "notebooks" / "gapo_tiny_cpu.ipynb"
KERNEL = "gapo-lite-tests"


@pytest.fixture(scope="module")
def kernel_name(tmp_path_factory):
    """A kernel spec that runs this interpreter (the venv), found through JUPYTER_PATH."""
    root = tmp_path_factory.mktemp("jupyter")
    spec = root / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "gapo-lite tests", "language": "python"}))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", str(root) + os.pathsep + os.environ.get("JUPYTER_PATH", ""))
        mp.setenv("GAPO_LITE_BACKEND", "transformers")
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("TOKENIZERS_PARALLELISM", "false")
        mp.setenv("MPLBACKEND", "Agg")
        # one thread: on a shared 2-core machine two torch threads spin against other jobs and run tiny models 10-100x slower
        mp.setenv("OMP_NUM_THREADS", "1")
        yield KERNEL


def tagged(cell, tag: str) -> bool:
    return tag in cell.get("metadata", {}).get("tags", [])


def parameters_cell(nb):
    cells = [c for c in nb.cells if c.cell_type == "code" and tagged(c, "parameters")]
    assert len(cells) == 1, "a notebook needs exactly one code cell tagged 'parameters'"
    return cells[0]


def parameter_defaults(nb) -> dict[str, Any]:
    """The parameters cell's assignments, evaluated as literals."""
    values: dict[str, Any] = {}
    for node in ast.parse(parameters_cell(nb).source).body:
        assert isinstance(node, ast.Assign), f"parameters cell holds a non-assignment: {ast.unparse(node)}"
        value = ast.literal_eval(node.value)
        target = node.targets[0]
        names = [e.id for e in target.elts] if isinstance(target, ast.Tuple) else [target.id]
        values.update(zip(names, value) if isinstance(target, ast.Tuple) else [(names[0], value)])
    return values


def run_notebook(path: Path, params: dict[str, Any], cwd: Path, kernel: str, timeout: int = 300):
    """Execute ``path`` without its colab-only cells, ``params`` injected after the parameters cell."""
    nb = nbformat.read(path, as_version=4)
    nb.cells = [c for c in nb.cells if not tagged(c, "colab-only")]
    known = parameter_defaults(nb)
    unknown = sorted(set(params) - set(known))
    assert not unknown, f"not parameters of {path.name}: {unknown}"
    index = nb.cells.index(parameters_cell(nb))
    injected = nbformat.v4.new_code_cell("\n".join(f"{k} = {v!r}" for k, v in params.items()), metadata={"tags": ["injected-parameters"]})
    nb.cells.insert(index + 1, injected)
    nbclient.NotebookClient(nb, kernel_name=kernel, timeout=timeout, resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def outputs(nb, kind: str) -> list[Any]:
    """Every output of code cells: stream text (kind="text") or image/png payloads (kind="png")."""
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if kind == "text" and out.get("output_type") == "stream":
                found.append(out["text"])
            if kind == "png" and "image/png" in out.get("data", {}):
                found.append(out["data"]["image/png"])
    return found


def cell_contents(nb) -> list[tuple[str, str, list[str]]]:
    return [(c.cell_type, c.source, list(c.get("metadata", {}).get("tags", []))) for c in nb.cells]


@pytest.mark.parametrize("path", [COLAB, CPU], ids=lambda p: p.name)
def test_notebook_is_in_sync_with_its_percent_script(path):
    """Each .ipynb is paired with a jupytext percent script (notebooks/NAME.py, the source to edit); the two hold
    the same cells, sources and tags. After editing the script: jupytext --sync notebooks/NAME.py"""
    jupytext = pytest.importorskip("jupytext")
    script = path.with_suffix(".py")
    paired = jupytext.read(script)
    notebook = nbformat.read(path, as_version=4)
    assert cell_contents(paired) == cell_contents(notebook), f"{path.name} differs from {script.name}: run jupytext --sync {script.relative_to(ROOT)}"
    assert notebook.metadata.get("jupytext", {}).get("formats") == "ipynb,py:percent"
    assert script.read_text(encoding="utf-8").count('tags=["parameters"]') == 1  # tags are jupytext cell metadata in the script


def test_colab_notebook_reads_like_unsloths():
    """Install, load, plan, data, train, evaluate, save, in that order, and no lab history in its prose."""
    nb = nbformat.read(COLAB, as_version=4)
    headings = [line for c in nb.cells if c.cell_type == "markdown" for line in c.source.splitlines() if line.startswith("### ")]
    order = ["Install", "Load", "Memory plan", "Data", "Evaluate the base model", "Train", "Evaluate the trained", "Save"]
    positions = [next(i for i, h in enumerate(headings) if word in h) for word in order]
    assert positions == sorted(positions), headings
    prose = " ".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "tests/" not in prose and "no GPU was available" not in prose


def test_colab_notebook_defaults_are_the_papers():
    nb = nbformat.read(COLAB, as_version=4)
    p = parameter_defaults(nb)
    assert (p["MODEL"], p["G"], p["PROMPTS_PER_STEP"], p["LEARNING_RATE"]) == ("Qwen/Qwen2.5-7B-Instruct", 32, 8, 1e-5)
    assert (p["LORA_R"], p["LORA_ALPHA"], p["LORA_DROPOUT"]) == (64, 32, 0.1)
    assert (p["BACKEND"], p["LOAD_IN_4BIT"]) == ("unsloth", True)
    assert p["SAVE_MERGED"] is False and p["SAVE_GGUF"] is False
    install = [c for c in nb.cells if tagged(c, "colab-only")]
    assert len(install) == 1 and "YOUR-GITHUB-USER" in install[0].source and "scripts/gpu_install.py" in install[0].source
    assert nbformat.validate(nb) is None


@pytest.mark.slow  # runs the notebook end to end (training included)
def test_colab_notebook_cells_run_on_cpu_with_a_tiny_model(tmp_path, kernel_name, tiny_model_path):
    out = tmp_path / "run"
    params = dict(
        MODEL=str(tiny_model_path), BACKEND="transformers", LOAD_IN_4BIT=False, MAX_SEQ_LENGTH=256,
        LORA_R=4, LORA_ALPHA=8, LORA_DROPOUT=0.0, G=4, PROMPTS_PER_STEP=2, MAX_STEPS=2, LEARNING_RATE=1e-3,
        MAX_COMPLETION_LENGTH=4, SAVE_STEPS=2, OUTPUT_DIR=str(out), EVAL_LISTS=2, EVAL_N=4, EVAL_OPEN_N=4, EVAL_BATCH_SIZE=64,
    )
    nb = run_notebook(COLAB, params, tmp_path, kernel_name)
    text = "".join(outputs(nb, "text"))
    assert "memory plan:" in text and "fits: yes" in text  # the tiny model's plan (14.5 GiB assumed without a GPU)
    assert "=> 2 prompts x 4 completions per step" in text
    assert "held-out categories (evaluation only):" in text
    # the example group: L = 4, 5 valid answers; Mars 1 - (3/5 - 1/4) = 0.65, Venus 1 - (1/5 - 1/4) = 1.05, Pluto invalid
    assert "    Mars: +0.650" in text and "   Venus: +1.050" in text and "   Pluto: -1.000" in text
    assert "done at step 2" in text
    assert "lists: mean JSD to uniform" in text and "LoRA adapter saved to" in text
    assert len(outputs(nb, "png")) == 2  # training curves and before/after
    results = json.loads((out / "eval_before_after.json").read_text())
    assert set(results) == {"before", "after"}
    for m in results.values():
        assert len(m["lists"]["lists"]) == 2 and m["open"]["n"] == 4 and len(m["open"]["prompts"]) == 10
    assert (out / "lora" / "adapter_config.json").is_file()
    assert (out / "adapter" / "adapter_config.json").is_file()
    assert not (out / "merged_16bit").exists() and not (out / "gguf").exists()  # behind flags, off by default


@pytest.mark.slow  # runs the notebook end to end (training included)
def test_cpu_demo_notebook_runs_quick(tmp_path, kernel_name):
    out = tmp_path / "demo"
    nb = run_notebook(CPU, {"QUICK": True, "OUT_DIR": str(out)}, tmp_path, kernel_name)
    results = json.loads((out / "results.json").read_text())
    assert {"before", "gapo", "grpo_baseline"} <= set(results)
    text = "".join(outputs(nb, "text"))
    assert "held-out JSD (T=0.7)" in text and "GRPO + validity reward" in text  # the table
    assert "spread it: held-out JSD" in text  # the table's reading
    assert len(outputs(nb, "png")) == 2  # choices.png and the JSD-by-temperature figure
    assert (out / "choices.png").is_file() and (out / "jsd_by_temperature.png").is_file()
