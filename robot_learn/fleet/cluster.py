"""Starting Ray: on this machine by default, or joining a cluster at an address."""

from __future__ import annotations

import os
from typing import Any


def start_ray(address: str | None = None, num_cpus: int | None = None, quiet: bool = True, **kwargs: Any) -> Any:
    """``ray.init`` once per process: a local Ray (``num_cpus`` workers' worth of CPUs,
    no dashboard; ``quiet``: actors' output stays in Ray's logs) when ``address`` is None or empty, else the cluster at ``address``
    (``"auto"``, ``"ray://host:10001"``, ...). A Ray already started is kept as it is.

    Actors run with one torch thread each (``OMP_NUM_THREADS=1``): several actors on a
    few cores would otherwise fight over them. ValueError, naming the extra, when Ray is
    not installed.
    """
    try:
        import ray
    except ImportError:
        raise ValueError("Ray is not installed: it comes with the 'fleet' extra "
                         "(pip install -e '.[fleet]'; make install puts it in .venv)") from None

    if ray.is_initialized():
        return ray.get_runtime_context()
    env = {"env_vars": {"OMP_NUM_THREADS": "1", "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}}
    if address:
        return ray.init(address=address, runtime_env=env, **kwargs)
    return ray.init(num_cpus=num_cpus, include_dashboard=False, runtime_env=env, log_to_driver=not quiet, **kwargs)
