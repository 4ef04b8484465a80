"""The transformers backbone, built from a tiny random config (nothing downloaded), with and without LoRA."""

import pytest
import torch
from dd_fixtures import INSTRUCTIONS, batch_of, stats_of, synthetic_windows, tiny_config, train

from robot_learn.policies import load_policy, make_policy

BERT = {"model_type": "bert", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
        "intermediate_size": 64, "vocab_size": 8, "max_position_embeddings": 64}


def _hf_policy(**changes):
    windows = synthetic_windows()
    torch.manual_seed(0)
    config = tiny_config(backbone="hf", attention="full", hf_config=BERT, **changes)
    return make_policy("discrete_diffusion", config, stats_of(windows), instructions=INSTRUCTIONS), windows


def test_hf_backbone_trains_and_round_trips_through_a_checkpoint(tmp_path):
    policy, windows = _hf_policy()
    losses = train(policy, batch_of(windows, repeat=4), steps=60)
    assert sum(losses[-5:]) < 0.7 * sum(losses[:5])
    policy.save(tmp_path / "p")
    loaded = load_policy(tmp_path / "p")
    obs = {**batch_of(windows)["obs"], "instruction": list(INSTRUCTIONS) * 2}
    a = policy.predict_action_chunk(obs, generator=torch.Generator().manual_seed(0))
    b = loaded.predict_action_chunk(obs, generator=torch.Generator().manual_seed(0))
    assert torch.equal(a, b)
    assert policy.last_nfe == 4


def test_lora_trains_only_the_adapters_of_the_hf_model():
    pytest.importorskip("peft")
    policy, windows = _hf_policy(lora_rank=4, lora_targets=["query", "value"])
    inner = [(name, p) for name, p in policy.backbone.model.named_parameters()]
    trainable = [name for name, p in inner if p.requires_grad]
    assert trainable and all("lora_" in name for name in trainable)
    frozen_before = {name: p.clone() for name, p in inner if not p.requires_grad}
    train(policy, batch_of(windows, repeat=2), steps=3)
    for name, p in policy.backbone.model.named_parameters():
        if name in frozen_before:
            assert torch.equal(p, frozen_before[name]), name


def test_hf_backbone_rejects_a_missing_directory_and_the_prefix_cache():
    with pytest.raises(ValueError, match="only attention='full'"):
        tiny_config(backbone="hf", hf_config=BERT)
    with pytest.raises(ValueError, match="needs hf_path"):
        tiny_config(backbone="hf", attention="full")
    windows = synthetic_windows()
    with pytest.raises(ValueError, match="is not a directory"):
        make_policy("discrete_diffusion", tiny_config(backbone="hf", attention="full", hf_path="/no/such/model"),
                    stats_of(windows), instructions=INSTRUCTIONS)
