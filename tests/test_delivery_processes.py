"""Exactly once across processes: a ``run --once`` killed mid fan-out, and two clocks at once.

The processes are real (``subprocess``), the Slack fake and the feed server are real HTTP on
127.0.0.1, the database is the parametrized SQLite file or PostgreSQL schema.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from digests.store import Store
from digests.store.ledger import Ledger
from tests.feedserver import FeedServer
from tests.fixtures.delivery import keys_in, rss, rss_item
from tests.slackfake import SlackFake

ROOT = Path(__file__).resolve().parents[1]
KEY = "PyTorch:pytorch-2026-10-03"

RUN_ONCE = [sys.executable, "-m", "bot", "run", "--once"]

CLOCK = """
import asyncio, logging
from bot.scheduler import run_clock
from config.settings import load_settings
logging.basicConfig(level=logging.WARNING)
asyncio.run(run_clock(load_settings()))
"""


def write_config(path: Path, feed_url: str, channels: list[str]) -> Path:
    lines = [
        'timezone = "UTC"',
        "[[shows]]",
        'name = "PyTorch"',
        f'feed = "{feed_url}"',
        'repo = "pytorch/pytorch"',
    ]
    for channel in channels:
        lines += ["[[channels]]", f'id = "{channel}"', 'shows = ["PyTorch"]', "recap = false"]
    lines += ["[schedule]", "poll_minutes = 60", "jitter_seconds = 0"]
    path.write_text("\n".join(lines) + "\n")
    return path


def env_for(db_url: str, config: Path, fake: SlackFake) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=db_url,
        DIGESTBOT_CONFIG=str(config),
        SLACK_BOT_TOKEN=fake.token,
        SLACK_API_URL=fake.api_url,
        PYTHONPATH=str(ROOT),
    )
    return env


def spawn(script: str | list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        script if isinstance(script, list) else [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(predicate: object, timeout: float = 60.0) -> bool:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def top_level_posts(fake: SlackFake) -> int:
    return sum(
        1
        for call in fake.calls_to("chat.postMessage")
        if call.ok and not call.params.get("thread_ts")
    )


def test_run_once_killed_mid_fan_out_then_rerun_leaves_one_copy_each(
    db_url: str, slack_fake: SlackFake, feed_server: FeedServer, tmp_path: Path
) -> None:
    channels = [f"C0KILL{n:03d}" for n in range(80)]
    url = feed_server.route("/feed.xml", rss(rss_item(3), rss_item(2)), etag='"v1"')
    env = env_for(db_url, write_config(tmp_path / "digestbot.toml", url, channels), slack_fake)
    slack_fake.latency = 0.1  # 80 channels x 2 calls / 20 at once: about a second of fan-out

    first = spawn(RUN_ONCE, env)
    try:
        assert wait_for(lambda: top_level_posts(slack_fake) >= 15), first.communicate()
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    killed_at = top_level_posts(slack_fake)
    assert killed_at < len(channels), "the kill came after the fan-out finished"

    slack_fake.latency = 0.0
    second = spawn(RUN_ONCE, env)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err

    copies = {c: keys_in(slack_fake.messages(c)).count(KEY) for c in channels}
    assert copies == dict.fromkeys(channels, 1)
    for channel in channels:
        parent = next(m for m in slack_fake.messages(channel) if not m.get("thread_ts"))
        replies = [m for m in slack_fake.messages(channel) if m.get("thread_ts") == parent["ts"]]
        assert replies, channel  # every digest has its thread
    store = Store.open(db_url)
    try:
        rows = Ledger.for_store(store).all_rows()
    finally:
        store.close()
    assert {r.state for r in rows if r.kind == "episode"} == {"posted"}
    assert len([r for r in rows if r.kind == "episode"]) == len(channels)
    assert "1 feeds polled (0 failing)" in out and "posted" in out


def test_run_once_without_a_token_prints_then_prints_nothing_new(
    db_url: str, feed_server: FeedServer, tmp_path: Path
) -> None:
    url = feed_server.route("/feed.xml", rss(rss_item(3), rss_item(2)), etag='"v1"')
    env = dict(os.environ)
    for name in ("SLACK_BOT_TOKEN", "SLACK_API_URL", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN"):
        env.pop(name, None)
    env.update(
        DATABASE_URL=db_url,
        DIGESTBOT_CONFIG=str(write_config(tmp_path / "d.toml", url, ["C0PRINT01"])),
        PYTHONPATH=str(ROOT),
    )
    first = subprocess.run(RUN_ONCE, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    second = subprocess.run(
        RUN_ONCE, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert first.returncode == 0 and second.returncode == 0, (first.stderr, second.stderr)
    assert first.stdout.count("would post to #C0PRINT01\n") == 1
    assert "Daily Briefing 3" in first.stdout and "Daily Briefing 2" not in first.stdout
    assert "would post" not in second.stdout
    assert "0 posted" in second.stdout


@pytest.mark.skipif(not os.environ.get("DIGESTBOT_TEST_POSTGRES_URL"), reason="needs PostgreSQL")
@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_two_clocks_on_postgresql_post_each_digest_once(
    db_url: str, slack_fake: SlackFake, feed_server: FeedServer, tmp_path: Path
) -> None:
    channels = [f"C0TWO{n:03d}" for n in range(60)]
    url = feed_server.route("/feed.xml", rss(rss_item(3), rss_item(2)), etag='"v1"', delay=0.0)
    env = env_for(db_url, write_config(tmp_path / "digestbot.toml", url, channels), slack_fake)
    slack_fake.latency = 0.05

    clocks = [spawn(CLOCK, env), spawn(CLOCK, env)]
    try:
        assert wait_for(
            lambda: all(keys_in(slack_fake.messages(c)) for c in channels), timeout=90
        ), [p.poll() for p in clocks]
        time.sleep(0.5)  # anything doubled would land now
    finally:
        for proc in clocks:
            proc.send_signal(signal.SIGTERM)
        outputs = [proc.communicate(timeout=60) for proc in clocks]
    assert [p.returncode for p in clocks] == [0, 0], outputs

    copies = {c: keys_in(slack_fake.messages(c)).count(KEY) for c in channels}
    assert copies == dict.fromkeys(channels, 1)
    assert top_level_posts(slack_fake) == len(channels)
    fetches = feed_server.requests_to("/feed.xml")
    assert 1 <= len(fetches) <= 2


HOLD_OWNER = """
import sys, time
from digests.store import Store
from digests.store.ledger import Ledger, OwnerLock
store = Store.open(sys.argv[1])
lock = OwnerLock(Ledger.for_store(store), sys.argv[2])
print("held", flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not os.environ.get("DIGESTBOT_TEST_POSTGRES_URL"), reason="needs PostgreSQL")
@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_an_owner_is_alive_exactly_as_long_as_its_process(db_url: str) -> None:
    """The other clock's rows are left alone while it lives and recovered once it is gone."""
    store = Store.open(db_url)
    ledger = Ledger.for_store(store)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_OWNER, db_url, "other-clock:42:abcd"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert ledger.owner_alive("other-clock:42:abcd")
        assert not ledger.owner_alive("never-started:1:0000")
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        assert wait_for(lambda: not ledger.owner_alive("other-clock:42:abcd"), timeout=10)
    finally:
        if holder.poll() is None:
            holder.kill()
        store.close()
