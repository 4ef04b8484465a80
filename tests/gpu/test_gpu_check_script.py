"""`make gpu-check` on a machine without CUDA: it says so, exits 0 and runs nothing."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.py"


@pytest.mark.skipif(torch.cuda.is_available() or Path("/dev/nvidiactl").exists(),
                    reason="this machine has a GPU: `make gpu-check` runs the check here")
def test_gpu_check_without_cuda_says_so_exits_0_and_writes_nothing(tmp_path):
    out = tmp_path / "gpu_check"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("gpu-check: no CUDA device on this machine (torch ")
    assert "nothing run" in proc.stdout
    assert not out.exists()
