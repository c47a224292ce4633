"""Hostile requests to ``/slack/events``: the body limit holds
while reading, chunked bodies included; unsigned or malformed requests get 401 before
anything parses them; signed payloads of odd shape get a polite reply, never a 500."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import select
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

import pytest
from starlette.types import ASGIApp

from bot.listeners.app import build_app
from bot.messages.errors import UNREADABLE_REQUEST
from bot.middleware.odd_payloads import odd_shape, quiet_odd_shapes
from bot.server import asgi as server
from bot.server.asgi import MAX_BODY, build_asgi
from config.settings import Settings
from digests.render.renderer import Renderer
from digests.store import Store
from tests.fixtures.app import SIGNING_SECRET, RunningApp, sign
from tests.hostile import MB, EndlessBody, chunked_request

FORM = "application/x-www-form-urlencoded"
FAKE_SIGNATURE = "v0=" + "0" * 64  # Slack's shape, not Slack's key


@pytest.fixture
def asgi(app_settings: Settings, store: Store) -> ASGIApp:
    return build_asgi(build_app(app_settings, store, Renderer()), store)


async def call(
    app: ASGIApp, headers: dict[str, str], receive: Callable[[], Awaitable[Any]]
) -> tuple[int, bytes]:
    """One POST /slack/events straight into the ASGI app; (status, body)."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/slack/events",
        "raw_path": b"/slack/events",
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 3000),
    }
    status = 0
    body = bytearray()

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            body.extend(message.get("body", b""))

    await app(scope, receive, send)
    return status, bytes(body)


def signed_headers(body: bytes, content_type: str = FORM, **extra: str) -> dict[str, str]:
    ts = int(time.time())
    headers = {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": str(ts),
        "X-Slack-Signature": sign(SIGNING_SECRET, ts, body),
    }
    return {**headers, **extra}


def post(app: RunningApp, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    response = app.sender.http.post("/slack/events", content=body, headers=headers)
    return response.status_code, response.text


# chunked bodies ----------------------------------------------------------------------------


async def test_unsigned_chunked_body_is_refused_before_a_byte_is_read(asgi: ASGIApp) -> None:
    body = EndlessBody(200 * MB)
    status, _ = await call(asgi, {"Content-Type": FORM, "Transfer-Encoding": "chunked"}, body)
    assert status == 401
    assert body.sent == 0


async def test_chunked_body_with_forged_signature_stops_at_the_limit(asgi: ASGIApp) -> None:
    # Plausible headers (fresh timestamp, the signature's shape) get the body read, but only
    # up to the limit: the HMAC can only be checked on a whole body.
    body = EndlessBody(200 * MB)
    headers = {
        "Content-Type": FORM,
        "X-Slack-Request-Timestamp": str(int(time.time())),
        "X-Slack-Signature": FAKE_SIGNATURE,
    }
    status, _ = await call(asgi, headers, body)
    assert status == 413
    assert body.sent <= MAX_BODY + body.chunk


async def test_a_signed_chunked_body_under_the_limit_is_served(
    asgi: ASGIApp, slack_app: RunningApp
) -> None:
    payload = slack_app.sender.slash_body("help")
    pieces = [payload[:10], payload[10:50], payload[50:]]

    async def receive() -> dict[str, Any]:
        piece = pieces.pop(0)
        return {"type": "http.request", "body": piece, "more_body": bool(pieces)}

    status, text = await call(asgi, signed_headers(payload), receive)
    assert status == 200, text
    assert "/episodes" in text.decode()


async def test_a_body_that_never_ends_times_out(
    asgi: ASGIApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server, "BODY_TIMEOUT", 0.2)
    first = True

    async def receive() -> dict[str, Any]:
        nonlocal first
        if first:
            first = False
            return {"type": "http.request", "body": b"text=", "more_body": True}
        await asyncio.Event().wait()  # the client stops sending and never hangs up
        raise AssertionError("unreachable")

    headers = {
        "Content-Type": FORM,
        "X-Slack-Request-Timestamp": str(int(time.time())),
        "X-Slack-Signature": FAKE_SIGNATURE,
    }
    status, _ = await call(asgi, headers, receive)
    assert status == 408


def _send_chunked(port: int, most: int, headers: dict[str, str]) -> bytes:
    """Send up to ``most`` bytes of a chunked POST that never ends, stopping early once the
    server answers; return the answer. A server that waits for the whole body never
    answers, and recv() times out."""
    request = chunked_request("127.0.0.1", port, "/slack/events", most)
    head = next(request)
    extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head[:-2] + extra + b"\r\n")
        for piece in request:
            if piece == b"0\r\n\r\n" or select.select([sock], [], [], 0)[0]:
                break  # the end (never sent: this body does not end), or an answer
            try:
                sock.sendall(piece)
            except (BrokenPipeError, ConnectionResetError):
                break
        answer = b""
        while b"\r\n\r\n" not in answer:
            more = sock.recv(65536)
            if not more:
                break
            answer += more
    return answer


@pytest.mark.parametrize(("forged", "status"), [(False, b"401"), (True, b"413")])
def test_chunked_post_over_a_real_socket_is_answered_before_it_ends(
    served_app: RunningApp, forged: bool, status: bytes
) -> None:
    # 8 MB offered, the end never sent: answered after at most the limit (1 MB).
    assert served_app.server is not None
    headers = {}
    if forged:
        headers = {
            "X-Slack-Request-Timestamp": str(int(time.time())),
            "X-Slack-Signature": FAKE_SIGNATURE,
        }
    answer = _send_chunked(served_app.server.port, 8 * MB, headers)
    assert answer.startswith(b"HTTP/1.1 " + status), answer[:200]


# unsigned and malformed --------------------------------------------------------------------

