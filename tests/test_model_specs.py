"""The built-in model table: every entry's parameter count (computed from its shapes) against the published
total, hub-id aliases, the hub path (faked: there is no network here) and the one-line offline error."""
from __future__ import annotations

import pytest

from gapo_lite.errors import UserError
from gapo_lite.memory import specs
from gapo_lite.memory.specs import ModelSpec, builtin_names

# Published totals in billions, as stated (a figure given to one decimal, e.g. "1.7B", is matched to that
# precision when its rounding is wider than 1%). Sources: the model cards on huggingface.co (the
# "Number of Parameters" line, or the safetensors parameter count shown on the card), and for Gemma 3 the
# Gemma 3 Technical Report (arXiv 2503.19786), Table 1, embedding + non-embedding parameters (the language model;
# the 4B/12B/27B checkpoints add a 417M SigLIP vision encoder that LoRA does not train).
PUBLISHED_BILLIONS = {
    "Qwen2.5-0.5B": 0.49,  # Qwen/Qwen2.5-0.5B card: 0.49B
    "Qwen2.5-1.5B": 1.54,  # Qwen/Qwen2.5-1.5B card: 1.54B
    "Qwen2.5-3B": 3.09,  # Qwen/Qwen2.5-3B card: 3.09B
    "Qwen2.5-7B": 7.61,  # Qwen/Qwen2.5-7B card: 7.61B
    "Qwen2.5-14B": 14.7,  # Qwen/Qwen2.5-14B card: 14.7B
    "Qwen2.5-32B": 32.5,  # Qwen/Qwen2.5-32B card: 32.5B
    "Qwen2.5-72B": 72.7,  # Qwen/Qwen2.5-72B card: 72.7B
    "Qwen3-0.6B": 0.6,  # Qwen/Qwen3-0.6B card: 0.6B (0.44B non-embedding)
    "Qwen3-1.7B": 1.7,  # Qwen/Qwen3-1.7B card: 1.7B (1.4B non-embedding)
    "Qwen3-4B": 4.0,  # Qwen/Qwen3-4B card: 4.0B
    "Qwen3-8B": 8.2,  # Qwen/Qwen3-8B card: 8.2B
    "Qwen3-14B": 14.8,  # Qwen/Qwen3-14B card: 14.8B
    "Qwen3-32B": 32.8,  # Qwen/Qwen3-32B card: 32.8B
    "Llama-3.2-1B": 1.24,  # meta-llama/Llama-3.2-1B card: 1.24B
    "Llama-3.2-3B": 3.21,  # meta-llama/Llama-3.2-3B card: 3.21B
    "Llama-3.1-8B": 8.03,  # meta-llama/Llama-3.1-8B card: 8.03B
    "Llama-3.1-70B": 70.6,  # meta-llama/Llama-3.1-70B card: 70.6B
    "Llama-3.3-70B": 70.6,  # meta-llama/Llama-3.3-70B-Instruct card: 70.6B
    "gemma-2-2b": 2.61,  # google/gemma-2-2b card: 2.61B
    "gemma-2-9b": 9.24,  # google/gemma-2-9b card: 9.24B
    "gemma-2-27b": 27.2,  # google/gemma-2-27b card: 27.2B
    "gemma-3-1b": 1.000,  # Gemma 3 report Table 1: 302M + 698M
    "gemma-3-4b": 3.884,  # Gemma 3 report Table 1: 675M + 3,209M
    "gemma-3-12b": 11.771,  # Gemma 3 report Table 1: 1,012M + 10,759M
    "gemma-3-27b": 27.016,  # Gemma 3 report Table 1: 1,416M + 25,600M
    "Mistral-7B-v0.3": 7.25,  # mistralai/Mistral-7B-v0.3 card: 7.25B
    "Mistral-Nemo-12B": 12.2,  # mistralai/Mistral-Nemo-Base-2407 card: 12.2B
    "Phi-3.5-mini": 3.82,  # microsoft/Phi-3.5-mini-instruct card: 3.82B
    "phi-4": 14.7,  # microsoft/phi-4 card: 14.7B
    "SmolLM2-135M": 0.1345,  # HuggingFaceTB/SmolLM2-135M card: 134.5M (134,515,008 counted by transformers)
    "SmolLM2-360M": 0.362,  # HuggingFaceTB/SmolLM2-360M card: 362M
    "SmolLM2-1.7B": 1.71,  # HuggingFaceTB/SmolLM2-1.7B card: 1.71B
}


def stated_precision(value: float) -> float:
    """Half a unit of the last digit written, e.g. 0.05 for 1.7."""
    text = repr(value)
    decimals = len(text.split(".")[1]) if "." in text else 0
    return 0.5 * 10 ** -decimals


