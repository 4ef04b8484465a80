import sys
from pathlib import Path

import pytest

# training_fixtures.py sits next to the tests (also imported by train_tiny.py subprocesses).
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    """One torch thread: the CI box has 2 cores shared by several jobs, and it keeps CPU results reproducible."""
