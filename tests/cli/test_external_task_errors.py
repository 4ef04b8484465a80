"""External tasks in a venv without their benchmark package: one line that names the
package and the venv to use (.venv-bench and the make target that builds it), before
Hydra writes a run dir. Runs in .venv, which has none of the packages; they are also
hidden here so that the test means the same in any venv."""

import sys

import pytest

HIDDEN = ("gym_pusht", "metaworld", "gym_aloha")


@pytest.fixture
def no_bench_packages(monkeypatch):
    """Make ``import`` of each benchmark package fail as if it were not installed."""
    for module in HIDDEN:
        for key in [k for k in sys.modules if k == module or k.startswith(module + ".")]:
            monkeypatch.delitem(sys.modules, key)
        monkeypatch.setitem(sys.modules, module, None)


@pytest.mark.parametrize(("args", "task", "package"), [
    (("train", "task=pusht"), "pusht", "gym-pusht"),
    (("collect", "task=aloha/insertion", "episodes=1"), "aloha/insertion", "gym-aloha"),
    (("collect", "task=metaworld/drawer-close", "episodes=1"), "metaworld/drawer-close", "metaworld"),
    (("train", "task=metaworld/drawer-close"), "metaworld/drawer-close", "metaworld"),
    (("eval", "task=metaworld/button-press-topdown", "checkpoint=x"), "metaworld/button-press-topdown",
     "metaworld"),
])
def test_missing_benchmark_package_names_the_venv_to_use(no_bench_packages, user_error, tmp_path, args, task,
                                                         package):
    line = user_error(*args)
    assert f"error: task '{task}' needs the {package} package, which the Python at {sys.prefix} lacks" in line
    assert "run it in .venv-bench (.venv-bench/bin/robot-learn" in line
    assert "make .venv-bench/.installed" in line
    assert list(tmp_path.iterdir()) == []  # no run dir, no store


def test_unknown_aloha_task_lists_the_close_match_first(user_error, tmp_path):
    # ALOHA names are checked before the package is needed, so this runs in any venv.
    line = user_error("collect", "task=aloha/transfercube", "episodes=1")
    assert line.endswith("error: unknown ALOHA task 'aloha/transfercube'; close matches: aloha/transfer-cube; "
                         "valid (2): aloha/insertion, aloha/transfer-cube")
    assert list(tmp_path.iterdir()) == []
