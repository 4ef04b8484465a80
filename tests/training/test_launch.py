"""``python -m robot_learn.training.launch``: torchrun whose rendezvous listens on 127.0.0.1 only."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from torch.distributed.elastic.rendezvous import RendezvousParameters

from robot_learn.training.launch import create_localhost_handler, loopback_interface, torchrun_args

LISTEN = "0A"


def _listeners(port: int) -> list[tuple[str, str]]:
    """(table, local address in hex) of every socket listening on ``port``, from /proc/net."""
    found = []
    for table in ("tcp", "tcp6"):
        path = Path("/proc/net") / table
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if fields[3] == LISTEN and int(hex_port, 16) == port:
                found.append((table, address))
    return found


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads the kernel's socket table (Linux)")
def test_the_rendezvous_store_listens_on_loopback_only():
    params = RendezvousParameters(backend="localhost", endpoint="127.0.0.1:0", run_id="t", min_nodes=1,
                                  max_nodes=1)
    handler = create_localhost_handler(params)
    info = handler.next_rendezvous()
    port = info.bootstrap_store_info.master_port
    assert info.bootstrap_store_info.master_addr == "127.0.0.1" and port > 0
    assert _listeners(port) == [("tcp", "0100007F")]  # 127.0.0.1, and no IPv6 "any" socket


def test_several_machines_are_refused_naming_the_backend_to_use():
    params = RendezvousParameters(backend="localhost", endpoint="", run_id="t", min_nodes=2, max_nodes=2)
    with pytest.raises(ValueError, match="runs on one machine .* use --rdzv-backend=c10d"):
        create_localhost_handler(params)


@pytest.mark.parametrize(("argv", "expected"), [
    (["--nproc_per_node=2", "-m", "some_package.main", "train", "run_dir=x"],
     ["--rdzv-backend=localhost", "--rdzv-endpoint=127.0.0.1:0", "--nproc_per_node=2", "-m",
      "some_package.main", "train", "run_dir=x"]),
    (["--nnodes=2", "--rdzv-backend=c10d", "--rdzv-endpoint=10.0.0.1:29400", "script.py"],
     ["--nnodes=2", "--rdzv-backend=c10d", "--rdzv-endpoint=10.0.0.1:29400", "script.py"]),
    (["--standalone", "--nproc_per_node", "2", "script.py", "--master-addr=x"],
     ["--standalone", "--nproc_per_node", "2", "script.py", "--master-addr=x"]),
])
def test_a_rendezvous_the_user_chose_is_left_alone(argv, expected):
    assert torchrun_args(argv) == expected


def test_two_ranks_meet_through_the_launcher_on_loopback(tmp_path):
    script = tmp_path / "ranks.py"
    script.write_text(textwrap.dedent("""
        import os
        import torch
        import torch.distributed as dist
        dist.init_process_group("gloo")
        total = torch.tensor([dist.get_rank() + 1.0])
        dist.all_reduce(total)
        print(f"rank {dist.get_rank()} sum {total.item():.0f} master {os.environ['MASTER_ADDR']} "
              f"gloo {os.environ.get('GLOO_SOCKET_IFNAME')}", flush=True)
        dist.destroy_process_group()
    """))
    out = subprocess.run([sys.executable, "-m", "robot_learn.training.launch", "--nproc_per_node=2", str(script)],
                         capture_output=True, text=True, timeout=300, env={"OMP_NUM_THREADS": "1",
                                                                            "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-3000:]
    for rank in (0, 1):
        assert f"rank {rank} sum 3 master 127.0.0.1 gloo {loopback_interface()}" in out.stdout
