"""Fixtures for the policy tests (helpers live in policy_fixtures.py)."""

import pytest
from policy_fixtures import stats_of, synthetic_windows


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread):
    """The test machine is shared; keep torch to one thread."""


@pytest.fixture
def windows():
    return synthetic_windows()


@pytest.fixture
def stats(windows):
    return stats_of(windows)
