"""The console refuses requests without its token (HTTP and websocket) and malformed
ones, and such a request changes nothing; pause and resume follow the session's rules."""

import json
import os
import sys

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from robot_learn.data import EpisodeStore
from robot_learn.loops import OPERATOR_PAUSE_MARK

sys.path.insert(0, os.path.dirname(__file__))
from console_fixtures import http, running_console, wait_until  # noqa: E402


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    store_path = tmp_path_factory.mktemp("console") / "sim-0.zarr"
    # No camera and a long stall window: nothing here needs frames or help requests.
    with running_console(store_path, cameras=(), stall_steps=1000) as (console, server):
        wait_until(lambda: console.sessions["sim-0"].snapshot()["step"] >= 2, what="the session to run")
        yield console, server, store_path


def untouched(console):
    """Nothing a request could have changed has changed."""
    session = console.sessions["sim-0"]
    snap = session.snapshot()
    return (session.operator.log == [] and snap["mode"] == "autonomous" and snap["state"] == "running"
            and snap["takeovers"] == 0 and not any(r["assigned_to"] for r in console.help.snapshot())
            and not session.labels_path.exists())


def test_http_requests_without_the_token_are_refused_and_change_nothing(live):
    console, server, _ = live
    takeover = {"command": "takeover"}
    cases = [("/", None, {}, None), ("/api/state", None, {}, None), ("/api/sessions/sim-0/command", takeover, {}, None),
             ("/api/sessions/sim-0/command", takeover, {}, "wrong"),
             ("/api/sessions/sim-0/command", takeover, {"Authorization": f"Basic {console.token}"}, None),
             ("/api/sessions/sim-0/label", {"label": "good"}, {}, ""),
             ("/api/help/1/assign", {"operator": "bob"}, {}, console.token[:-1]),
             ("/docs", None, {}, None), ("/no-such-page", None, {}, None)]
    for path, body, headers, token in cases:
        status, answer = http(server, path, body, token=token, headers=headers)
        assert status == 401 and "token" in answer["error"], (path, token, status, answer)
    assert untouched(console)
    # The same requests with the token (query or bearer header) are served.
    assert http(server, "/", token=console.token)[0] == 200
    assert http(server, "/api/state", headers={"Authorization": f"Bearer {console.token}"})[0] == 200


def test_websocket_without_the_token_is_refused(live):
    console, server, _ = live
    base = f"ws://127.0.0.1:{server.port}/ws"
    for url in (base, f"{base}?token=wrong", f"{base}?token="):
        with pytest.raises(InvalidStatus) as refused:
            connect(url, open_timeout=10)
        assert refused.value.response.status_code == 403
    with connect(f"{base}?token={console.token}", open_timeout=10) as ws:
        state = json.loads(ws.recv(timeout=10))
        assert state["type"] == "state" and state["sessions"][0]["id"] == "sim-0"
        # The websocket only pushes; a message from the browser closes it (1008), changing nothing.
        ws.send(json.dumps({"command": "takeover"}))
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                ws.recv(timeout=10)
        assert closed.value.rcvd.code == 1008
    assert untouched(console)


def test_malformed_requests_are_refused_with_one_line_naming_the_input(live):
    console, server, _ = live
    command = "/api/sessions/sim-0/command"
    cases = [  # (path, raw body, status, words the error names)
        (command, b"takeover", 400, ["not JSON"]),
        (command, b'["takeover"]', 400, ["JSON object", "list"]),
        (command, b'{"command": "jump"}', 400, ["'jump'", "takeover, hand_back, pause, resume, reset, estop"]),
        (command, b"{}", 400, ["missing key 'command'"]),
        (command, b'{"command": "takeover", "speed": 2}', 400, ["unknown key 'speed'", "command, operator, clicked_at"]),
        (command, b'{"command": 1}', 400, ["unknown command 1"]),
        (command, b'{"command": "takeover", "clicked_at": "now"}', 400, ["clicked_at", "finite number"]),
        (command, b'{"command": "takeover", "clicked_at": NaN}', 400, ["clicked_at", "finite number"]),
        (command, b'{"command": "takeover", "operator": "mallory"}', 400, ["'mallory'", "alice, bob"]),
        (command, b'{"command": "' + b"x" * 5000 + b'"}', 400, ["bytes", "4096"]),
        ("/api/sessions/sim-9/command", b'{"command": "takeover"}', 404, ["'sim-9'", "sim-0"]),
        (command, b'{"command": "resume"}', 409, ["running", "not paused"]),
        ("/api/sessions/sim-0/label", b'{"label": "great"}', 400, ["'great'", "good, bad"]),
        ("/api/help/7/assign", b'{"operator": "bob"}', 404, ["no open help request 7"]),
        ("/api/help/x/assign", b'{"operator": "bob"}', 400, ["'x'"]),
        ("/api/help/1/assign", b'{"operator": "eve"}', 400, ["'eve'", "alice, bob"]),
    ]
    for path, raw, status, words in cases:
        got, answer = http(server, path, token=console.token, raw=raw)
        assert got == status, (raw[:60], got, answer)
        assert "\n" not in answer["error"] and all(w in answer["error"] for w in words), (raw[:60], answer)
    assert untouched(console)


def test_pause_commits_the_episode_and_resume_starts_the_next(live):
    console, server, store_path = live
    session = console.sessions["sim-0"]
    path = "/api/sessions/sim-0/command"
    assert http(server, path, {"command": "pause"}, token=console.token)[0] == 200
    wait_until(lambda: session.snapshot()["state"] == "paused", what="the pause")
    pause = session.operator.log[-1]
    episode = EpisodeStore.open(store_path).episode(session.summaries[-1].index)
    assert len(episode["steps"]["action"]) == pause.step  # nothing was sent from the pause on
    assert episode["meta"]["operator"] == "console" + OPERATOR_PAUSE_MARK
    assert session.snapshot()["mode"] == "paused"
    # While paused only resume and e-stop mean something.
    status, answer = http(server, path, {"command": "takeover"}, token=console.token)
    assert status == 409 and "paused" in answer["error"] and session.operator.log[-1] is pause
    assert http(server, path, {"command": "resume"}, token=console.token)[0] == 200
    wait_until(lambda: session.snapshot()["episode"] == 2 and session.snapshot()["mode"] == "autonomous",
               what="the next episode")
