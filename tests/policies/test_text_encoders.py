"""Instruction encoders: the from-scratch vocabulary model and a local pretrained model."""

from pathlib import Path

import pytest
import torch
from policy_fixtures import ACTION_DIM, tensor_batch, tiny_config

from robot_learn.policies import PolicyLoadError, PretrainedTextEncoder, VocabTextEncoder, build_vocab, load_policy, make_policy

WORDS = ["[PAD]", "[UNK]", "put", "the", "red", "blue", "green", "cube", "on", "in", "bin"]


def test_vocab_is_the_sorted_lowercase_words_without_punctuation():
    assert build_vocab(["Put the red cube on the blue cube.", "put the cube IN the bin"]) == [
        "bin", "blue", "cube", "in", "on", "put", "red", "the",
    ]


def test_vocab_encoder_outputs_depend_on_the_words_and_are_deterministic():
    torch.manual_seed(0)
    encoder = VocabTextEncoder(build_vocab(["put the red cube", "put the blue cube"]), dim=16).eval()
    out = encoder(["put the red cube", "put the blue cube", "put the red cube"])
    assert out.shape == (3, 16)
    assert torch.equal(out[0], out[2])
    assert not torch.allclose(out[0], out[1])


def test_empty_instruction_is_one_unknown_token_not_nan():
    encoder = VocabTextEncoder(["cube"], dim=8)
    assert encoder.token_ids("") == [1]
    assert torch.isfinite(encoder([""])).all()


def test_vocab_encoder_needs_a_vocabulary_and_a_list_of_strings():
    with pytest.raises(ValueError, match="non-empty vocabulary"):
        VocabTextEncoder([])
    with pytest.raises(TypeError, match="list of strings"):
        VocabTextEncoder(["cube"], dim=8)("cube")


@pytest.fixture
def tiny_pretrained(tmp_path) -> Path:
    """A randomly initialised 2-layer BERT and a word-level tokenizer, saved locally."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    torch.manual_seed(0)
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]").save_pretrained(tmp_path / "bert")
    config = BertConfig(vocab_size=len(WORDS), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=32)
    BertModel(config).save_pretrained(tmp_path / "bert")
    return tmp_path / "bert"


def test_pretrained_encoder_is_frozen_and_outside_parameters_and_state_dict(tiny_pretrained):
    encoder = PretrainedTextEncoder(tiny_pretrained, out_dim=8)
    assert [name for name, _ in encoder.named_parameters()] == ["projection.weight", "projection.bias"]
    assert set(encoder.state_dict()) == {"projection.weight", "projection.bias"}
    out = encoder(["put the red cube on the blue cube", "put the green cube in the bin"])
    assert out.shape == (2, 8)
    assert not torch.allclose(out[0], out[1])
    out.sum().backward()
    assert encoder.projection.weight.grad is not None
    assert all(p.grad is None and not p.requires_grad for p in encoder.model.parameters())


def test_pretrained_encoder_mean_pools_over_real_tokens_only(tiny_pretrained):
    encoder = PretrainedTextEncoder(tiny_pretrained, out_dim=8)
    alone = encoder(["put the cube"])
    padded = encoder(["put the cube", "put the red cube on the blue cube"])[:1]
    assert torch.allclose(alone, padded, atol=1e-5)


def test_pretrained_encoder_follows_dtype_moves(tiny_pretrained):
    encoder = PretrainedTextEncoder(tiny_pretrained, out_dim=8).to(torch.float64)
    assert next(encoder.model.parameters()).dtype == torch.float64


def test_policy_with_pretrained_text_encoder_trains_saves_and_loads(tiny_pretrained, stats, windows, tmp_path):
    config = tiny_config(text_encoder="pretrained", pretrained_text_path=str(tiny_pretrained))
    torch.manual_seed(0)
    policy = make_policy("diffusion", config, stats)
    batch = tensor_batch(windows)
    batch["instruction"] = ["put the red cube on the blue cube"] * 4
    loss = policy.compute_loss(batch)["loss"]
    loss.backward()
    assert policy.obs_encoder.text_encoder.projection.weight.grad.abs().sum() > 0
    assert not any(k.startswith("obs_encoder.text_encoder.model") for k in policy.state_dict())

    policy.save(tmp_path / "ckpt")
    loaded = load_policy(tmp_path / "ckpt", action_dim=ACTION_DIM)
    obs = {**batch["obs"], "instruction": batch["instruction"]}
    policy.eval()
    g = torch.Generator
    assert torch.equal(policy.predict_action_chunk(obs, g().manual_seed(0)), loaded.predict_action_chunk(obs, g().manual_seed(0)))


def test_missing_pretrained_path_is_a_clear_error(tmp_path, stats):
    with pytest.raises(ValueError, match="is not a directory"):
        PretrainedTextEncoder(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="cannot load a pretrained text model"):
        PretrainedTextEncoder(tmp_path / "empty")


def test_checkpoint_whose_pretrained_model_moved_is_a_load_error(tiny_pretrained, stats, tmp_path):
    policy = make_policy("diffusion", tiny_config(text_encoder="pretrained", pretrained_text_path=str(tiny_pretrained)), stats)
    policy.save(tmp_path / "ckpt")
    tiny_pretrained.rename(tmp_path / "moved")
    with pytest.raises(PolicyLoadError, match="is not a directory"):
        load_policy(tmp_path / "ckpt")
