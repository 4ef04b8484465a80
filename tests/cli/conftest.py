"""Running the installed ``robot-learn`` console script in a subprocess (CleanRL style)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# The store-damage helpers of tests/data serve the CLI's corruption tests too.
_DATA_TESTS = str(Path(__file__).resolve().parents[1] / "data")
if _DATA_TESTS not in sys.path:
    sys.path.append(_DATA_TESTS)


def _command() -> list[str]:
    script = Path(sys.executable).with_name("robot-learn")
    if script.exists():
        return [str(script)]
    found = shutil.which("robot-learn")
    return [found] if found else [sys.executable, "-m", "robot_learn.cli.main"]


def _run(args: tuple[str, ...], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    env = {**os.environ, "MUJOCO_GL": "egl", "PYOPENGL_PLATFORM": "egl",
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "HYDRA_FULL_ERROR": "0"}
    return subprocess.run([*_command(), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def run_cli(tmp_path):
    """``run_cli(*args, timeout=...)`` runs ``robot-learn ARGS`` in ``tmp_path``."""

    def run(*args: str, timeout: float = 120, cwd: Path | None = None) -> subprocess.CompletedProcess:
        return _run(args, cwd or tmp_path, timeout)

    return run


@pytest.fixture(scope="module")
def run_cli_in():
    """``run_cli_in(cwd, *args, timeout=...)``: ``run_cli`` for module-scoped fixtures, which
    run once in a folder of their own (``tmp_path_factory.mktemp``)."""

    def run(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return _run(args, cwd, timeout)

    return run


@pytest.fixture
def user_error(tmp_path, monkeypatch, capsys):
    """``user_error(*args)`` runs ``robot-learn ARGS`` in this process, in ``tmp_path``, and
    checks the CLI rule for a user's mistake: exit status 2, exactly one line on stderr,
    no traceback. Returns that line."""
    from robot_learn.cli.main import main

    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> str:
        code = main(list(args))
        err = capsys.readouterr().err
        assert code == 2, err
        assert "Traceback" not in err
        assert err.endswith("\n") and err.count("\n") == 1, err
        return err.rstrip("\n")

    return run
