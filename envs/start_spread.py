"""How widely a tabletop reset spreads the objects: ``wide`` (the default), ``medium`` or ``narrow``.

``wide`` is the distribution every task has always had: each object's centre anywhere
on the reachable ring sector in front of the arm (``RADIUS_RANGE`` x ``ANGLE_RANGE`` in
:mod:`.task_base`), any heading. ``narrow`` keeps each object within a small box around
one fixed *nominal layout* of its task (the wide draw of ``NOMINAL_SEED``): a few cm of
distance and bearing, a fraction of a turn of heading. A policy trained on narrow
demos and evaluated on wide starts meets scenes it has not seen, which is what an
improvement loop has to fix.

One code path serves every task: :meth:`FamilyTask.sample_params` draws from the
ranges a spread gives it. The target keeps its full heading range in every spread,
because its heading places the reverse tasks' drop spot, which must stay reachable.
The arm starts at one fixed home pose whatever the spread.
"""

from __future__ import annotations

from dataclasses import dataclass

NOMINAL_SEED = 0  # the wide layout that narrow spreads jitter around


@dataclass(frozen=True)
class StartSpread:
    """Half-widths of each object's start ranges around the nominal layout.

    ``None`` means the full range (the whole reachable ring for ``radius`` and
    ``bearing``, a whole turn for ``yaw``); ``wide`` is all ``None``.
    """

    name: str
    radius: float | None = None   # m, distance from the arm's base
    bearing: float | None = None  # rad, direction seen from the arm's base
    yaw: float | None = None      # rad, heading of the object to move and the distractor

    @property
    def is_wide(self) -> bool:
        return self.radius is None and self.bearing is None and self.yaw is None


WIDE = StartSpread("wide")
NARROW = StartSpread("narrow", radius=0.02, bearing=0.12, yaw=0.3)
# Between the two, about a third of the wide ring's area: the efficacy protocol deploys a
# narrow-trained policy here, where it fails often but not always (the wide ring it mostly fails).
MEDIUM = StartSpread("medium", radius=0.04, bearing=0.35, yaw=1.0)
START_SPREADS: dict[str, StartSpread] = {s.name: s for s in (WIDE, MEDIUM, NARROW)}
DEFAULT_START_SPREAD = WIDE.name


def start_spread(spread: str | StartSpread) -> StartSpread:
    """The :class:`StartSpread` named ``spread`` (or ``spread`` itself); ValueError lists the valid names."""
    if isinstance(spread, StartSpread):
        return spread
    if spread not in START_SPREADS:
        raise ValueError(f"unknown start_spread {spread!r}; valid: {', '.join(START_SPREADS)}")
    return START_SPREADS[spread]
