"""``TrainConfig.freeze_embeddings``: full fine-tuning through ``train()`` that leaves the (tied) token embeddings as they were."""
import torch

from gapo_lite.models import load_model
from gapo_lite.rewards import FrequencyScorer
from gapo_lite.training import TrainConfig, train


def _run(path, out, dataset, freeze):
    config = TrainConfig(model=str(path), use_lora=False, freeze_embeddings=freeze, num_generations=4, prompts_per_step=2, max_completion_length=2,
                         max_steps=2, save_steps=10, learning_rate=1e-2, output_dir=str(out), num_prompts=4, optim="adamw_torch",
                         clean_answers=False)  # a random model's 2 tokens never end its turn: every answer would be invalid
    model, tok = load_model(path, lora=None)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    train(config, model=model, tokenizer=tok, scorer=FrequencyScorer(), train_dataset=dataset)
    return {n for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n])}


def test_frozen_embeddings_stay_and_the_blocks_train(small_vocab_model, tmp_path):
    path, dataset = small_vocab_model
    frozen = _run(path, tmp_path / "frozen", dataset, True)
    free = _run(path, tmp_path / "free", dataset, False)
    assert "model.embed_tokens.weight" in free, "without freezing, full fine-tuning moves the embeddings (else this test shows nothing)"
    assert "model.embed_tokens.weight" not in frozen
    assert any(".layers." in n for n in frozen), "the transformer blocks still train"
