"""The discrete-diffusion policy: learning, language, checkpoints, bad inputs."""

import numpy as np
import pytest
import torch
import yaml
from dd_fixtures import ACTION_DIM, H, INSTRUCTIONS, STATE_DIM, batch_of, stats_of, synthetic_windows, tiny_config, train

from robot_learn.policies import PolicyLoadError, load_policy, make_policy, policy_names
from robot_learn.policies.discrete_diffusion import DiscreteDiffusionPolicy


def _policy(windows, **changes):
    torch.manual_seed(0)
    return make_policy("discrete_diffusion", tiny_config(**changes), stats_of(windows), instructions=INSTRUCTIONS)


@pytest.fixture(scope="module")
def overfit():
    """A policy trained to memorise four windows, and those windows."""
    torch.set_num_threads(1)
    windows = synthetic_windows()
    policy = _policy(windows)
    untrained = _policy(windows)
    losses = train(policy, batch_of(windows, repeat=8), steps=250)
    return policy, untrained, windows, losses


def test_registered_as_discrete_diffusion():
    assert "discrete_diffusion" in policy_names()
    policy = make_policy("discrete_diffusion", {"action_dim": 2, "state_dims": {"state": 3}, "use_language": False})
    assert isinstance(policy, DiscreteDiffusionPolicy)


def test_overfitting_a_tiny_dataset_recovers_the_exact_tokens(overfit):
    policy, _, windows, losses = overfit
    assert np.mean(losses[-10:]) < 0.1 * np.mean(losses[:10])
    batch = batch_of(windows)
    obs = {**batch["obs"], "instruction": batch["instruction"]}
    target, _ = policy.tokenizer.encode(batch["action"])
    for mode in ("maskgit", "adaptive", "parallel", "autoregressive"):
        policy.set_decoding(mode)
        tokens = policy.predict_tokens(obs, generator=torch.Generator().manual_seed(0))
        assert torch.equal(tokens, target.reshape(len(target), -1)), mode


def test_a_trained_policy_beats_an_untrained_one(overfit):
    policy, untrained, windows, _ = overfit
    batch = batch_of(windows)
    obs = {**batch["obs"], "instruction": batch["instruction"]}
    policy.set_decoding("maskgit")
    errors = {}
    for name, model in (("trained", policy), ("untrained", untrained.eval())):
        chunk = model.predict_action_chunk(obs, generator=torch.Generator().manual_seed(0))
        assert chunk.shape == (4, H, ACTION_DIM)
        errors[name] = float((chunk - batch["action"]).abs().mean())
    # The trained error is only the binning error (half a bin at most).
    assert errors["trained"] <= float(policy.tokenizer.bin_width.max()) / 2 + 1e-5
    assert errors["trained"] < 0.1 * errors["untrained"]


def test_language_decides_the_action_when_the_scene_is_identical():
    """Same state, two instructions asking for different chunks; blanking the
    instruction leaves the policy unable to tell them apart."""
    windows = synthetic_windows(n=2)
    windows["state"][1] = windows["state"][0]
    windows["instruction"] = list(INSTRUCTIONS)
    policy = _policy(windows)
    train(policy, batch_of(windows, repeat=16), steps=200)
    batch = batch_of(windows)
    target, _ = policy.tokenizer.encode(batch["action"])
    target = target.reshape(2, -1)
    tokens = policy.predict_tokens({**batch["obs"], "instruction": list(INSTRUCTIONS)})
    assert torch.equal(tokens, target)
    policy.set_decoding(choice_temperature=0.0)  # deterministic, so equal inputs give equal chunks
    blank = policy.predict_tokens({**batch["obs"], "instruction": ["", ""]})
    assert torch.equal(blank[0], blank[1])  # one answer for both scenes: it cannot be right for both
    assert not (torch.equal(blank, target))


def test_out_of_vocabulary_words_become_the_unknown_token(overfit):
    policy = overfit[0]
    tokens = policy.observation_tokens
    assert tokens.word_token_ids("move the zebra cube") == [tokens.word_ids["move"], tokens.word_ids["the"], 1,
                                                            tokens.word_ids["cube"]]
    assert tokens.word_token_ids("") == [1]
    obs = {"state": torch.zeros(2, 1, STATE_DIM), "instruction": ["flibber the wug!!", ""]}
    chunk = policy.predict_action_chunk(obs)
    assert torch.isfinite(chunk).all()


def test_prefix_cached_decoding_matches_a_full_pass():
    windows = synthetic_windows()
    policy = _policy(windows).eval()
    batch = batch_of(windows)
    prefix, pad = policy.observation_tokens({**batch["obs"], "instruction": ["move the", "move the red cube", "x", ""]})
    tokens = torch.randint(0, 33, (4, H * ACTION_DIM))
    full = policy._logits_full(prefix, pad, tokens)
    cache = policy.backbone.encode_prefix(prefix, pad)
    cached = policy.head(policy.backbone.forward_actions(policy._embed_actions(tokens), cache))
    assert torch.allclose(full, cached, atol=1e-5)


