import json
import time
import urllib.error
import urllib.request
from contextlib import contextmanager

import pytest
import torch

from robot_learn.console import ConsoleServer, OperatorConsole
from robot_learn.console.simulated import simulated_setup

torch.set_num_threads(1)

OPERATORS = ("alice", "bob")
LABELS = ("good", "bad")


@contextmanager
def running_console(store_path, **setup):
    """One simulated 'stack' session (the stand-in frozen from its first step, so it
    stalls and the episode runs until told otherwise) served on a free port."""
    kwargs = dict(freeze_fraction=1.0, freeze_after=(0, 0), max_steps=400, rate_hz=10.0, stall_steps=8)
    console = OperatorConsole({"sim-0": simulated_setup("stack", store_path, **{**kwargs, **setup})},
                              OPERATORS, LABELS)
    console.start()
    server = ConsoleServer(console).start_background()
    try:
        yield console, server
    finally:
        console.stop()
        server.stop()


def wait_until(condition, timeout=60.0, what="condition"):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


def http(server, path, body=None, token=None, headers=None, raw=None):
    """(status, parsed JSON or text) of a request to the console; ``token`` goes in the query."""
    url = f"http://127.0.0.1:{server.port}{path}" + (f"?token={token}" if token is not None else "")
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(url, data=data, method="GET" if data is None else "POST",
                                     headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, text = response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        status, text = err.code, err.read().decode()
    try:
        return status, json.loads(text)
    except json.JSONDecodeError:
        return status, text
