"""loop=reversed: its base data are the easy task's episodes reversed, its rounds keep A's
successful rollouts kinematically filtered, and it never collects from the hard task's expert."""

import numpy as np
import pytest

from robot_learn.data import EpisodeStore
from robot_learn.envs.demos import collect_demos
from robot_learn.loops.kinematic_filter import KinematicFilter
from robot_learn.loops.methods import make_loop_config
from robot_learn.loops.reversed import Reversed
from robot_learn.loops.round import LoopContext


@pytest.fixture(scope="module")
def easy_demos(tmp_path_factory):
    root = tmp_path_factory.mktemp("easy")
    collect_demos("unstack", 2, root / "unstack.zarr", cameras=(), to_rest=True, progress_bar=False)
    return EpisodeStore.open(root / "unstack.zarr").view(success=True)


def test_base_data_is_the_easy_demos_reversed_and_rebuilt_only_when_they_change(tmp_path, easy_demos):
    cfg = make_loop_config("reversed")
    assert Reversed.demo_recipe(cfg, "peg_insert").task == "peg_remove" and Reversed.demo_recipe(cfg, "stack").to_rest
    assert Reversed.demo_recipe(cfg, "stack").drop_spot == "anywhere"
    assert Reversed.demo_recipe(make_loop_config("reversed", drop_spot="beside"), "stack").drop_spot == "beside"
    base = Reversed.base_data(cfg, "stack", easy_demos, tmp_path)
    assert base.num_episodes == 2 and base.num_frames == easy_demos.num_frames
    assert set(base.meta["task"]) == {"stack"} and set(base.meta["source"]) == {"reversed"}
    np.testing.assert_array_equal(base.read("state"), np.concatenate(
        [easy_demos.store.episode(int(e))["steps"]["state"][::-1] for e in easy_demos.episodes]))
    made = (tmp_path / "reversed_demos.zarr").stat().st_mtime_ns
    Reversed.base_data(cfg, "stack", easy_demos, tmp_path)
    assert (tmp_path / "reversed_demos.zarr").stat().st_mtime_ns == made  # same demos: kept
    from robot_learn.data.views import EpisodeView

    one = EpisodeView(easy_demos.store, easy_demos.episodes[:1])
    assert Reversed.base_data(cfg, "stack", one, tmp_path).num_episodes == 1
    # Trimmed after the release: its own store, shorter episodes.
    trimmed = Reversed.base_data(make_loop_config("reversed", trim_after_release=2), "stack", easy_demos, tmp_path)
    assert trimmed.store.path.name == "reversed_demos_trim2.zarr" and trimmed.num_frames < easy_demos.num_frames


@pytest.mark.parametrize("filter_name", ["kinematic", "none"])
def test_curate_filters_the_successful_rollouts_and_keeps_reversed_episodes_whole(tmp_path, easy_demos, filter_name):
    demos = Reversed.base_data(make_loop_config("reversed"), "stack", easy_demos, tmp_path)
    episode = demos.store.episode(0)
    steps, meta = episode["steps"], {k: v for k, v in episode["meta"].items() if k != "created"}
    # A successful A rollout (a valid pose-mode stack episode), a reversed B episode and a failed rollout.
    with EpisodeStore.create(tmp_path / "collected.zarr") as collected:
        collected.append_episode(steps, {**meta, "round": 1, "source": "rollout"})
        collected.append_episode(steps, {**meta, "round": 1, "source": "reversed"})
        collected.append_episode(steps, {**meta, "round": 1, "source": "rollout", "success": False})
    collected = EpisodeStore.open(tmp_path / "collected.zarr")
    ctx = LoopContext(tmp_path, "stack", demos, make_robot=None, make_operator=None, train_config=None)
    method = Reversed(ctx, make_loop_config("reversed", filter=filter_name))
    parts = method.curate(1, collected, None, tmp_path / "round_01")
    filtered = len(KinematicFilter().apply(steps)["action"]) if filter_name == "kinematic" else len(steps["action"])
    assert filter_name == "none" or filtered != len(steps["action"])
    assert method.filter_numbers == {"filter": filter_name, "episodes": 2, "successes": 1,
                                     "frames_in": len(steps["action"]), "frames_out": filtered}
    assert parts["base"].view is demos
    train = parts["collected"].view
    assert list(train.meta["source"]) == ["rollout", "reversed"]
    assert train.num_frames == filtered + len(steps["action"])


