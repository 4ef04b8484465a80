"""Unknown external names list the valid ones; a missing benchmark package gives an install hint."""

import sys

import gym_pusht  # noqa: F401
import metaworld  # noqa: F401
import pytest

from robot_learn.envs import make_env, make_expert
from robot_learn.envs.external import MissingExtraError


def test_unknown_metaworld_task_lists_the_valid_ones():
    with pytest.raises(ValueError) as err:
        make_env("metaworld/peg-unplug")
    msg = str(err.value)
    assert "'metaworld/peg-unplug'" in msg
    for name in ("metaworld/peg-unplug-side", "metaworld/peg-insert-side", "metaworld/door-open"):
        assert name in msg


def test_unknown_aloha_and_suite_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="valid: aloha/insertion, aloha/transfer-cube"):
        make_env("aloha/insert")
    with pytest.raises(ValueError, match="external \\(extra 'bench'\\): pusht, metaworld/<task>, aloha/insertion"):
        make_env("push-t")


def test_unknown_camera_and_expert_less_task_say_what_is_valid():
    with pytest.raises(ValueError, match="unknown camera 'wrist' for task 'pusht'; valid cameras: front"):
        make_env("pusht", cameras=("wrist",))
    with pytest.raises(ValueError, match="has no scripted expert"):
        make_expert("aloha/insertion")
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
