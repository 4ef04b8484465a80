"""LeRobotDataset v3 import and export (the public entry points).

`lerobot` itself is imported only inside these functions: it pins torch<2.11 and
lives in its own venv (`make .venv-lerobot/.installed`, see docs/interop.md).
"""

from robot_learn.interop.lerobot_export import ExportSummary, export_lerobot
from robot_learn.interop.lerobot_import import ImportSummary, SkippedEpisodeWarning, import_lerobot
from robot_learn.interop.lerobot_keys import InteropError

__all__ = ["import_lerobot", "export_lerobot", "ImportSummary", "ExportSummary",
           "SkippedEpisodeWarning", "InteropError"]
