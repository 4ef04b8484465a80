"""``robot-learn eval save_episodes=PATH``: the evaluated episodes appended to a store, and the
one-line errors for a path that is no store or a store of other frames (nothing written).
Real MuJoCo and zarr, a tiny untrained image policy."""

import json

import pytest

from robot_learn.data import EpisodeStore
from robot_learn.policies import make_policy
from robot_learn.policies.diffusion import diffusion_image_config

EVAL = ["task=stack", "workers=2", "videos=1", "max_steps=4"]


@pytest.fixture()
def image_policy(tmp_path):
    config = diffusion_image_config(image_size=32, crop_size=28, vision_channels=[8, 8], vision_feature_dim=16,
                                    text_dim=16, down_dims=[16, 32], action_horizon=8, execute_horizon=4,
                                    num_inference_steps=2, timestep_embed_dim=16, camera_names=["front"])
    make_policy("diffusion", config, instructions=["stack the red cube on the blue cube"]).save(tmp_path / "img")
    return tmp_path


def test_eval_appends_every_episode_with_its_seed_success_and_frames(image_policy, run_cli):
    tmp = image_policy
    out = run_cli("eval", "checkpoint=img", *EVAL, "episodes=3", "save_episodes=rollouts.zarr", "out_dir=ev1",
                  timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "3 episodes appended to rollouts.zarr (3 in it now)" in out.stdout
    report = json.loads((tmp / "ev1" / "report.json").read_text())["tasks"]["stack"]["per_episode"]
    with EpisodeStore.open(tmp / "rollouts.zarr", mode="r") as store:
        assert list(store.meta["seed"]) == [1_000_000, 1_000_001, 1_000_002]
        assert [bool(s) for s in store.meta["success"]] == [e["success"] for e in report]
        assert [store.episode_range(i)[1] - store.episode_range(i)[0] for i in range(3)] == [e["length"] for e in report]
        assert set(store.meta["source"]) == {"rollout"} and set(store.meta["policy_id"]) == {"img"}
        # Only the policy's camera, though the first wave also rendered the wrist for its video.
        assert {k for k in store.keys if k.startswith("images/")} == {"images/front"}
        assert store.read("images/front", 0, 1).shape == (1, 32, 32, 3)
        # The low-dim keys of collect_demos' stores, so rollouts append to a demo store of the same frames.
        assert {"state", "env_state", "action", "reward", "progress"} <= set(store.keys)
        assert "objects" not in store.keys
    again = run_cli("eval", "checkpoint=img", *EVAL, "episodes=2", "seed=1000100", "save_episodes=rollouts.zarr",
                    "out_dir=ev2", timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    with EpisodeStore.open(tmp / "rollouts.zarr", mode="r") as store:
        assert list(store.meta["seed"]) == [1_000_000, 1_000_001, 1_000_002, 1_000_100, 1_000_101]


def test_a_path_that_is_no_store_is_a_one_line_error_and_is_left_alone(image_policy, run_cli):
    tmp = image_policy
    (tmp / "notes").mkdir()
    (tmp / "notes" / "a.txt").write_text("mine")
    out = run_cli("eval", "checkpoint=img", *EVAL, "episodes=1", "save_episodes=notes", timeout=300)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "notes" in out.stderr.strip().splitlines()[-1]
    assert sorted(p.name for p in (tmp / "notes").iterdir()) == ["a.txt"]


def test_a_store_of_other_frames_is_refused_before_any_episode_and_keeps_its_episodes(image_policy, run_cli):
    from robot_learn.envs.demos import collect_demos

    tmp = image_policy
    collect_demos("stack", 1, tmp / "demos48.zarr", cameras=("front",), image_size=48, max_steps=3,
                  keep_failures=True, progress_bar=False)
    out = run_cli("eval", "checkpoint=img", *EVAL, "episodes=2", "save_episodes=demos48.zarr", timeout=300)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "'images/front' is (48, 48, 3) per step there, (32, 32, 3) in these rollouts" in out.stderr
    assert "report.json" not in out.stdout
    with EpisodeStore.open(tmp / "demos48.zarr", mode="r") as store:
        assert store.num_episodes == 1
