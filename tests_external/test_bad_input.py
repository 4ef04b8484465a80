"""Unknown external names list the valid ones; a missing benchmark package gives an install hint."""

import sys

import gym_pusht  # noqa: F401
import metaworld  # noqa: F401
import pytest

from robot_learn.envs import make_env, make_expert
from robot_learn.envs.external import MissingExtraError


def test_unknown_metaworld_task_names_close_matches_then_the_valid_ones():
    with pytest.raises(ValueError) as err:
        make_env("metaworld/peg-unplug")
    msg = str(err.value)
    assert msg.startswith("unknown Meta-World task 'metaworld/peg-unplug'; close matches: metaworld/peg-unplug-side; "
                          "valid (51): ")
    for name in ("metaworld/peg-insert-side", "metaworld/door-open", "metaworld/peg-insert-side-reverse"):
        assert name in msg
    assert "\n" not in msg


def test_a_name_far_from_every_task_lists_only_the_valid_ones():
    with pytest.raises(ValueError, match="^unknown Meta-World task 'metaworld/xyz'; valid \\(51\\): "):
        make_env("metaworld/xyz")


def test_unknown_aloha_and_suite_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="close matches: aloha/insertion; valid \\(2\\): aloha/insertion, "
                                         "aloha/transfer-cube$"):
        make_env("aloha/insert")
    with pytest.raises(ValueError, match="external \\(extra 'bench'\\): pusht, metaworld/<task>, aloha/insertion"):
        make_env("push-t")


def test_unknown_camera_and_bad_expert_noise_say_what_is_valid():
    with pytest.raises(ValueError, match="unknown camera 'wrist' for task 'pusht'; valid cameras: front"):
        make_env("pusht", cameras=("wrist",))
    with pytest.raises(ValueError, match="^noise must be a finite number >= 0, got -1"):
        make_expert("aloha/insertion", noise=-1)
    with pytest.raises(ValueError, match="action_mode"):
        make_env("pusht", action_mode="joint")


@pytest.mark.parametrize("name,module,package", [("pusht", "gym_pusht", "gym-pusht"),
                                                 ("metaworld/peg-unplug-side", "metaworld", "metaworld"),
                                                 ("aloha/insertion", "gym_aloha", "gym-aloha")])
def test_missing_package_gives_an_install_hint(monkeypatch, name, module, package):
    # A None entry in sys.modules makes ``import module`` fail like an uninstalled package.
    for key in [k for k in sys.modules if k == module or k.startswith(module + ".")]:
        monkeypatch.delitem(sys.modules, key)
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(MissingExtraError) as err:
        make_env(name, cameras=())
    msg = str(err.value)
    assert f"task {name!r} needs the {package} package" in msg
    assert "make .venv-bench/.installed" in msg and "pip install -e '.[bench]'" in msg
