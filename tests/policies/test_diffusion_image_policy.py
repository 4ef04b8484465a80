"""Image + language diffusion policy: cameras, crops, instructions, presets."""

import pytest
import torch
from policy_fixtures import ACTION_DIM, STATE_DIM, TA, TO, tiny_config

from robot_learn.policies import (
    DiffusionConfig,
    VocabTextEncoder,
    diffusion_image_config,
    diffusion_state_config,
    load_policy,
    make_policy,
)

INSTRUCTIONS = ["put the red cube on the blue cube", "put the green cube on the red cube", "insert the peg into the hole"]


def _image_config(**changes):
    return tiny_config(state_dims={"state": STATE_DIM}, camera_names=["front", "wrist"], text_encoder="vocab", **changes)


def _batch(b=4, size=24):
    g = torch.Generator().manual_seed(0)
    return {
        "obs": {
            "state": torch.randn(b, TO, STATE_DIM, generator=g),
            "images": {c: torch.randint(0, 256, (b, TO, size, size, 3), generator=g, dtype=torch.uint8) for c in ("front", "wrist")},
        },
        "action": torch.randn(b, TA, ACTION_DIM, generator=g),
        "instruction": [INSTRUCTIONS[i % 2] for i in range(b)],
    }


@pytest.fixture
def policy(stats):
    torch.manual_seed(0)
    return make_policy("diffusion", _image_config(), stats, instructions=INSTRUCTIONS)


def test_vocabulary_is_built_from_instructions_and_stored_in_config(policy):
    assert policy.config.vocab == sorted({w for text in INSTRUCTIONS for w in text.split()})
    assert isinstance(policy.obs_encoder.text_encoder, VocabTextEncoder)


def test_forward_backward_reaches_cameras_text_and_denoiser(policy):
    policy.train()
    loss = policy.compute_loss(_batch())["loss"]
    assert torch.isfinite(loss)
    loss.backward()
    for name in ("obs_encoder.vision_encoders.front", "obs_encoder.vision_encoders.wrist", "obs_encoder.text_encoder", "denoiser"):
        grads = [p.grad for n, p in policy.named_parameters() if n.startswith(name)]
        assert grads and any(g is not None and g.abs().sum() > 0 for g in grads), name


def test_training_crops_randomly_and_eval_crops_the_centre(policy):
    obs = {**_batch()["obs"], "instruction": _batch()["instruction"]}
    encoder = policy.obs_encoder
    encoder.train()
    torch.manual_seed(1)
    a, _ = encoder(obs)
    b, _ = encoder(obs)
    assert not torch.allclose(a, b)  # different random crops
    encoder.eval()
    c, _ = encoder(obs)
    d, _ = encoder(obs)
    assert torch.equal(c, d)
    policy.eval()
    g = torch.Generator
    assert torch.equal(policy.predict_action_chunk(obs, g().manual_seed(0)), policy.predict_action_chunk(obs, g().manual_seed(0)))


def test_different_instructions_change_the_predicted_actions(policy):
    policy.eval()
    obs = _batch(b=1)["obs"]
    red = policy.predict_action_chunk({**obs, "instruction": [INSTRUCTIONS[0]]}, torch.Generator().manual_seed(0))
    green = policy.predict_action_chunk({**obs, "instruction": [INSTRUCTIONS[1]]}, torch.Generator().manual_seed(0))
    again = policy.predict_action_chunk({**obs, "instruction": [INSTRUCTIONS[0]]}, torch.Generator().manual_seed(0))
    assert torch.equal(red, again)
    assert (red - green).abs().max() > 1e-4


def test_unknown_words_map_to_unk(policy):
    encoder = policy.obs_encoder.text_encoder
    assert encoder.token_ids("put the purple cube") == [encoder.word_ids["put"], encoder.word_ids["the"], 1, encoder.word_ids["cube"]]


def test_image_language_policy_round_trips_through_save_and_load(policy, tmp_path):
    policy.save(tmp_path / "p")
    loaded = load_policy(tmp_path / "p", obs_shapes={"state": (STATE_DIM,), "images": {"front": (24, 24, 3), "wrist": (24, 24, 3)}})
    assert loaded.config.vocab == policy.config.vocab
    obs = {**_batch(b=2)["obs"], "instruction": INSTRUCTIONS[:2]}
    policy.eval()
    assert torch.equal(policy.predict_action_chunk(obs, torch.Generator().manual_seed(0)), loaded.predict_action_chunk(obs, torch.Generator().manual_seed(0)))


