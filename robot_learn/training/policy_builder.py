"""One builder of a fresh policy for a data view, with normalisers fitted to that view.

Every caller (``robot-learn train``, ``improve``, the loops' retrain mode, the
benchmarks) builds through :func:`build_policy_for_view`, so normalisation
statistics always come from the frames the policy trains on: the selected view,
not the whole store.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

CONDITION_STATS = {k: np.array([v], dtype=np.float32) for k, v in
                   {"min": -1.0, "max": 1.0, "mean": 0.0, "std": 1.0, "q01": -1.0, "q99": 1.0}.items()}
"""Fixed statistics of a conditioning input (values in [-1, 1]: its normaliser is the identity)."""


def policy_name_for_config(config: Any) -> str:
    """The registered policy name whose config class is ``config``'s class (else one it is
    an instance of: an ensemble's config extends its members' config)."""
    from robot_learn.policies import get_policy_class, policy_names

    classes = {name: get_policy_class(name).config_class for name in policy_names()}
    for name, config_class in sorted(classes.items(), key=lambda item: type(config) is not item[1]):
        if isinstance(config, config_class):
            return name
    raise ValueError(f"policy config {type(config).__name__} belongs to no registered policy; "
                     f"valid policies: {', '.join(policy_names())}")


def view_stats(view: Any, keys: list[str], derived: Mapping[str, np.ndarray] | None = None
               ) -> dict[str, dict[str, np.ndarray]]:
    """Statistics over the view's frames of store ``keys`` and of ``derived`` arrays
    (one row per store frame, e.g. cached frame features)."""
    from robot_learn.data.stats import compute_stats
    from robot_learn.data.views import read_ranges

    whole = view.num_episodes == view.store.num_episodes  # the store's saved stats serve
    stats = (view.store.stats(keys) if whole else view.stats(keys)) if keys else {}
    starts, ends = view.store.episode_starts[view.episodes], view.store.episode_ends[view.episodes]
    stats.update({k: compute_stats(read_ranges(np.asarray(v), starts, ends)) for k, v in (derived or {}).items()})
    return stats


def build_policy_for_view(config: Any, view: Any, derived: Mapping[str, np.ndarray] | None = None,
                          name: str | None = None) -> Any:
    """A fresh policy of ``config`` (registered ``name``, found from the config class when
    None) whose normalisers use the statistics of ``view``'s frames: the action, each
    low-dim key (``derived`` arrays by their own values), and the fixed range of each
    conditioning input; the text vocabulary comes from the view's instructions."""
    from robot_learn.policies import make_policy

    name = name or policy_name_for_config(config)
    derived = dict(derived or {})
    conditions = dict(getattr(config, "conditions", None) or {})
    keys = [k for k in (*config.state_dims, "action") if k not in derived and k not in conditions]
    stats = view_stats(view, keys, derived)
    stats.update({k: CONDITION_STATS for k in conditions})
    instructions = sorted({str(s) for s in view.meta["instruction"]})
    return make_policy(name, config, stats, instructions=instructions)
