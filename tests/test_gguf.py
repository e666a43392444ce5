"""The GGUF path on a tiny Llama written to a .gguf file here (with the ``gguf`` package), loaded through the
kit's real ``load_model``: same logits as the original, the file's special tokens, a reusable plain folder,
LoRA on the Llama projections, and sampling with a tokenizer that has no pad token."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

gguf = pytest.importorskip("gguf", reason="the GGUF path needs the `gguf` package (pip install 'gapo-lite[gguf]')")

from gapo_lite import gguf as kit_gguf  # noqa: E402
from gapo_lite.models import PROJECTIONS, LoraSettings, load_model  # noqa: E402
from gapo_lite.sampling import sample_completions  # noqa: E402

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
HEADS, KV_HEADS, HIDDEN = 4, 2, 32


def byte_alphabet() -> list[str]:
    """The 256 printable stand-ins a byte-level BPE uses for bytes (printable ASCII and Latin-1 map to themselves)."""
    kept = [b for b in range(256) if 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255]
    chars, extra = {}, 0
    for b in range(256):
        if b in kept:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def llama_cpp_order(weight: torch.Tensor, heads: int) -> np.ndarray:
    """Rows of a q/k projection in llama.cpp's rotary layout (the GGUF convention transformers undoes on load)."""
    w = weight.detach().numpy()
    return w.reshape(heads, 2, w.shape[0] // heads // 2, w.shape[1]).swapaxes(1, 2).reshape(w.shape)


def write_tiny_llama_gguf(path) -> torch.nn.Module:
    """A 2-layer Llama with a byte-level BPE tokenizer saved as an F32 .gguf at ``path``; returns the model."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tokens = SPECIALS + byte_alphabet() + ["Ġa", "Ġb"]
    config = LlamaConfig(
        vocab_size=len(tokens), hidden_size=HIDDEN, intermediate_size=64, num_hidden_layers=2, num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS, max_position_embeddings=128, rms_norm_eps=1e-5, rope_theta=10000.0,
        tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, pad_token_id=2,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(128)
    writer.add_embedding_length(HIDDEN)
    writer.add_block_count(2)
    writer.add_feed_forward_length(64)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_dimension_count(HIDDEN // HEADS)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_types([3] * len(SPECIALS) + [1] * (len(tokens) - len(SPECIALS)))
    writer.add_token_merges(["Ġ a", "Ġ b"])  # two: the reader turns a one-item list into a scalar
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_pad_token_id(2)
    writer.add_chat_template(CHAT_TEMPLATE)
    names = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm",
             "post_attention_layernorm": "ffn_norm"}
    writer.add_tensor("token_embd.weight", model.model.embed_tokens.weight.detach().numpy().copy())
    for i, layer in enumerate(model.model.layers):
        for hf_name, gguf_name in names.items():
            weight = layer.get_submodule(hf_name).weight
            if gguf_name == "attn_q":
                array = llama_cpp_order(weight, HEADS)
            elif gguf_name == "attn_k":
                array = llama_cpp_order(weight, KV_HEADS)
            else:
                array = weight.detach().numpy()
            writer.add_tensor(f"blk.{i}.{gguf_name}.weight", np.ascontiguousarray(array, dtype=np.float32))
    writer.add_tensor("output_norm.weight", model.model.norm.weight.detach().numpy().copy())
    writer.add_tensor("output.weight", model.lm_head.weight.detach().numpy().copy())
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return model


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    path = tmp_path_factory.mktemp("gguf") / "tiny-llama.F32.gguf"
    original = write_tiny_llama_gguf(path)
    return path, original


def test_a_gguf_file_loads_as_the_same_model_with_the_files_special_tokens(tiny_gguf, monkeypatch):
    path, original = tiny_gguf
    model, tok = load_model(path, backend="transformers", lora=None)
    assert type(model).__name__ == "LlamaForCausalLM"
    assert getattr(model.config, "quantization_config", None) is None  # a plain, trainable model
    ids = torch.tensor([[1, 40, 60, 80, 100, 120, 2]])
    with torch.no_grad():
        assert torch.allclose(model(input_ids=ids).logits, original(input_ids=ids).logits, atol=1e-5)
    # transformers' GGUF tokenizer takes eos from the bos id; the kit restores the file's own ids, and pads with a
    # token other than eos (the file says pad = eos; see gapo_lite.sampling.ensure_pad_token).
    assert (tok.bos_token, tok.eos_token, tok.pad_token) == ("<|im_start|>", "<|im_end|>", "<|endoftext|>")
    assert tok.decode(tok("a cab", add_special_tokens=False)["input_ids"]) == "a cab"

    folder = path.with_name("tiny-llama.F32.hf")
    assert (folder / "model.safetensors").is_file() and (folder / kit_gguf.MARKER).is_file()
    assert "quantization_config" not in json.loads((folder / "config.json").read_text())

    def no_second_conversion(*args, **kwargs):
        raise AssertionError("the converted folder should have been reused")

    monkeypatch.setattr(kit_gguf, "_convert_gguf", no_second_conversion)
    again, _ = load_model(str(path), backend="transformers", lora=None)
    assert torch.equal(again.lm_head.weight, model.lm_head.weight)


def test_a_changed_gguf_file_is_converted_again(tiny_gguf):
    path, _ = tiny_gguf
    folder = kit_gguf.gguf_checkpoint(path)
    assert kit_gguf.is_converted(folder, path)
    stamp = json.loads((folder / kit_gguf.MARKER).read_text())
    (folder / kit_gguf.MARKER).write_text(json.dumps({**stamp, "size": stamp["size"] + 1}))
    assert not kit_gguf.is_converted(folder, path)


def test_lora_finds_the_llama_projections_and_sampling_pads_without_a_pad_token(tiny_gguf):
    path, _ = tiny_gguf
    model, tok = load_model(path, backend="transformers", lora=LoraSettings(r=4, alpha=8, dropout=0.0))
    targeted = {name.rsplit(".", 1)[-1] for name, module in model.named_modules() if hasattr(module, "lora_A")}
    assert targeted == set(PROJECTIONS)
    tok.pad_token = None  # a tokenizer as transformers hands it over
    out = sample_completions(model, tok, [[{"role": "user", "content": "a b"}], "a"], n=3, max_new_tokens=3, batch_size=4, progress=False)
    assert [len(x) for x in out] == [3, 3]
    assert tok.pad_token == "<|endoftext|>" and tok.eos_token == "<|im_end|>"


def test_two_loaders_started_together_convert_once(tiny_gguf, tmp_path, monkeypatch):
    """Two seeds launched at once: the second waits for the first's conversion and reuses its folder, which is
    not rewritten under the first one's reader."""
    import threading
    import time

    path, _ = tiny_gguf
    folder = tmp_path / "together.hf"
    calls, real = [], kit_gguf._convert_gguf

    def slow_convert(source, out):
        calls.append(out)
        time.sleep(0.5)  # widen the window in which both would otherwise find no folder
        return real(source, out)

    monkeypatch.setattr(kit_gguf, "_convert_gguf", slow_convert)
    results = []
    threads = [threading.Thread(target=lambda: results.append(kit_gguf.gguf_checkpoint(path, folder))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [folder, folder] and len(calls) == 1
    assert kit_gguf.is_converted(folder, path)
    kept = (folder / "model.safetensors").stat().st_ino
    assert kit_gguf.gguf_checkpoint(path, folder) == folder and (folder / "model.safetensors").stat().st_ino == kept
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(f".{folder.name}.")]  # no staging left


def test_a_missing_gguf_file_or_package_is_named(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="GGUF file .*nothing.gguf"):
        load_model(tmp_path / "nothing.gguf", backend="transformers", lora=None)
    monkeypatch.setitem(__import__("sys").modules, "gguf", None)
    (tmp_path / "x.gguf").write_bytes(b"GGUF")
    with pytest.raises(ImportError, match=r"gapo-lite\[gguf\]"):
        kit_gguf.gguf_checkpoint(tmp_path / "x.gguf", tmp_path / "x.hf")


def test_lora_targets_name_the_linear_layers_when_none_match(tiny_gguf):
    from gapo_lite.models import lora_targets

    model, _ = load_model(tiny_gguf[0], backend="transformers", lora=None)
    assert lora_targets(model, ("q_proj", "c_attn")) == ["q_proj"]
    with pytest.raises(ValueError, match=r"c_attn.*linear layers are named .*'down_proj'.*'lm_head'"):
        lora_targets(model, ("c_attn",), "tiny")


def test_smollm2_path_is_where_the_fetch_script_puts_the_file(monkeypatch, tmp_path):
    import re
    from pathlib import Path

    from gapo_lite.gguf import smollm2_path

    script = (Path(__file__).resolve().parents[1] / "scripts" / "get_smollm2.sh").read_text()
    name = re.search(r"^NAME=(\S+)$", script, re.M).group(1)
    assert re.search(r'^DEST="\$CACHE/smollm2"$', script, re.M), "the script's destination changed; update gapo_lite.gguf.smollm2_path"
    monkeypatch.delenv("SMOLLM2_GGUF", raising=False)
    monkeypatch.setenv("GAPO_LITE_CACHE", str(tmp_path))
    assert smollm2_path() == str(tmp_path / "smollm2" / name)
    monkeypatch.setenv("SMOLLM2_GGUF", "/somewhere/else.gguf")
    assert smollm2_path() == "/somewhere/else.gguf"
