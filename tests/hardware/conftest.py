"""Fixtures: emulated servo buses and calibration files (see emulator_fixtures.py)."""

import pytest

pytest.importorskip("serial")
pytest.importorskip("dynamixel_sdk")
pytest.importorskip("scservo_sdk")

from emulator_fixtures import (  # noqa: E402,F401
    RANGE_MAX, RANGE_MIN, calibrate_files, koch_emulator, koch_leader_emulator, so101_emulator,
    so101_leader_emulator, video,
)