DEEP = b"[" * 50_000


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (urlencode({"payload": "not json"}).encode(), FORM),
        (urlencode({"payload": "[1, 2]"}).encode(), FORM),
        (b"\xff\xfe\xfd invalid utf-8", FORM),
        (DEEP, "application/json"),
        (DEEP + b"]" * 50_000, "application/json"),
        (b"[1]", "application/json"),
        (b"text=hi", None),
    ],
)
def test_unsigned_malformed_requests_get_401(
    slack_app: RunningApp, body: bytes, content_type: str | None
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    assert post(slack_app, body, headers) == (401, '{"error": "invalid request"}')


@pytest.mark.parametrize(
    "timestamp", ["abc", "1.5", "9" * 400, "", "+1", "-1", "0x10", "1e9", "١٢٣"]
)
def test_timestamps_that_are_not_unix_seconds_get_401(
    slack_app: RunningApp, timestamp: str
) -> None:
    body = slack_app.sender.slash_body("subscribe")
    # Even with the HMAC right for that very timestamp.
    base = b"v0:" + timestamp.encode() + b":" + body
    signature = "v0=" + hmac.new(SIGNING_SECRET.encode(), base, hashlib.sha256).hexdigest()
    headers = {
        b"Content-Type": FORM.encode(),
        b"X-Slack-Request-Timestamp": timestamp.encode(),
        b"X-Slack-Signature": signature.encode(),
    }
    response = slack_app.sender.http.post("/slack/events", content=body, headers=headers)
    assert response.status_code == 401
    assert slack_app.store.subscriptions(team_id="T0TEST") == []


def test_a_stale_but_correctly_signed_request_gets_401(slack_app: RunningApp) -> None:
    body = slack_app.sender.slash_body("list")
    old = int(time.time()) - 301
    headers = {
        "Content-Type": FORM,
        "X-Slack-Request-Timestamp": str(old),
        "X-Slack-Signature": sign(SIGNING_SECRET, old, body),
    }
    assert post(slack_app, body, headers)[0] == 401


# signed, odd shapes ------------------------------------------------------------------------


def _form(payload: Any) -> bytes:
    return urlencode({"payload": payload if isinstance(payload, str) else json.dumps(payload)})


ACTION_BASE = {"type": "block_actions", "team": {"id": "T0TEST"}, "user": {"id": "U0USER0001"}}


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (_form("not json").encode(), FORM),
        (_form("[1, 2]").encode(), FORM),
        (_form({**ACTION_BASE, "actions": {"action_id": "x"}}).encode(), FORM),
        (_form({**ACTION_BASE, "actions": ["x"]}).encode(), FORM),
        (b"\xff\xfe\xfd", FORM),
        (DEEP, "application/json"),
        (DEEP + b"]" * 50_000, "application/json"),
        (b"[1]", "application/json"),
        (json.dumps({"type": "event_callback", "event": "x", "team_id": "T0TEST"}).encode(),
         "application/json"),
    ],
)  # fmt: skip
def test_signed_odd_shapes_get_a_polite_reply(
    slack_app: RunningApp, body: bytes, content_type: str
) -> None:
    status, text = post(slack_app, body, signed_headers(body, content_type))
    assert status == 200, text
    assert json.loads(text)["text"] == UNREADABLE_REQUEST


# Odd shapes that reach Bolt's matching: Bolt raised inside a
# listener matcher or its own dispatch and logged a traceback for each, though the reply
# was right.
ODD_SHAPES = [
    (_form({**ACTION_BASE, "actions": "x"}).encode(), FORM),
    (_form({**ACTION_BASE, "actions": [None]}).encode(), FORM),
    (_form({**ACTION_BASE, "actions": [{"action_id": 7, "value": "v"}]}).encode(), FORM),
    (_form({**ACTION_BASE, "actions": [{"action_id": None}]}).encode(), FORM),
    (_form({**ACTION_BASE, "actions": [[]]}).encode(), FORM),
    (_form({"type": "view_submission", "view": "x", "team": {"id": "T0TEST"}}).encode(), FORM),
    (_form({"type": "shortcut", "callback_id": 5, "team": "x"}).encode(), FORM),
    (json.dumps({"type": "event_callback", "event": "x", "team_id": "T0TEST"}).encode(),
     "application/json"),
    (json.dumps({"type": "event_callback", "event": {"type": 5}, "team_id": 7}).encode(),
     "application/json"),
    (json.dumps({"type": "event_callback", "event": [None], "team_id": "T0TEST"}).encode(),
     "application/json"),
    (b"command=/episodes&text=help&team_id=T0TEST&user_id=U1&channel_id=C1&command=",
     FORM),
]  # fmt: skip


@pytest.mark.parametrize(("body", "content_type"), ODD_SHAPES)
def test_odd_signed_payloads_log_one_warning_and_no_traceback(
    slack_app: RunningApp, body: bytes, content_type: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        status, text = post(slack_app, body, signed_headers(body, content_type))
        slack_app.settle()
    assert status in (200, 404), text
    if status == 200 and text:
        assert "dispatch_failed" not in text
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert not [r for r in loud if r.exc_info or "Traceback" in r.getMessage()], [
        (r.name, r.getMessage()) for r in loud
    ]
    assert len(loud) <= 1, [(r.name, r.getMessage()) for r in loud]


async def test_a_failure_on_a_payload_of_slacks_shape_keeps_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    body = {**ACTION_BASE, "actions": [{"action_id": "digest_prs", "value": "v"}]}
    assert odd_shape(body) is None
    try:
        raise RuntimeError("a bug of ours")
    except RuntimeError as exc:
        error = exc
    with caplog.at_level(logging.WARNING):
        await quiet_odd_shapes(error, body)
    (record,) = caplog.records
    assert record.levelno == logging.ERROR and record.exc_info is not None
