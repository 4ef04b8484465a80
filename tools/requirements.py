"""Print the requirements of this project (and of the extras named on the command line)
as read from pyproject.toml, one per line, without building the project.

The Makefile installs them with pip, then the project itself with
``pip install --no-deps -e .``. Only that last step writes into the source tree
(robot_learn.egg-info), so the three venvs can be built in parallel with just that
step under a lock.
"""

import sys
import tomllib
from pathlib import Path


def requirements(extras: list[str]) -> list[str]:
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())["project"]
    optional = project.get("optional-dependencies", {})
    unknown = [e for e in extras if e not in optional]
    if unknown:
        raise SystemExit(f"unknown extra(s) {unknown}; pyproject.toml has: {', '.join(sorted(optional))}")
    reqs = list(project["dependencies"])
    for extra in extras:
        reqs += [r for r in optional[extra] if r not in reqs]
    return reqs


if __name__ == "__main__":
    print("\n".join(requirements(sys.argv[1:])))
