"""The shared frame encoder: identity, checkpoints, bad frames, and its place in policies."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robot_learn.policies import make_policy
from robot_learn.policies.diffusion import diffusion_pixels_config
from robot_learn.policies.discrete_diffusion import discrete_diffusion_pixels_config
from robot_learn.policies.frame_encoder import FEATURES_KEY, FrameEncoder, FrameEncoderConfig

TINY = dict(cameras=["front"], image_size=32, channels=[8, 16], num_keypoints=8, camera_dim=16, feature_dim=12,
            vocab=["put", "red", "cube"], text_dim=8, label_names=["x", "y"])
LATENT = {**TINY, "output": "latent"}
LABELS = {**TINY, "output": "labels"}


def _stats(feature_dim: int) -> dict:
    def s(d: int) -> dict:
        return {"min": -np.ones(d), "max": np.ones(d), "mean": np.zeros(d), "std": np.ones(d),
                "q01": -np.ones(d), "q99": np.ones(d)}
    return {"state": s(10), FEATURES_KEY: s(feature_dim), "action": s(5)}


def _frames(n: int = 3, size: int = 32) -> dict[str, torch.Tensor]:
    return {"front": torch.randint(0, 255, (n, size, size, 3), dtype=torch.uint8)}


def test_identity_follows_weights_and_survives_save_and_load(tmp_path):
    torch.manual_seed(0)
    encoder = FrameEncoder(FrameEncoderConfig(**TINY))
    encoder.save(tmp_path / "enc")
    loaded = FrameEncoder.load(tmp_path / "enc")
    assert loaded.identity() == encoder.identity()
    frames = _frames()
    assert torch.equal(loaded(frames, ["put red cube"] * 3), encoder.eval()(frames, ["put red cube"] * 3))
    with torch.no_grad():
        encoder.fuse[0].weight.add_(1e-3)
    assert encoder.identity() != loaded.identity()


def test_frame_at_another_resolution_is_refused_naming_camera_and_sizes():
    encoder = FrameEncoder(FrameEncoderConfig(**TINY))
    with pytest.raises(ValueError, match=r"camera 'front' frames are \(48, 48, 3\).*\(32, 32, 3\)"):
        encoder(_frames(size=48), ["put red cube"] * 3)


def test_missing_camera_is_refused_naming_it():
    encoder = FrameEncoder(FrameEncoderConfig(**{**TINY, "cameras": ["front", "wrist"]}))
    with pytest.raises(ValueError, match=r"lacks \['wrist'\]"):
        encoder(_frames(), ["put red cube"] * 3)


def test_loading_a_non_encoder_directory_names_it(tmp_path):
    (tmp_path / "config.yaml").write_text("type: diffusion\n")
    with pytest.raises(ValueError, match=str(tmp_path)):
        FrameEncoder.load(tmp_path)


def test_unknown_frame_encoder_setting_is_named():
    with pytest.raises(ValueError, match=r"unknown frame_encoder setting\(s\) \['camras'\]"):
        diffusion_pixels_config(frame_encoder={"camras": ["front"]})


def test_too_few_pretraining_steps_are_refused_naming_the_setting():
    with pytest.raises(ValueError, match=r"frame_pretraining.steps must be >= 3.*steps=2"):
        diffusion_pixels_config(frame_pretraining={"steps": 2})


@pytest.mark.parametrize("steps", [3, 20, 40])
def test_pretraining_runs_at_any_allowed_step_count(steps):
    """20 steps once crashed the learning-rate schedule (a warm-up of 0 steps)."""
    from robot_learn.policies.frame_encoder import FramePretrainConfig
    from robot_learn.training.frame_pretraining import pretrain_frame_encoder

    rng = np.random.default_rng(0)
    images = {"front": rng.integers(0, 255, (24, 32, 32, 3), dtype=np.uint8)}
    labels = rng.normal(size=(24, 2)).astype(np.float32)
    encoder, metrics = pretrain_frame_encoder(images, labels, ["put red cube"] * 24, FrameEncoderConfig(**LABELS),
                                              FramePretrainConfig(steps=steps, batch_size=4))
    assert metrics["steps"] == steps and np.isfinite(metrics["val_loss"])


def test_held_out_metrics_include_the_grasp_offset_on_approach_frames_only():
    """The encoder predicts its label means (a zeroed head): the offset error is the true
    offset on frames where the open gripper is within 5 cm of the object, and no other."""
    from robot_learn.training.frame_pretraining import evaluate_frame_encoder

    names = ["move_x", "move_y", "tcp_x", "tcp_y", "gripper"]
    encoder = FrameEncoder(FrameEncoderConfig(**{**LABELS, "label_names": names})).eval()
    torch.nn.init.zeros_(encoder.label_head.weight)
    torch.nn.init.zeros_(encoder.label_head.bias)
    labels = np.array([[0.01, 0.0, 0.0, 0.0, 0.0],    # approach, 1 cm off: counted
                       [0.20, 0.0, 0.0, 0.0, 0.0],    # 20 cm away: not counted
                       [0.0, 0.03, 0.0, 0.0, 1.0],    # closed gripper (holding it): not counted
                       [0.0, 0.0, 0.0, -0.02, 0.0]], dtype=np.float32)  # approach, 2 cm off
    images = {"front": np.zeros((4, 32, 32, 3), dtype=np.uint8)}
    metrics = evaluate_frame_encoder(encoder, images, labels, ["put red cube"] * 4)
    assert metrics["grasp_frames"] == 2
    assert metrics["grasp_offset_error_cm_median"] == pytest.approx(1.5, abs=1e-4)
    assert metrics["move_xy_error_cm_median"] == pytest.approx(2.0, abs=1e-4)  # of 1, 20, 3, 0 cm


def test_held_out_metrics_give_the_goal_error_and_split_by_task():
    """A zeroed head predicts the label means (zero): the goal error is the true goal's
    distance; pretraining given each frame's task also reports every task's metrics."""
    from robot_learn.policies.frame_encoder import FramePretrainConfig
    from robot_learn.training.frame_pretraining import evaluate_frame_encoder, pretrain_frame_encoder

    names = ["move_x", "move_y", "goal_x", "goal_y"]
    encoder = FrameEncoder(FrameEncoderConfig(**{**LABELS, "label_names": names})).eval()
    torch.nn.init.zeros_(encoder.label_head.weight)
    torch.nn.init.zeros_(encoder.label_head.bias)
    labels = np.array([[0.0, 0.0, 0.03, 0.0], [0.0, 0.0, 0.0, -0.05]], dtype=np.float32)
    images = {"front": np.zeros((2, 32, 32, 3), dtype=np.uint8)}
    metrics = evaluate_frame_encoder(encoder, images, labels, ["put red cube"] * 2)
    assert metrics["goal_xy_error_cm_median"] == pytest.approx(4.0, abs=1e-4)  # of 3 and 5 cm

    n = 24
    rng = np.random.default_rng(0)
    images = {"front": rng.integers(0, 255, (n, 32, 32, 3), dtype=np.uint8)}
    labels = rng.normal(size=(n, 4)).astype(np.float32)
    tasks = ["stack" if i % 2 == 0 else "unstack" for i in range(n)]
    config = FramePretrainConfig(steps=3, batch_size=4, val_fraction=0.5)
    settings = FrameEncoderConfig(**{**LABELS, "label_names": names})
    _, metrics = pretrain_frame_encoder(images, labels, ["put red cube"] * n, settings, config, tasks=tasks)
    assert set(metrics["per_task"]) == {"stack", "unstack"}
    assert all(np.isfinite(m["goal_xy_error_cm_median"]) for m in metrics["per_task"].values())
    _, metrics = pretrain_frame_encoder(images, labels, ["put red cube"] * n, settings, config)
    assert "per_task" not in metrics


@pytest.mark.parametrize("preset", [diffusion_pixels_config, discrete_diffusion_pixels_config])
def test_pixel_presets_deploy_from_cameras_state_and_words_only(preset):
    """Inference keys are cameras, state and instruction; training reads cached features."""
    config = preset(frame_encoder=LATENT, **({"state_tokens": {FEATURES_KEY: 2}} if "discrete" in preset.__name__ else {}))
    name = "discrete_diffusion" if "discrete" in preset.__name__ else "diffusion"
    policy = make_policy(name, config, _stats(12), instructions=["put red cube"])
    assert set(policy.obs_shapes) == {"state", "images/front"}
    assert set(policy.training_obs_keys) == {"state", FEATURES_KEY}
    obs = {"state": np.zeros((2, 10), np.float32), "images": {"front": np.zeros((2, 32, 32, 3), np.uint8)},
           "instruction": ["put red cube", "put red cube"]}
    assert tuple(policy.select_action(obs).shape) == (2, 5)


def test_policy_features_equal_the_cached_features_of_the_same_encoder():
    """Training on cached features and deploying on frames must see the same numbers."""
    config = diffusion_pixels_config(frame_encoder=LATENT)
    policy = make_policy("diffusion", config, _stats(12))
    encoder = FrameEncoder(FrameEncoderConfig(**LATENT)).eval()
    policy.frame_encoder.load_state_dict(encoder.state_dict())
    frames = _frames(4)
    with torch.no_grad():
        cached = encoder(frames, ["put red cube"] * 4)
    obs = {"images": {"front": frames["front"].reshape(2, 2, 32, 32, 3)}, "instruction": ["put red cube"] * 2}
    live = policy.with_frame_features(obs)[FEATURES_KEY]
    assert torch.allclose(live.reshape(4, -1), cached, atol=1e-6)


def test_an_unfrozen_encoder_reads_frames_not_the_cache_and_takes_the_policy_gradient():
    """End-to-end fine-tuning: with the encoder's parameters taking gradients, training
    batches carry its cameras instead of cached features, a stale cached value in the batch
    is ignored, and the policy's loss reaches the encoder's weights."""
    config = diffusion_pixels_config(frame_encoder=LATENT)
    policy = make_policy("diffusion", config, _stats(12))
    assert not policy.encoder_trainable
    policy.frame_encoder.requires_grad_(True)
    assert policy.encoder_trainable and set(policy.training_obs_keys) == {"state", "images/front"}
    frames = _frames(4)
    obs = {"images": {"front": frames["front"].reshape(2, 2, 32, 32, 3)}, "instruction": ["put red cube"] * 2,
           FEATURES_KEY: torch.full((2, 2, 12), 7.0)}
    live = policy.with_frame_features(obs)[FEATURES_KEY]
    assert live.requires_grad and not torch.allclose(live, obs[FEATURES_KEY])
    live.square().sum().backward()
    reached = {n.split(".")[0] for n, p in policy.frame_encoder.named_parameters()
               if p.grad is not None and p.grad.abs().sum() > 0}
    assert reached >= {"cameras", "fuse"}, reached  # every camera's network and the fusion


def test_the_vla_loss_reaches_an_unfrozen_encoder():
    """The discrete-diffusion VLA fine-tunes its encoder end to end the same way: its
    masked-token loss, on a batch of raw frames, puts gradient on the encoder's weights."""
    config = discrete_diffusion_pixels_config(frame_encoder=LATENT, hidden_dim=16, num_layers=1, num_heads=2)
    policy = make_policy("discrete_diffusion", config, _stats(12), instructions=["put red cube"])
    policy.frame_encoder.requires_grad_(True)
    assert set(policy.training_obs_keys) == {"state", "images/front"}
    batch = {"obs": {"state": torch.zeros(2, 1, 10), "images": {"front": _frames(2)["front"][:, None]}},
             "instruction": ["put red cube"] * 2, "action": torch.rand(2, policy.action_horizon, 5) * 2 - 1}
    policy.compute_loss(batch)["loss"].backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in policy.frame_encoder.parameters())