def test_table_covers_every_published_family():
    assert set(builtin_names()) == set(PUBLISHED_BILLIONS)


@pytest.mark.parametrize("name", list(PUBLISHED_BILLIONS))
def test_parameter_count_matches_published(name):
    published = PUBLISHED_BILLIONS[name]
    computed = ModelSpec.builtin(name).num_params / 1e9
    assert abs(computed - published) <= max(0.01 * published, stated_precision(published)), (name, computed, published)


def test_exact_counts_where_known():
    """Counts transformers reports for these checkpoints (model.num_parameters())."""
    assert ModelSpec.builtin("HuggingFaceTB/SmolLM2-135M-Instruct").num_params == 134_515_008
    assert ModelSpec.builtin("Qwen/Qwen2.5-7B-Instruct").num_params == 7_615_616_512


@pytest.mark.parametrize("alias, entry", [
    ("meta-llama/Llama-3.1-8B-Instruct", "Llama-3.1-8B"),
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", "Llama-3.1-8B"),
    ("unsloth/Meta-Llama-3.1-8B-Instruct-bnb-4bit", "Llama-3.1-8B"),
    ("unsloth/Llama-3.2-3B-Instruct-unsloth-bnb-4bit", "Llama-3.2-3B"),
    ("meta-llama/Llama-3.3-70B-Instruct", "Llama-3.3-70B"),
    ("Qwen/Qwen3-8B", "Qwen3-8B"),
    ("Qwen/Qwen3-0.6B-Base", "Qwen3-0.6B"),
    ("unsloth/Qwen2.5-7B-Instruct-bnb-4bit", "Qwen2.5-7B"),
    ("qwen2.5-7b", "Qwen2.5-7B"),
    ("google/gemma-2-9b-it", "gemma-2-9b"),
    ("unsloth/gemma-3-4b-it", "gemma-3-4b"),
    ("mistralai/Mistral-7B-Instruct-v0.3", "Mistral-7B-v0.3"),
    ("mistralai/Mistral-Nemo-Instruct-2407", "Mistral-Nemo-12B"),
    ("microsoft/Phi-3.5-mini-instruct", "Phi-3.5-mini"),
    ("unsloth/phi-4-unsloth-bnb-4bit", "phi-4"),
    ("HuggingFaceTB/SmolLM2-360M-Instruct", "SmolLM2-360M"),
])
def test_hub_ids_resolve_to_the_entry(alias, entry):
    assert specs.builtin_name(alias) == entry
    assert ModelSpec.builtin(alias).name == entry


def test_family_shapes():
    qwen3 = ModelSpec.builtin("Qwen3-8B")
    assert qwen3.head_dim == 128 and qwen3.qk_norm and not qwen3.qkv_bias and qwen3.q_dim == 4096
    gemma = ModelSpec.builtin("gemma-2-9b")
    assert gemma.norms_per_layer == 4 and gemma.q_dim == 16 * 256 and gemma.tie_word_embeddings
    assert ModelSpec.builtin("Qwen2.5-7B").qkv_bias and not ModelSpec.builtin("Llama-3.1-8B").qkv_bias


def test_offline_unknown_hub_id_is_one_line_naming_the_nearest(monkeypatch):
    monkeypatch.setattr(specs, "hub_config", lambda repo_id, timeout=0: None)
    with pytest.raises(UserError) as err:
        ModelSpec.resolve("meta-llama/Llama-2-7b-hf")
    message = str(err.value)
    assert "\n" not in message and "local folder" in message and "Llama-" in message


def test_hub_config_is_used_when_the_hub_answers(monkeypatch):
    """With the hub reachable its config.json wins over the table (faked: no network here)."""
    asked = []

    def fake_fetch(url, token, timeout):
        asked.append((url, timeout))
        return {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
                "intermediate_size": 128, "vocab_size": 1000, "tie_word_embeddings": True}

    monkeypatch.setattr(specs, "_fetch_json", fake_fetch)
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", False)
    monkeypatch.setattr("huggingface_hub.try_to_load_from_cache", lambda *a, **k: None)
    spec = ModelSpec.resolve("some-org/tiny-llama")
    assert spec.num_layers == 2 and spec.name == "some-org/tiny-llama"
    assert asked and asked[0][0].endswith("/some-org/tiny-llama/resolve/main/config.json") and asked[0][1] <= 5
    monkeypatch.setattr(specs, "_fetch_json", lambda *a: (_ for _ in ()).throw(OSError("unreachable")))
    assert ModelSpec.resolve("meta-llama/Llama-3.1-8B-Instruct").name == "Llama-3.1-8B"  # falls back to the table


def test_missing_local_path_is_not_a_hub_id(tmp_path):
    with pytest.raises(FileNotFoundError):
        ModelSpec.resolve(str(tmp_path / "nothing"))
