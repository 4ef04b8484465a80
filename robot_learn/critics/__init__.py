"""Critics over stored episodes: a progress regressor with rollout segmentation (HELP)
and RECAP's distributional value critic with advantage labels.

Imports policies and data only (here: torch and numpy over store arrays).
"""

from robot_learn.critics.progress import ProgressCritic
from robot_learn.critics.segmentation import (
    FAILURE, IDLE, KEEP_LABELS, LABEL_NAMES, PROGRESS, RECOVERY, Segment, keep_mask, label_steps, segments,
)
from robot_learn.critics.value import (
    RecapLabels, ValueCritic, advantages, mc_returns, normalised_rewards, recap_labels,
)

__all__ = ["ProgressCritic", "FAILURE", "IDLE", "KEEP_LABELS", "LABEL_NAMES", "PROGRESS", "RECOVERY", "Segment",
           "keep_mask", "label_steps", "segments", "RecapLabels", "ValueCritic", "advantages", "mc_returns",
           "normalised_rewards", "recap_labels"]