def test_labels_output_gives_policies_the_predicted_scene_labels():
    config = diffusion_pixels_config(frame_encoder=LABELS)
    assert config.state_dims[FEATURES_KEY] == 2  # one per label name
    encoder = FrameEncoder(FrameEncoderConfig(**LABELS)).eval()
    with torch.no_grad():
        encoder.label_mean.copy_(torch.tensor([0.2, -0.1]))
        frames = _frames()
        expected = encoder.predict_labels(encoder(frames, ["put red cube"] * 3))
        assert torch.allclose(encoder.encode(frames, ["put red cube"] * 3), expected)


def test_poses_output_gives_policies_the_predicted_object_poses_only():
    from robot_learn.envs.base_env import SCENE_LABELS
    from robot_learn.policies.frame_encoder import POSE_LABELS

    settings = {**LABELS, "label_names": list(SCENE_LABELS), "output": "poses"}
    assert diffusion_pixels_config(frame_encoder=settings).state_dims[FEATURES_KEY] == len(POSE_LABELS)
    encoder = FrameEncoder(FrameEncoderConfig(**settings)).eval()
    with torch.no_grad():
        encoder.label_mean.copy_(torch.arange(len(SCENE_LABELS), dtype=torch.float32))
        frames = _frames()
        labels = encoder.predict_labels(encoder(frames, ["put red cube"] * 3))
        poses = encoder.encode(frames, ["put red cube"] * 3)
    assert torch.allclose(poses, labels[:, [SCENE_LABELS.index(n) for n in POSE_LABELS]])


def test_fine_tuning_trains_only_what_encode_reads():
    """The privileged label head is a pretraining head when policies read the latent; DDP refuses
    parameters that take no gradient, so fine-tuning leaves it out (and keeps it for ``labels``)."""
    latent = FrameEncoder(FrameEncoderConfig(**LATENT)).encoding_parameter_names()
    labels = FrameEncoder(FrameEncoderConfig(**LABELS)).encoding_parameter_names()
    assert not any(n.startswith("label_head.") for n in latent) and any(n.startswith("fuse.") for n in latent)
    assert labels - latent == {"label_head.weight", "label_head.bias"}


def test_label_names_pick_columns_of_the_scene_labels_and_unknown_names_are_refused():
    """An encoder may learn a subset of the scene labels (e.g. without the goal); the
    rendered labels are sliced to it, and a misspelt name is a one-line error."""
    from robot_learn.envs.base_env import SCENE_LABELS
    from robot_learn.training.frame_features import scene_label_columns

    assert scene_label_columns(["goal_x", "move_x"]) == [SCENE_LABELS.index("goal_x"), 0]
    with pytest.raises(ValueError, match=r"unknown labels \['gaol_x'\]; valid: move_x"):
        scene_label_columns(["move_x", "gaol_x"])