def test_clipped_fraction_reports_actions_outside_the_percentiles():
    windows = synthetic_windows()
    policy = _policy(windows)
    batch = batch_of(windows)
    inside = policy.compute_loss(batch)
    assert float(inside["clipped_fraction"]) <= 0.25  # only the extremes beyond q01/q99 of 16 values
    batch["action"] = batch["action"] + 100.0
    assert float(policy.compute_loss(batch)["clipped_fraction"]) == 1.0


def test_save_and_load_give_the_same_chunks(overfit, tmp_path):
    policy = overfit[0]
    policy.save(tmp_path / "p")
    loaded = load_policy(tmp_path / "p")
    assert loaded.config == policy.config
    obs = {"state": torch.zeros(2, 1, STATE_DIM), "instruction": list(INSTRUCTIONS)}
    policy.set_decoding("maskgit")
    a = policy.predict_action_chunk(obs, generator=torch.Generator().manual_seed(3))
    b = loaded.predict_action_chunk(obs, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a, b)


@pytest.mark.parametrize("field,value,message", [("num_bins", 64, "num_bins=32 but this config has num_bins=64"),
                                                 ("action_horizon", 8, "action_horizon=4 x action_dim=2 but this config "
                                                                       "has action_horizon=8")])
def test_a_checkpoint_with_another_bin_count_or_chunk_length_is_a_clear_error(overfit, tmp_path, field, value, message):
    overfit[0].save(tmp_path / "p")
    config_file = tmp_path / "p" / "config.yaml"
    document = yaml.safe_load(config_file.read_text())
    document["config"][field] = value
    if field == "action_horizon":
        document["config"]["execute_horizon"] = value
    config_file.write_text(yaml.safe_dump(document))
    with pytest.raises(PolicyLoadError, match=message):
        load_policy(tmp_path / "p")


def test_bad_settings_name_the_valid_choices():
    with pytest.raises(ValueError, match="unknown decoding 'greedy'; valid choices: maskgit, adaptive, parallel, autoregressive"):
        tiny_config(decoding="greedy")
    with pytest.raises(ValueError, match="unknown confidence 'entropy'; valid choices: prob, margin"):
        tiny_config(confidence="entropy")
    with pytest.raises(ValueError, match="unknown backbone 'llama'; valid choices: tiny, hf"):
        tiny_config(backbone="llama")
    with pytest.raises(ValueError, match="needs config.vocab or the dataset's instructions"):
        DiscreteDiffusionPolicy(tiny_config())
    with pytest.raises(ValueError, match=r"batch\['action'\] must be \[B, 4, 2\]"):
        _policy(synthetic_windows()).compute_loss({"obs": {"state": torch.zeros(1, 1, 3)}, "action": torch.zeros(1, 3, 2),
                                                   "instruction": ["x"]})


def test_image_policy_acts_from_env_style_observations():
    windows = synthetic_windows()
    policy = _policy(windows, camera_names=["front", "wrist"]).eval()
    assert policy.observation_tokens.stem.num_patches == 4  # 20 -> 10 (stride 2) -> 2x2 patches of 5
    policy.reset()
    rng = np.random.default_rng(0)
    obs = {"state": rng.normal(size=(3, STATE_DIM)).astype(np.float32),
           "images": {c: rng.integers(0, 255, (3, 24, 24, 3), dtype=np.uint8) for c in ("front", "wrist")},
           "instruction": "move the red cube"}
    action = policy.select_action(obs)
    assert action.shape == (3, ACTION_DIM)
    assert policy.last_nfe == 4


def test_hl_gauss_training_also_recovers_the_chunks_to_within_a_bin():
    torch.set_num_threads(1)
    windows = synthetic_windows()
    policy = _policy(windows, label_sigma_bins=1.0)
    untrained_error = float((policy.predict_action_chunk({**batch_of(windows)["obs"], "instruction": windows["instruction"]})
                             - batch_of(windows)["action"]).abs().mean())
    train(policy, batch_of(windows, repeat=8), steps=250)
    batch = batch_of(windows)
    target, _ = policy.tokenizer.encode(batch["action"])
    policy.set_decoding("maskgit")
    tokens = policy.predict_tokens({**batch["obs"], "instruction": batch["instruction"]},
                                   generator=torch.Generator().manual_seed(0))
    assert int((tokens - target.reshape(len(target), -1)).abs().max()) <= 1
    error = float((policy.tokenizer.decode(tokens.reshape(target.shape)) - batch["action"]).abs().mean())
    assert error < 0.1 * untrained_error
