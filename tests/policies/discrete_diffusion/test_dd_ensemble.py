"""The discrete-diffusion ensemble: members train on their own rows, decode as one, share the frame encoder."""

import copy

import numpy as np
import pytest
import torch
from dd_fixtures import INSTRUCTIONS, STATE_DIM, batch_of, stats_of, synthetic_windows, tiny_config, train

from robot_learn.policies import load_policy, make_policy
from robot_learn.policies.discrete_diffusion import DiscreteDiffusionEnsemble, DiscreteDiffusionEnsembleConfig
from robot_learn.policies.frame_encoder import FEATURES_KEY
from robot_learn.training.policy_builder import policy_name_for_config


def _ensemble(windows, members: int = 2, stats=None, **changes) -> DiscreteDiffusionEnsemble:
    torch.manual_seed(0)
    fields = tiny_config(**changes).__dict__
    return make_policy("discrete_diffusion_ensemble", DiscreteDiffusionEnsembleConfig(**fields, members=members),
                       stats or stats_of(windows), instructions=INSTRUCTIONS)


def _obs(batch):
    return {**batch["obs"], "instruction": batch["instruction"]}


def test_an_ensemble_config_builds_the_ensemble_and_members_start_apart():
    windows = synthetic_windows()
    policy = _ensemble(windows, members=3)
    assert policy_name_for_config(policy.config) == "discrete_diffusion_ensemble"
    assert policy_name_for_config(policy.config.member_config()) == "discrete_diffusion"
    first, second = (dict(m.named_parameters())["action_position"] for m in policy.members[:2])
    assert not torch.equal(first, second)


def test_each_member_learns_from_its_own_share_of_the_batch():
    windows = synthetic_windows(n=4)
    policy = _ensemble(windows)
    batch = batch_of(windows)
    grads = []
    for shift in (0.0, 1.0):  # the odd rows' actions change: only member 1's gradient may
        changed = copy.deepcopy(batch)
        changed["action"][1::2] += shift
        policy.zero_grad()
        torch.manual_seed(0)
        policy.compute_loss(changed)["loss"].backward()
        grads.append([m.head[1].weight.grad.clone() for m in policy.members])
    assert torch.equal(grads[0][0], grads[1][0])
    assert not torch.equal(grads[0][1], grads[1][1])


def test_a_trained_ensemble_decodes_the_memorised_chunks_and_survives_save_and_load(tmp_path):
    torch.set_num_threads(1)
    windows = synthetic_windows()
    policy = _ensemble(windows)
    losses = train(policy, batch_of(windows, repeat=8), steps=250)
    assert np.mean(losses[-10:]) < 0.1 * np.mean(losses[:10])
    batch = batch_of(windows)
    target, _ = policy.tokenizer.encode(batch["action"])
    policy.set_decoding("maskgit")
    tokens = policy.predict_tokens(_obs(batch), generator=torch.Generator().manual_seed(0))
    assert torch.equal(tokens, target.reshape(len(target), -1))
    assert policy.last_nfe == policy.config.decoding_rounds

    policy.save(tmp_path / "ens")
    loaded = load_policy(tmp_path / "ens", expected_type="discrete_diffusion_ensemble")
    assert loaded.config == policy.config
    obs = {"state": torch.zeros(2, 1, STATE_DIM), "instruction": list(INSTRUCTIONS)}
    a = policy.predict_action_chunk(obs, generator=torch.Generator().manual_seed(3))
    b = loaded.predict_action_chunk(obs, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a, b)


def test_an_ensemble_of_identical_members_decodes_as_that_member():
    windows = synthetic_windows()
    policy = _ensemble(windows, members=3, token_temperature=1.0)
    for member in policy.members[1:]:
        member.load_state_dict(policy.members[0].state_dict())
    alone = policy.members[0]
    obs = _obs(batch_of(windows))
    for mode in ("maskgit", "parallel"):
        policy.set_decoding(mode)
        alone.set_decoding(mode)
        ours = policy.predict_tokens(obs, generator=torch.Generator().manual_seed(1))
        theirs = alone.predict_tokens(obs, generator=torch.Generator().manual_seed(1))
        assert (ours == theirs).float().mean() > 0.95, mode  # equal up to float ties in the sampled tokens


def test_an_ensemble_scores_its_decoding_trace_for_grpo_through_every_member():
    from robot_learn.loops.grpo import check_grpo_policy

    windows = synthetic_windows()
    policy = _ensemble(windows, members=3, token_temperature=1.0)
    check_grpo_policy(policy)  # it has token log-probabilities now
    obs = _obs(batch_of(windows))
    policy.eval()
    policy.predict_tokens(obs, generator=torch.Generator().manual_seed(1), keep_trace=True)
    trace = torch.stack(policy.last_decode.trace, dim=1)  # [B, K, L]
    log_probs, committed = policy.trace_log_probs(obs, trace, temperature=0.7)
    assert log_probs.shape == committed.shape == trace.shape
    assert bool((log_probs <= 0).all()) and bool((log_probs[~committed] == 0).all())
    assert int(committed.sum()) >= trace.shape[0] * trace.shape[2]  # every token committed at least once
    log_probs.sum().backward()
    assert all(m.head[1].weight.grad.abs().sum() > 0 for m in policy.members)
    # Identical members: the product of experts is that member's own distribution.
    for member in policy.members[1:]:
        member.load_state_dict(policy.members[0].state_dict())
    ours, _ = policy.trace_log_probs(obs, trace, temperature=0.7)
    theirs, _ = policy.members[0].trace_log_probs(obs, trace, temperature=0.7)
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="temperature must be > 0"):
        policy.trace_log_probs(obs, trace, temperature=0.0)


