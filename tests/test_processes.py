"""The long-running commands as the Procfile starts them: `digestbot serve` and `digestbot run`.

Real subprocesses on a free port, signed requests over HTTP, the Slack fake and a feed on
loopback; SIGTERM must end them cleanly.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.feedserver import FeedServer
from tests.fixtures.app import SlackSender, wait_for
from tests.slackfake import SlackFake

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_FEED = ROOT / "config" / "example-feed.xml"
SECRET = "process-test-signing-secret"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def environment(
    tmp_path: Path, feed_server: FeedServer, slack_fake: SlackFake, db_url: str
) -> dict[str, str]:
    feed = feed_server.route("/pytorch.xml", EXAMPLE_FEED.read_bytes(), etag='"v1"')
    config = tmp_path / "digestbot.toml"
    config.write_text(
        f'[[shows]]\nname = "PyTorch"\nfeed = "{feed}"\n\n'
        '[[channels]]\nid = "C0PROCESS1"\nshows = ["PyTorch"]\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLACK_")}
    env.update(
        DIGESTBOT_CONFIG=str(config),
        DATABASE_URL=db_url,
        SLACK_BOT_TOKEN="xoxb-test",
        SLACK_SIGNING_SECRET=SECRET,
        SLACK_API_URL=slack_fake.api_url,
        PORT=str(free_port()),
    )
    return env


def start(command: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "bot", command],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def running() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def healthy(base: str, http: httpx.Client) -> bool:
    try:
        return http.get(f"{base}/healthz").status_code == 200
    except httpx.HTTPError:
        return False


def wait_healthy(base: str, proc: subprocess.Popen[str], what: str) -> None:
    """Until ``base`` answers /healthz or ``proc`` ends. One client for all the tries: a new
    one per try builds an SSL context each time, CPU taken from the starting bot."""
    with httpx.Client(timeout=1) as http:
        wait_for(lambda: healthy(base, http) or proc.poll() is not None, timeout=60, what=what)


def stop(proc: subprocess.Popen[str]) -> tuple[int, str]:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    return proc.returncode, err


def test_serve_answers_signed_commands_and_stops_on_sigterm(
    environment: dict[str, str],
    slack_fake: SlackFake,
    running: list[subprocess.Popen[str]],
) -> None:
    proc = start("serve", environment)
    running.append(proc)
    base = f"http://127.0.0.1:{environment['PORT']}"
    wait_healthy(base, proc, "serve")
    assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
    sender = SlackSender(base, slack_fake, secret=SECRET)
    try:
        reply = sender.post(sender.slash_body("help"), "application/x-www-form-urlencoded")
        assert reply.status_code == 200
        assert "/episodes" in json.dumps(reply.json())
        forged = sender.post(
            sender.slash_body("help"), "application/x-www-form-urlencoded", secret="wrong"
        )
        assert forged.status_code == 401
    finally:
        sender.close()
    # serve is HTTP only: the clock is a separate process, so nothing was posted.
    assert slack_fake.calls_to("chat.postMessage") == []
    code, err = stop(proc)
    assert code == 0, err
    assert "Traceback" not in err


def test_run_serves_and_polls_in_one_process(
    environment: dict[str, str],
    slack_fake: SlackFake,
    running: list[subprocess.Popen[str]],
) -> None:
    proc = start("run", environment)
    running.append(proc)
    base = f"http://127.0.0.1:{environment['PORT']}"
    wait_healthy(base, proc, "run")
    assert proc.poll() is None
    posts = wait_for(
        lambda: [m for m in slack_fake.messages("C0PROCESS1") if not m.get("thread_ts")],
        timeout=60,
        what="the first poll's digest",
    )
    assert len(posts) == 1 and "All-Gather Showdown" in posts[0]["text"]
    code, err = stop(proc)
    assert code == 0, err
    assert "Traceback" not in err, err


def test_serve_without_slack_credentials_is_one_line(environment: dict[str, str]) -> None:
    env = {k: v for k, v in environment.items() if k != "SLACK_SIGNING_SECRET"}
    result = subprocess.run(
        [sys.executable, "-m", "bot", "serve"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "digestbot: error: serve needs SLACK_SIGNING_SECRET (HTTP) or SLACK_APP_TOKEN (Socket Mode)"
    ]


@pytest.mark.parametrize("command", ["serve", "run"])
def test_a_port_in_use_is_one_line(environment: dict[str, str], command: str) -> None:
    port = int(environment["PORT"])
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", port))
        taken.listen()
        result = subprocess.run(
            [sys.executable, "-m", "bot", command],
            env=environment,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"digestbot: error: port {port} is already in use (set PORT)"
    ]
