"""The console's web app (FastAPI): the page, a JSON API and a websocket of live state.

Every request, HTTP or websocket, must carry the console's token, as ``?token=``
or an ``Authorization: Bearer`` header; :class:`TokenGate` refuses any other before
it reaches a route (HTTP 401; a websocket is closed before it is accepted, which
the server answers with 403). Routes:

- ``GET /``: the page (``static/index.html``);
- ``GET /api/state``: every session's tile data and the help queue;
- ``POST /api/sessions/{id}/command``: ``{"command", "operator"?, "clicked_at"?}``;
- ``POST /api/sessions/{id}/label``: ``{"label", "operator"?}``;
- ``POST /api/help/{id}/assign``: ``{"operator"}``;
- ``WS /ws``: pushes ``{"type": "state", ...}`` about ten times a second and
  ``{"type": "frame", "session", "seq", "jpeg"}`` (base64) for each new camera frame.
  It takes no messages: one from the browser closes it (1008).

A malformed request is 400, an unknown session or help request 404, a command the
session's state refuses 409; each answers ``{"error": one line}`` and changes nothing.
"""

from __future__ import annotations

import asyncio
import base64
import secrets
from importlib import resources
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs

import imageio.v3 as iio
import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from robot_learn.console.console_session import ConsoleCommandRefused
from robot_learn.console.operator_console import OperatorConsole
from robot_learn.console.request_checks import BadConsoleRequest

PUSH_PERIOD_S = 0.1


class TokenGate:
    """ASGI middleware: only requests with the token reach the app."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.token = app, token

    def authorised(self, scope: dict[str, Any]) -> bool:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        given = query.get("token", [""])[-1]
        for name, value in scope.get("headers", []):
            if name == b"authorization" and value.startswith(b"Bearer "):
                given = value[7:].decode("latin-1")
        return secrets.compare_digest(given.encode(), self.token.encode())

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        if scope["type"] in ("http", "websocket") and not self.authorised(scope):
            if scope["type"] == "http":
                refusal = JSONResponse({"error": "missing or wrong token; open the URL the console printed "
                                                 "at start (it carries ?token=...)"}, status_code=401)
                await refusal(scope, receive, send)
            else:
                await send({"type": "websocket.close", "code": 1008})
            return
        await self.app(scope, receive, send)


def encode_jpeg(frame: np.ndarray) -> str:
    """A uint8 HxWx3 frame as base64 JPEG."""
    return base64.b64encode(iio.imwrite("<bytes>", np.asarray(frame, dtype=np.uint8), extension=".jpeg",
                                        quality=85)).decode("ascii")


def build_app(console: OperatorConsole) -> Any:
    """The ASGI app serving ``console`` behind its token (see the module docstring)."""
    app = FastAPI(title="robot-learn console", docs_url=None, redoc_url=None, openapi_url=None)
    page = resources.files("robot_learn.console").joinpath("static/index.html").read_text()

    async def answer(call: Callable[[], dict[str, Any]]) -> JSONResponse:
        try:
            return JSONResponse(call())
        except ConsoleCommandRefused as err:
            return JSONResponse({"error": str(err)}, status_code=409)
        except BadConsoleRequest as err:
            return JSONResponse({"error": str(err)}, status_code=400)
        except LookupError as err:
            return JSONResponse({"error": str(err)}, status_code=404)

    @app.get("/", response_class=HTMLResponse)
    async def index() -> HTMLResponse:
        return HTMLResponse(page)

    @app.get("/api/state")
    async def state() -> JSONResponse:
        return JSONResponse(console.state())

    @app.post("/api/sessions/{session_id}/command")
    async def command(session_id: str, request: Request) -> JSONResponse:
        body = await request.body()
        return await answer(lambda: console.command(session_id, body))

    @app.post("/api/sessions/{session_id}/label")
    async def label(session_id: str, request: Request) -> JSONResponse:
        body = await request.body()
        return await answer(lambda: console.label(session_id, body))

    @app.post("/api/help/{request_id}/assign")
    async def assign(request_id: str, request: Request) -> JSONResponse:
        body = await request.body()
        return await answer(lambda: console.assign(request_id, body))

    @app.websocket("/ws")
    async def stream(ws: WebSocket) -> None:
        await ws.accept()
        sent: dict[str, int] = {}
        incoming = asyncio.ensure_future(ws.receive())
        try:
            while True:
                await ws.send_json({"type": "state", **console.state()})
                for sid, session in console.sessions.items():
                    seq, frame = session.frame()
                    if frame is not None and sent.get(sid) != seq:
                        sent[sid] = seq
                        await ws.send_json({"type": "frame", "session": sid, "seq": seq, "jpeg": encode_jpeg(frame)})
                done, _ = await asyncio.wait({incoming}, timeout=PUSH_PERIOD_S)
                if done:
                    if incoming.result().get("type") != "websocket.disconnect":
                        await ws.close(code=1008, reason="this websocket takes no messages; commands go by POST")
                    return
        except WebSocketDisconnect:
            return
        finally:
            incoming.cancel()

    return TokenGate(app, console.token)
