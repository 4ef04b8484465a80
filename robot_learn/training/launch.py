"""``python -m robot_learn.training.launch [torchrun options] -m MODULE ARGS``: torchrun
on one machine, listening on 127.0.0.1 only.

torchrun's rendezvous store (a TCPStore, hosted by its agent process) listens on
every network interface, whatever ``--master-addr`` or ``--rdzv-endpoint`` say: the
address is only where the other processes connect. So a plain
``torchrun --nproc_per_node=2`` on a laptop accepts connections from the whole
network. This launcher registers a ``localhost`` rendezvous backend whose store
listens on a socket bound to 127.0.0.1 (``TCPStore(master_listen_fd=...)``), makes it
the default, and points gloo and NCCL at the loopback interface. Everything else is
torchrun (same options, same worker environment).

Asking for another rendezvous (``--rdzv-backend``, ``--rdzv-endpoint``,
``--master-addr``, ``--standalone``, ``--nnodes``) keeps torchrun's own behaviour:
a multi-machine job must listen on the network.
"""

from __future__ import annotations

import os
import socket
import sys
from typing import Any, Sequence

BACKEND = "localhost"
LOOPBACK = "127.0.0.1"
# torchrun options that choose where the rendezvous listens; given, the user's choice wins.
_USER_RENDEZVOUS = ("--rdzv-backend", "--rdzv_backend", "--rdzv-endpoint", "--rdzv_endpoint", "--master-addr",
                    "--master_addr", "--standalone", "--nnodes")


def create_localhost_handler(params: Any) -> Any:
    """A torchrun rendezvous handler for one machine whose store listens on 127.0.0.1.

    ``--rdzv-endpoint=127.0.0.1:PORT`` picks the port; without one a free port is taken.
    """
    from torch.distributed import TCPStore
    from torch.distributed.elastic.rendezvous.static_tcp_rendezvous import StaticTCPRendezvous
    from torch.distributed.elastic.rendezvous.utils import parse_rendezvous_endpoint

    if params.max_nodes != 1:
        raise ValueError(f"the '{BACKEND}' rendezvous runs on one machine (--nnodes=1), got {params.max_nodes} "
                         "nodes; use --rdzv-backend=c10d with --rdzv-endpoint=HOST:PORT for several")
    host, port = parse_rendezvous_endpoint(params.endpoint or f"{LOOPBACK}:0", default_port=0)
    if host not in (LOOPBACK, "localhost"):
        raise ValueError(f"the '{BACKEND}' rendezvous listens on {LOOPBACK} only, got endpoint {params.endpoint!r}")

    class LocalhostRendezvous(StaticTCPRendezvous):
        """Static one-node rendezvous; its TCPStore serves on a socket bound to loopback."""

        def __init__(self) -> None:
            self._listener = socket.create_server((LOOPBACK, port))  # bound and listening
            super().__init__(LOOPBACK, self._listener.getsockname()[1], 0, 1, params.run_id,
                             int(params.config.get("timeout", 600)))

        def get_backend(self) -> str:
            return BACKEND

        def next_rendezvous(self) -> Any:
            if not self._store:
                self._store = TCPStore(LOOPBACK, self.master_port, self.world_size, True, self.timeout,
                                       multi_tenant=True, master_listen_fd=self._listener.fileno())
            return super().next_rendezvous()

    return LocalhostRendezvous()


def register_localhost_rendezvous() -> None:
    """Make ``--rdzv-backend=localhost`` known to torchrun in this process."""
    from torch.distributed.elastic.rendezvous import rendezvous_handler_registry

    rendezvous_handler_registry.register(BACKEND, create_localhost_handler)


def loopback_interface() -> str | None:
    """The loopback interface's name (``lo`` on Linux, ``lo0`` on macOS), if there is one."""
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        return None
    return next((n for n in names if n in ("lo", "lo0")), None)


def torchrun_args(argv: Sequence[str]) -> list[str]:
    """``argv`` with ``--rdzv-backend=localhost`` added unless the user chose a rendezvous
    (in the options before ``-m MODULE`` or ``SCRIPT.py``)."""
    args = list(argv)
    script_at = next((i for i, a in enumerate(args) if a == "-m" or a.endswith(".py")), len(args))
    if any(a.split("=", 1)[0] in _USER_RENDEZVOUS for a in args[:script_at]):
        return args
    # An endpoint too, or torchrun warns that --master-addr goes unused; port 0 = any free one.
    return [f"--rdzv-backend={BACKEND}", f"--rdzv-endpoint={LOOPBACK}:0", *args]


def main(argv: Sequence[str] | None = None) -> None:
    """Run torchrun with the localhost rendezvous (see the module docstring)."""
    from torch.distributed import run as torchrun

    args = torchrun_args(sys.argv[1:] if argv is None else argv)
    register_localhost_rendezvous()
    if any(a.split("=", 1) == [flag, BACKEND] for a in args for flag in ("--rdzv-backend", "--rdzv_backend")):
        lo = loopback_interface()
        if lo is not None:  # the collectives' own sockets on loopback too (workers inherit this)
            os.environ.setdefault("GLOO_SOCKET_IFNAME", lo)
            os.environ.setdefault("NCCL_SOCKET_IFNAME", lo)
    torchrun.main(args)


if __name__ == "__main__":
    main()
