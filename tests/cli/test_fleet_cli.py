"""``robot-learn fleet``: bad settings are one line (exit 2), start no Ray and create no store."""

import pytest

from robot_learn.cli.main import SUBCOMMANDS, main


def test_fleet_is_a_subcommand():
    assert SUBCOMMANDS["fleet"][0] == "robot_learn.cli.fleet"


@pytest.mark.parametrize("override, words", [
    ("actors=0", ["actors", ">= 1"]),
    ("episodes=many", ["episodes", "'many'"]),
    ("online_share=1.5", ["online_share", "[0, 1]", "1.5"]),
    ("online_data=all", ["online_data", "hgdagger, successes", "'all'"]),
    ("publish_every=0", ["publish_every", ">= 1"]),
    ("actor_cpus=-1", ["actor_cpus", ">= 0"]),
    ("task=stak", ["stak", "stack"]),
    ("actor_policy_dir=/no/such/policy", ["/no/such/policy"]),
    ("policy=diffusion_pixels", ["policy=diffusion_pixels", "frame encoder", "diffusion_image", "loop=hgdagger"]),
])
def test_bad_settings_are_one_line_and_start_nothing(override, words, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["fleet", override]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("robot-learn fleet: error: ") and "\n" not in err, err
    assert all(w in err for w in words), err
    assert not list(tmp_path.rglob("*.zarr"))
    ray = pytest.importorskip("ray")
    assert not ray.is_initialized()


def test_an_actor_policy_of_other_spaces_is_refused_naming_both_sides(tmp_path, monkeypatch, capsys):
    from robot_learn.policies import diffusion_state_config, make_policy

    monkeypatch.chdir(tmp_path)
    # A state-only policy (no env_state) against the learner's diffusion_state preset.
    make_policy("diffusion", diffusion_state_config(state_dims={"state": 10}, down_dims=[16, 32])).save("odd")
    assert main(["fleet", "actor_policy_dir=odd"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("robot-learn fleet: error: actor 'robot-0' refused") and "\n" not in err, err
    assert "(odd) observes {state (10,)}" in err and "(policy=diffusion_state) observes {env_state (14,), state (10,)}" in err
    assert not list(tmp_path.rglob("*.zarr"))