@pytest.mark.parametrize("filter_name", ["critic", "both"])
def test_the_critic_filter_trains_on_the_rollouts_and_cuts_base_and_collected_episodes(tmp_path, easy_demos,
                                                                                        filter_name):
    from robot_learn.loops.critic_filter import load_critic

    demos = Reversed.base_data(make_loop_config("reversed"), "stack", easy_demos, tmp_path)
    episode = demos.store.episode(0)
    steps, meta = episode["steps"], {k: v for k, v in episode["meta"].items() if k != "created"}
    with EpisodeStore.create(tmp_path / "collected.zarr") as collected:
        collected.append_episode(steps, {**meta, "round": 1, "source": "rollout"})
        collected.append_episode(steps, {**meta, "round": 1, "source": "rollout", "success": False})
        collected.append_episode(steps, {**meta, "round": 1, "source": "reversed"})
    collected = EpisodeStore.open(tmp_path / "collected.zarr")
    ctx = LoopContext(tmp_path, "stack", demos, make_robot=None, make_operator=None, train_config=None)
    cfg = make_loop_config("reversed", filter=filter_name, critic={"steps": 20, "min_advantage": -1.0})
    parts = Reversed(ctx, cfg).curate(1, collected, None, tmp_path / "round_01")
    # The critic was trained on the round's rollouts and saved for stack only.
    critic = load_critic(tmp_path / "round_01" / "critic", "stack")
    assert critic.settings.steps == 20
    # Every part went through it: the base (the reversed demos) into its own store.
    base = parts["base"].view
    assert base.store.path == tmp_path / "round_01" / "base.zarr" and base.num_episodes == demos.num_episodes
    assert base.num_frames <= demos.num_frames and parts["base"].weight == base.num_frames
    assert list(parts["collected"].view.meta["source"]) == ["rollout", "reversed"]
    with pytest.raises(ValueError, match=r"filter critic trains its critic on stack's own rollouts, and round 2 has none"):
        Reversed(ctx, make_loop_config("reversed", filter="critic")).round_critic(2, _empty_rounds(tmp_path), tmp_path)


def _empty_rounds(tmp_path):
    """A collected store with one reversed episode in round 2 and no rollouts."""
    path = tmp_path / "reversed_only.zarr"
    with EpisodeStore.create(path) as store:
        episode = EpisodeStore.open(tmp_path / "collected.zarr").episode(2)
        store.append_episode(episode["steps"], {**{k: v for k, v in episode["meta"].items() if k != "created"},
                                                "round": 2})
    return EpisodeStore.open(path)


def test_sources_that_use_the_hard_tasks_expert_and_bad_settings_are_refused():
    with pytest.raises(ValueError, match=r"loop reversed cannot collect from \['hitl'\]: only the easy task has an "
                                         r"expert.*; valid sources: autonomous, reversed$"):
        make_loop_config("reversed", sources=["hitl", "autonomous"])
    with pytest.raises(ValueError, match="unknown filter 'value'; valid filters: kinematic, critic, both, none"):
        make_loop_config("reversed", filter="value")
    with pytest.raises(ValueError, match=r"unknown critic filter settings \['horizon'\]; valid: gamma"):
        make_loop_config("reversed", critic={"horizon": 8})
    assert make_loop_config("reversed", critic={"steps": 7}).critic.steps == 7
    with pytest.raises(ValueError, match=r"unknown kinematic filter settings \['speed'\]; valid: static_distance"):
        make_loop_config("reversed", kinematic={"speed": 1.0})
    assert make_loop_config("reversed", kinematic={"densify": 3}).kinematic.densify == 3
    with pytest.raises(ValueError, match=r"trim_after_release must be >= 0 rows \(or null: whole episodes\), got -2"):
        make_loop_config("reversed", trim_after_release=-2)
    with pytest.raises(ValueError, match="cycle_legs must be >= 0, got -1"):
        make_loop_config("reversed", cycle_legs=-1)
