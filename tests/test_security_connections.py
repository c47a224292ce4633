"""Connections that never finish a request: a half-sent request is
closed after the header timeout, and with the connections per process capped below the
file-descriptor limit, signed requests keep being answered while thousands of idle
half-requests are held open (a real ``digestbot serve`` under a 1,024-file limit)."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bot.listeners.app import build_app
from bot.server.asgi import build_asgi
from digests.render.renderer import Renderer
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.app import AppServer, SlackSender, make_settings, wait_for
from tests.slackfake import SlackFake
from tests.test_processes import EXAMPLE_FEED, ROOT, SECRET, free_port, stop, wait_healthy

HALF = b"POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slack-Request-Timest"
FULL = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def _closed_by_peer(sock: socket.socket) -> bool:
    try:
        while chunk := sock.recv(65536):
            del chunk  # a response first; then the close
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True
    return True


@pytest.fixture
def quick_server(slack_fake: SlackFake, store: Store) -> Iterator[AppServer]:
    settings = make_settings(slack_fake.api_url, http_header_timeout=0.5)
    server = AppServer(settings, build_asgi(build_app(settings, store, Renderer()), store))
    server.start()
    yield server
    server.stop()


def _connect(port: int, first: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(first)
    sock.setblocking(False)
    return sock


def test_a_half_sent_request_is_closed_after_the_header_timeout(
    quick_server: AppServer,
) -> None:
    half = _connect(quick_server.port, HALF)
    silent = _connect(quick_server.port, b"")
    # After a full request and its answer, a half-sent second one on the same connection.
    kept = _connect(quick_server.port, FULL)
    wait_for(lambda: _answered(kept), what="the first request's answer")
    kept.sendall(HALF)
    try:
        for sock in (half, silent, kept):
            wait_for(lambda s=sock: _closed_by_peer(s), what="the server to close it")
    finally:
        for sock in (half, silent, kept):
            sock.close()


def _answered(sock: socket.socket) -> bool:
    try:
        return sock.recv(65536).startswith(b"HTTP/1.1 200")
    except BlockingIOError:
        return False


def test_a_request_in_progress_outlives_the_header_timeout(quick_server: AppServer) -> None:
    # Headers complete, body slow: the body has its own limit (10 s, then 408), so the
    # header deadline leaves the request alone. A half-request opened beside it shows the
    # deadline has passed for both.
    stamp = str(int(time.time()))
    head = (
        "POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
        f"X-Slack-Request-Timestamp: {stamp}\r\nX-Slack-Signature: v0={'0' * 64}\r\n\r\n"
    ).encode()
    slow = _connect(quick_server.port, head + b"ab")
    half = _connect(quick_server.port, HALF)
    try:
        wait_for(lambda: _closed_by_peer(half), what="the deadline to close the half-request")
        slow.sendall(b"cd")
        wait_for(lambda: _answered_with(slow, b"HTTP/1.1 401"), what="the refusal")
    finally:
        slow.close()
        half.close()


def _answered_with(sock: socket.socket, start: bytes) -> bool:
    try:
        data = sock.recv(65536)
    except BlockingIOError:
        return False
    assert data.startswith(start), data
    return True


# -- the cap, in a real process under a low file limit ----------------------------------------

FILE_LIMIT = 1024
HALF_REQUESTS = 2000


def _own_file_limit(wanted: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted and (hard == resource.RLIM_INFINITY or hard > soft):
        soft = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return soft


def _low_file_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FILE_LIMIT, FILE_LIMIT))


@pytest.fixture
def capped_serve(
    tmp_path: Path, feed_server: FeedServer, slack_fake: SlackFake
) -> Iterator[tuple[str, subprocess.Popen[str], Path]]:
    feed = feed_server.route("/pytorch.xml", EXAMPLE_FEED.read_bytes())
    config = tmp_path / "digestbot.toml"
    config.write_text(f'[[shows]]\nname = "PyTorch"\nfeed = "{feed}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "HTTP_"))}
    port = free_port()
    env.update(
        DIGESTBOT_CONFIG=str(config),
        DATABASE_URL=f"sqlite:///{tmp_path / 'bot.sqlite3'}",
        SLACK_BOT_TOKEN="xoxb-test",
        SLACK_SIGNING_SECRET=SECRET,
        SLACK_API_URL=slack_fake.api_url,
        PORT=str(port),
        HTTP_HEADER_TIMEOUT="300",  # the half-requests stay for the whole test
    )
    log = tmp_path / "serve.log"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bot", "serve"],
            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err, text=True,
            preexec_fn=_low_file_limit,
        )  # fmt: skip
    try:
        yield f"http://127.0.0.1:{port}", proc, log
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def test_signed_requests_are_answered_while_thousands_of_half_requests_are_held(
    capped_serve: tuple[str, subprocess.Popen[str], Path], slack_fake: SlackFake
) -> None:
    base, proc, log = capped_serve
    wait_healthy(base, proc, "serve")
    # As many as this process may open, up to 2,000: twice the server's file limit.
    count = min(HALF_REQUESTS, _own_file_limit(HALF_REQUESTS + 200) - 200)
    assert count > FILE_LIMIT
    port = int(base.rsplit(":", 1)[1])
    with contextlib.ExitStack() as held:
        for _ in range(count):
            held.callback((sock := _connect(port, HALF)).close)
        sender = SlackSender(base, slack_fake, secret=SECRET)
        held.callback(sender.close)
        for _ in range(5):
            reply = sender.post(sender.slash_body("help"), "application/x-www-form-urlencoded")
            assert reply.status_code == 200
            assert "/episodes" in json.dumps(reply.json())
        with httpx.Client(timeout=30) as http:
            assert http.get(f"{base}/healthz").status_code == 200
        del sock
    code, _ = stop(proc)
    text = log.read_text()
    assert code == 0, text
    assert text.count("HTTP connections at the cap of") == 1, text
    assert "Traceback" not in text and "out of system resource" not in text, text
