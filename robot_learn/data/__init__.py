"""Episode store (zarr v3), filtered views, window sampler and normalisation stats.

The ground floor of robot_learn: imports numpy and zarr only, no other package of ours.
"""

from robot_learn.data.errors import DamagedStoreError, StoreError
from robot_learn.data.recorder import EpisodeRecorder
from robot_learn.data.sampler import WindowSampler
from robot_learn.data.schema import META_FIELDS, SOURCES, STEP_KEYS
from robot_learn.data.stats import STAT_NAMES, compute_stats
from robot_learn.data.store import EpisodeStore
from robot_learn.data.summary import summarize
from robot_learn.data.views import FILTER_FIELDS, EpisodeView

__all__ = [
    "EpisodeRecorder", "EpisodeStore", "EpisodeView", "WindowSampler", "StoreError", "DamagedStoreError", "summarize",
    "compute_stats", "SOURCES", "STEP_KEYS", "META_FIELDS", "STAT_NAMES", "FILTER_FIELDS",
]
