"""Serving the console with uvicorn: :class:`ConsoleServer`.

The socket is bound before the server starts, so ``port=0`` (any free port) works
and the URL printed at start is the one that answers. The console binds
127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from robot_learn.console.app import build_app
from robot_learn.console.operator_console import OperatorConsole

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def bind_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (0: any free port); ValueError when it cannot be."""
    if not 0 <= int(port) <= 65535:
        raise ValueError(f"port must be in 0..65535, got {port}")
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, int(port)))
        sock.listen(128)  # connections queue from now on, even before uvicorn serves
    except OSError as err:
        raise ValueError(f"cannot bind the console to host {host!r} port {port}: "
                         f"{err.strerror or err}") from None
    return sock


class ConsoleServer:
    """uvicorn serving ``console`` on ``host:port`` (or on ``sock``, bound by :func:`bind_socket`)."""

    def __init__(self, console: OperatorConsole, host: str = "127.0.0.1", port: int = 0,
                 sock: socket.socket | None = None) -> None:
        import uvicorn

        self.console, self.host = console, host
        self.socket = sock if sock is not None else bind_socket(host, port)
        self.port = self.socket.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(build_app(console), log_level="warning", lifespan="off"))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The page's address with the token (what an operator opens)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/?token={self.console.token}"

    def run(self) -> None:
        """Serve until interrupted (Ctrl-C), on this thread."""
        self.server.run(sockets=[self.socket])

    def start_background(self, timeout: float = 30.0) -> "ConsoleServer":
        """Serve on a daemon thread; returns once the server answers."""
        failure: list[BaseException] = []

        def serve() -> None:
            try:
                self.run()
            except BaseException as exc:  # reported by the waiting thread below
                failure.append(exc)

        self._thread = threading.Thread(target=serve, name="console-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if failure or not self._thread.is_alive():
                why = f"{type(failure[0]).__name__}: {failure[0]}" if failure else "its thread ended"
                raise RuntimeError(f"the console server on port {self.port} stopped while starting ({why})")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the console server did not start within {timeout} s")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Stop serving (the sessions are the console's to stop)."""
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        self.socket.close()

    def __enter__(self) -> "ConsoleServer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
