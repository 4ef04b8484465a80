"""GPU tests. A test marked ``gpu`` runs only where torch sees a CUDA device; anywhere
else it is skipped with the reason, so ``pytest -ra`` lists it as not run."""

import sys
from pathlib import Path

import pytest
import torch

# The tiny policy configs and synthetic data of the policy and trainer tests.
_TESTS = Path(__file__).resolve().parents[1]
for _folder in ("policies", "policies/discrete_diffusion", "training"):
    if str(_TESTS / _folder) not in sys.path:
        sys.path.append(str(_TESTS / _folder))


def no_cuda_reason() -> str | None:
    """Why GPU tests cannot run here (None when a CUDA device is usable)."""
    if torch.cuda.is_available():
        return None
    build = f"CUDA {torch.version.cuda} build" if torch.version.cuda else "a CPU-only build"
    return (f"not run: no CUDA device (torch {torch.__version__}, {build}); "
            f"run `make gpu-check` on a CUDA machine")


def pytest_collection_modifyitems(config, items):
    reason = no_cuda_reason()
    if reason is None:
        return
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(pytest.mark.skip(reason=reason))
