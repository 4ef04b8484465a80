import sys
from pathlib import Path

import pytest
import torch

# training_fixtures.py sits next to the tests (also imported by train_tiny.py subprocesses).
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(autouse=True)
def _one_thread():
    # The CI box has 2 cores shared by several jobs; one thread also keeps CPU results reproducible.
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
