"""Operating the bot: real `serve` and `clock` processes scraped while things happen.

Each counter must move by exactly what happened (counted against the Slack fake's record and
the store), the exposition must parse with prometheus_client's own parser, `/readyz` must
say what is ready, and `LOG_FORMAT=json` lines must parse one by one and hold no secret.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from prometheus_client.parser import text_string_to_metric_families

from tests.feedserver import FeedServer
from tests.fixtures.app import CHANNEL, SlackSender, wait_for
from tests.slackfake import SlackFake
from tests.test_processes import free_port

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_FEED = ROOT / "config" / "example-feed.xml"
# Shaped like real credentials, so the log redaction has something to find.
TOKEN = "xoxb-4242-1717-opsTokenValueXYZ"
SECRET = "ops-signing-secret-0123456789abcdef"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Samples:
    """Every sample of the exposition, parsed by prometheus_client's own parser."""
    text = httpx.get(url, timeout=10).raise_for_status().text
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    """One sample; a labelled series never touched is absent, which is 0."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum over every series of ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)


def start(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "bot", *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return err


def ready(url: str) -> dict[str, object] | None:
    try:
        response = httpx.get(url, timeout=5)
    except httpx.HTTPError:
        return None
    return json.loads(response.text) if response.status_code == 200 else None


def json_lines(stderr: str) -> list[dict[str, object]]:
    """Every line of ``stderr`` is one JSON object with the fields operators filter on."""
    lines = [json.loads(line) for line in stderr.splitlines() if line.strip()]
    for line in lines:
        assert {"time", "level", "logger", "message"} <= line.keys(), line
    return lines


@pytest.fixture
def running() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture
def environment(
    tmp_path: Path, feed_server: FeedServer, slack_fake: SlackFake, db_url: str
) -> dict[str, str]:
    good = feed_server.route("/good.xml", EXAMPLE_FEED.read_bytes(), etag='"v1"')
    bad = feed_server.route("/bad.xml", b"", status=500)
    config = tmp_path / "digestbot.toml"
    config.write_text(
        f'[[shows]]\nname = "PyTorch"\nfeed = "{good}"\n\n'
        f'[[shows]]\nname = "Broken"\nfeed = "{bad}"\n\n'
        '[[channels]]\nid = "C0OPSGOOD"\nshows = ["PyTorch"]\n\n'
        '[[channels]]\nid = "C0OPSGONE"\nshows = ["PyTorch"]\n'
    )
    slack_fake.tokens.add(TOKEN)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLACK_")}
    env.update(
        DIGESTBOT_CONFIG=str(config),
        DATABASE_URL=db_url,
        SLACK_BOT_TOKEN=TOKEN,
        SLACK_SIGNING_SECRET=SECRET,
        SLACK_API_URL=slack_fake.api_url,
        PORT=str(free_port()),
        LOG_FORMAT="json",
    )
    return env


def _posted_rows(db_url: str) -> int:
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            query = "SELECT count(*) FROM deliveries WHERE state = 'posted'"
            return int(conn.execute(sa.text(query)).scalar_one())
    finally:
        engine.dispose()


def test_clock_metrics_count_a_poll_and_a_fan_out(
    environment: dict[str, str],
    slack_fake: SlackFake,
    running: list[subprocess.Popen[str]],
    db_url: str,
) -> None:
    """A poll with a failing feed, a fan-out through two 429s and into an archived channel."""
    port = free_port()
    env = {**environment, "METRICS_PORT": str(port)}
    slack_fake.fail_next("chat.postMessage", status=429, retry_after=1, times=2)
    slack_fake.channel_error("C0OPSGONE", "is_archived")
    proc = start(["-v", "clock"], env)
    running.append(proc)
    base = f"http://127.0.0.1:{port}"
    checks = wait_for(lambda: ready(f"{base}/readyz"), timeout=60, what="the clock ready")
    assert [c["check"] for c in checks["checks"]] == ["database", "slack", "scheduler"]  # type: ignore[index]

    def cycle_done() -> Samples | None:
        got = scrape(f"{base}/metrics")
        polled = total(got, "digestbot_feed_polls_total") == 2
        return got if polled and value(got, "digestbot_fanout_duration_seconds_count") else None

    got = wait_for(cycle_done, timeout=60, what="the first poll cycle delivered")
    posts = slack_fake.calls_to("chat.postMessage")
    ok = [c for c in posts if c.ok]
    errors = [str(c.response.get("error")) for c in posts if not c.ok]
    assert errors.count("ratelimited") == 2 and errors.count("is_archived") == 1, errors
    slack = "digestbot_slack_api_calls_total"
    assert value(got, slack, method="chat.postMessage", error="") == len(ok)
    assert value(got, slack, method="chat.postMessage", error="ratelimited") == 2
    assert value(got, slack, method="chat.postMessage", error="is_archived") == 1
    assert total(got, slack, method="chat.postMessage") == len(posts)
    assert value(got, "digestbot_slack_ratelimited_total", method="chat.postMessage") == 2
    assert value(got, "digestbot_slack_retry_after_waited_seconds_total") == 2.0

    deliveries = "digestbot_deliveries_total"
    assert value(got, deliveries, outcome="posted", reason="") == _posted_rows(db_url) > 0
    assert value(got, deliveries, outcome="paused", reason="is_archived") == 1
    assert value(got, deliveries, outcome="retried", reason="") == 2

    polls = "digestbot_feed_polls_total"
    assert value(got, polls, outcome="new", reason="") == 1
    assert value(got, polls, outcome="failed", reason="http_5xx") == 1
    assert value(got, "digestbot_feed_fetch_duration_seconds_count") == 2
    assert value(got, "digestbot_feed_read_bytes_total") == len(EXAMPLE_FEED.read_bytes())
    stored = value(got, "digestbot_episodes_stored_total", status="new")
    assert stored == _episodes(db_url) > 0
    assert value(got, "digestbot_feeds_failing") == 1
    assert value(got, "digestbot_feeds") == 2
    assert value(got, "digestbot_ledger_rows", state="pending") == 0
    assert value(got, "digestbot_poll_interval_seconds") == 15 * 60  # the default schedule
    assert total(got, "digestbot_build_info", engine=db_url.split(":")[0].split("+")[0]) == 1
    assert value(got, "process_resident_memory_bytes") > 0

    err = stop(proc)
    lines = json_lines(err)
    assert any(line.get("show") == "Broken" for line in lines), "a poll's lines name the show"
    assert TOKEN not in err and SECRET not in err


def _episodes(db_url: str) -> int:
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(sa.text("SELECT count(*) FROM episodes")).scalar_one())
    finally:
        engine.dispose()


def test_serve_metrics_count_slash_commands_events_and_refusals(
    environment: dict[str, str],
    slack_fake: SlackFake,
    running: list[subprocess.Popen[str]],
) -> None:
    proc = start(["-v", "serve"], environment)
    running.append(proc)
    base = f"http://127.0.0.1:{environment['PORT']}"
    checks = wait_for(lambda: ready(f"{base}/readyz"), timeout=60, what="serve ready")
    assert [c["check"] for c in checks["checks"]] == ["database", "slack"]  # type: ignore[index]
    assert slack_fake.calls_to("auth.test"), "readiness asked Slack to accept the token"
    before = scrape(f"{base}/metrics")
    sender = SlackSender(base, slack_fake, secret=SECRET)
    try:
        for text in ("help", "recent", "frobnicate"):
            assert sender.slash(text).status_code == 200
        body = sender.slash_body("subscribe PyTorch")
        ts = int(time.time())
        form = "application/x-www-form-urlencoded"
        assert sender.post(body, form, timestamp=ts).status_code == 200
        assert sender.post(body, form, timestamp=ts).status_code == 200  # a replay
        assert sender.post(body, form, secret="not-the-secret").status_code == 401
        assert sender.post(body, form, signed=False).status_code == 401
        event = {"type": "app_home_opened", "user": "U0ADA", "channel": "D0ADA", "tab": "home"}
        assert sender.event(event).status_code == 200
        sender.block_action("ops_unknown_action", "v", response_url=slack_fake.response_url())
        # Not HTTP at all: uvicorn's own warning, which must come out as JSON too.
        with socket.create_connection(("127.0.0.1", int(environment["PORT"]))) as raw:
            raw.sendall(b"NOT HTTP\r\n\r\n")
            raw.recv(1024)
    finally:
        sender.close()
    got = scrape(f"{base}/metrics")

    def moved(name: str, **labels: str) -> float:
        return value(got, name, **labels) - value(before, name, **labels)

    slash = "digestbot_slash_commands_total"
    assert moved(slash, subcommand="help", outcome="ok") == 1
    assert moved(slash, subcommand="recent", outcome="ok") == 1
    assert moved(slash, subcommand="other", outcome="ok") == 1
    assert moved(slash, subcommand="subscribe", outcome="ok") == 1
    assert moved(slash, subcommand="subscribe", outcome="replay") == 1
    assert moved("digestbot_replays_refused_total") == 1
    failures = "digestbot_signature_failures_total"
    assert moved(failures, reason="mismatch") == 1
    assert moved(failures, reason="malformed") == 1
    assert moved("digestbot_slack_events_total", type="app_home_opened") == 1
    ack = "digestbot_request_ack_duration_seconds_count"
    assert moved(ack, kind="command") == 5
    assert moved(ack, kind="event") == 1
    assert moved("digestbot_slack_actions_total", type="block_actions") == 1
    assert moved(ack, kind="action") == 1

    err = stop(proc)
    lines = json_lines(err)
    assert any(line["logger"] == "uvicorn.error" for line in lines), err
    replay = [line for line in lines if "replayed" in str(line["message"])]
    assert replay and replay[0]["team"] and replay[0]["channel"] == CHANNEL
    assert len(str(replay[0]["request_id"])) == 12
    assert TOKEN not in err and SECRET not in err