def test_select_action_takes_images_and_a_single_instruction_string(policy):
    policy.eval()
    obs = _batch(b=2)["obs"]
    step = {"state": obs["state"][:, 0], "images": {c: v[:, 0] for c, v in obs["images"].items()}, "instruction": INSTRUCTIONS[0]}
    assert policy.select_action(step).shape == (2, ACTION_DIM)


def test_shared_vision_encoder_has_one_backbone(stats):
    policy = make_policy("diffusion", _image_config(share_vision_encoder=True), stats, instructions=INSTRUCTIONS)
    assert list(policy.obs_encoder.vision_encoders) == ["shared"]
    assert torch.isfinite(policy.compute_loss(_batch())["loss"])


def test_vision_film_makes_camera_features_depend_on_the_instruction(stats):
    torch.manual_seed(0)
    policy = make_policy("diffusion", _image_config(vision_film=True), stats, instructions=INSTRUCTIONS)
    film = {n: p for n, p in policy.named_parameters() if n.startswith("obs_encoder.vision_encoders.") and ".film." in n}
    assert len(film) == 2 * 2 * len(policy.config.vision_channels)  # weight + bias per stage per camera
    policy.train()
    loss = policy.compute_loss(_batch())["loss"]
    loss.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in film.values())
    with torch.no_grad():  # move FiLM off its zero start; then the same images encode differently per instruction
        for p in film.values():
            p.normal_(0, 0.1)
    policy.eval()
    obs = _batch()["obs"]
    a, _ = policy.obs_encoder({**obs, "instruction": [INSTRUCTIONS[0]] * 4})
    b, _ = policy.obs_encoder({**obs, "instruction": [INSTRUCTIONS[1]] * 4})
    camera_part = slice(policy.obs_encoder.step_dim - 2 * policy.config.vision_feature_dim, None)
    assert (a[..., camera_part] - b[..., camera_part]).abs().mean() > 1e-3


def test_vision_film_without_text_or_cameras_is_rejected():
    with pytest.raises(ValueError, match="vision_film conditions the cameras on the instruction"):
        tiny_config(state_dims={"state": STATE_DIM}, camera_names=["front"], vision_film=True)
    with pytest.raises(ValueError, match="vision_film conditions the cameras on the instruction"):
        tiny_config(vision_film=True)


def test_missing_camera_or_instruction_is_named(policy):
    batch = _batch()
    del batch["obs"]["images"]["wrist"]
    with pytest.raises(ValueError, match="lacks camera 'wrist'"):
        policy.compute_loss(batch)
    batch = _batch()
    del batch["instruction"]
    with pytest.raises(ValueError, match="needs 'instruction'"):
        policy.compute_loss(batch)


def test_vocab_policy_without_vocab_or_instructions_is_rejected(stats):
    with pytest.raises(ValueError, match="needs config.vocab or the dataset's instructions"):
        make_policy("diffusion", _image_config(), stats)


def test_presets_match_the_cli_policies():
    state = diffusion_state_config()
    assert state.state_dims == {"state": 10, "env_state": 14} and state.camera_names == [] and state.text_encoder == "none"
    image = diffusion_image_config()
    assert image.state_dims == {"state": 10} and image.camera_names == ["front", "wrist"] and image.text_encoder == "vocab"
    assert (state.obs_horizon, image.obs_horizon) == (2, 1)
    assert image.vision_channels == [16, 32, 64] and image.vision_blocks_per_stage == 1
    for config in (state, image):
        assert config.denoiser == "unet" and (config.action_horizon, config.execute_horizon) == (16, 8)
        assert config.inference_scheduler == "ddim" and config.num_inference_steps == 10
    assert isinstance(diffusion_image_config(down_dims=[32, 64]), DiffusionConfig)


def test_image_preset_builds_a_policy_for_the_env_shapes():
    policy = make_policy("diffusion", diffusion_image_config(vision_channels=[8, 16], down_dims=[32, 64]), None, instructions=INSTRUCTIONS)
    assert policy.obs_shapes == {"state": (10,), "images/front": (96, 96, 3), "images/wrist": (96, 96, 3)}
    policy.eval()
    obs = {
        "state": torch.zeros(1, 1, 10),
        "images": {c: torch.zeros(1, 1, 96, 96, 3, dtype=torch.uint8) for c in ("front", "wrist")},
        "instruction": [INSTRUCTIONS[0]],
    }
    assert policy.predict_action_chunk(obs).shape == (1, 16, 5)