ENCODER = dict(cameras=["front"], image_size=32, channels=[8, 16], num_keypoints=8, camera_dim=16,
               feature_dim=12, vocab=["move", "the", "red", "blue", "cube"], text_dim=8, label_names=["x", "y"])


def _pixel_stats() -> dict:
    stats = stats_of(synthetic_windows())
    stats[FEATURES_KEY] = {k: np.zeros(12) if k in ("min", "mean", "q01") else np.ones(12)
                           for k in ("min", "max", "mean", "std", "q01", "q99")}
    return stats


def test_the_frame_encoder_is_held_once_and_encodes_once_for_all_members():
    policy = _ensemble(synthetic_windows(), stats=_pixel_stats(), frame_encoder=ENCODER)
    assert policy.frame_encoder is not None and all(m.frame_encoder is None for m in policy.members)
    assert sum(k.startswith("members.") and ".frame_encoder." in k for k in policy.state_dict()) == 0
    assert policy.obs_shapes == {"state": (STATE_DIM,), "images/front": (32, 32, 3)}
    calls = []
    policy.frame_encoder.cameras["front"].register_forward_hook(lambda *_: calls.append(1))  # its image trunk
    obs = {"state": torch.zeros(2, 1, STATE_DIM), "images": {"front": torch.zeros(2, 1, 32, 32, 3, dtype=torch.uint8)},
           "instruction": list(INSTRUCTIONS)}
    assert policy.predict_action_chunk(obs).shape == (2, 4, 2)
    assert len(calls) == 1


def test_an_ensemble_fine_tunes_its_shared_encoder_end_to_end_from_every_members_loss():
    policy = _ensemble(synthetic_windows(), stats=_pixel_stats(), frame_encoder=ENCODER)
    names = policy.frame_encoder.encoding_parameter_names()
    for name, parameter in policy.frame_encoder.named_parameters():
        parameter.requires_grad_(name in names)  # what encoder fine-tuning unfreezes
    assert policy.encoder_trainable and "images/front" in policy.training_obs_keys
    batch = batch_of(synthetic_windows())
    batch["obs"]["images"] = {"front": torch.randint(0, 256, (4, 1, 32, 32, 3), dtype=torch.uint8)}
    policy.train()
    torch.manual_seed(0)  # the same training masks in both backward passes below
    policy.compute_loss(batch)["loss"].backward()
    trunk = policy.frame_encoder.cameras["front"]
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in trunk.parameters() if p.requires_grad)
    assert all(m.head[1].weight.grad.abs().sum() > 0 for m in policy.members)
    # Member 1's loss reaches the encoder: changing only its rows' targets changes the encoder's gradient.
    full = next(trunk.parameters()).grad.clone()
    policy.zero_grad()
    rows = {**batch, "action": batch["action"].clone()}
    rows["action"][1::2] += 1.0  # only member 1 (odd rows) sees different targets
    torch.manual_seed(0)
    policy.compute_loss(rows)["loss"].backward()
    assert not torch.allclose(next(trunk.parameters()).grad, full)


def test_bad_member_counts_and_batches_too_small_to_share_are_named():
    with pytest.raises(ValueError, match="members must be >= 1, got 0"):
        DiscreteDiffusionEnsembleConfig(**tiny_config().__dict__, members=0)
    windows = synthetic_windows(n=2)
    policy = _ensemble(windows, members=3)
    with pytest.raises(ValueError, match="a batch of 2 windows cannot give each of 3 ensemble members"):
        policy.compute_loss(batch_of(windows))


def test_separately_trained_policies_combine_and_each_member_comes_back_alone():
    windows = synthetic_windows()
    torch.manual_seed(0)
    singles = [make_policy("discrete_diffusion", tiny_config(), stats_of(windows), instructions=INSTRUCTIONS)
               for _ in range(2)]
    for k, single in enumerate(singles):
        train(single, batch_of(windows, repeat=4), steps=20, seed=k)
    ensemble = DiscreteDiffusionEnsemble.from_members(singles)
    assert ensemble.config.members == 2
    obs = _obs(batch_of(windows))
    for k, single in enumerate(singles):
        alone = ensemble.member_policy(k)
        assert alone.config == single.config
        for policy in (alone, single):
            policy.set_decoding("maskgit")
        assert torch.equal(alone.predict_tokens(obs, generator=torch.Generator().manual_seed(2)),
                           single.predict_tokens(obs, generator=torch.Generator().manual_seed(2)))
    other = make_policy("discrete_diffusion", tiny_config(num_bins=16), stats_of(windows), instructions=INSTRUCTIONS)
    with pytest.raises(ValueError, match=r"ensemble member 1 \('discrete_diffusion'\) differs from member 0 in \['num_bins'\]"):
        DiscreteDiffusionEnsemble.from_members([singles[0], other])


def test_members_with_different_frame_encoders_are_refused():
    singles = [make_policy("discrete_diffusion", tiny_config(frame_encoder=ENCODER), _pixel_stats(),
                           instructions=INSTRUCTIONS) for _ in range(2)]
    with pytest.raises(ValueError, match="ensemble member 1's frame encoder has other weights than member 0's"):
        DiscreteDiffusionEnsemble.from_members(singles)
