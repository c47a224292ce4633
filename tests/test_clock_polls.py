"""Two clocks poll each show once per interval, not once each.

Two real ``digestbot clock`` processes on one PostgreSQL schema — there, each a worker of
the job queue (``clock`` is ``worker``'s alias on PostgreSQL: the upgrade path) —
``poll_minutes = 1``, the feeds on the local feed server counting their GETs: one poll job
waits per show (``queueing_lock``) and one runs (``lock``), the stored next poll schedules
the next — and a failing feed backs off once, not once per worker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.feedserver import FeedServer
from tests.fixtures.delivery import rss, rss_item
from tests.slackfake import SlackFake

ROOT = Path(__file__).resolve().parents[1]
CLOCK = [sys.executable, "-m", "bot", "clock"]
SHOWS = ("Alpha", "Beta", "Gamma")
INTERVAL = 60.0  # poll_minutes = 1, the least there is


def write_config(path: Path, feeds: dict[str, str]) -> Path:
    lines = ['timezone = "UTC"']
    for name, url in feeds.items():
        lines += ["[[shows]]", f'name = "{name}"', f'feed = "{url}"', 'repo = "pytorch/pytorch"']
    lines += ["[schedule]", "poll_minutes = 1", "jitter_seconds = 3"]
    path.write_text("\n".join(lines) + "\n")
    return path


class GetTimes:
    """When each feed's GETs arrived, as seen by watching the feed server's log."""

    def __init__(self, server: FeedServer, paths: list[str]) -> None:
        self.server = server
        self.times: dict[str, list[float]] = {p: [] for p in paths}

    def look(self) -> None:
        now = time.monotonic()
        for path, seen in self.times.items():
            count = sum(1 for r in self.server.requests_to(path) if r.method == "GET")
            seen.extend([now] * (count - len(seen)))

    def watch(self, until: object, timeout: float) -> bool:
        assert callable(until)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.look()
            if until():
                return True
            time.sleep(0.02)
        return False


@pytest.mark.skipif(not os.environ.get("DIGESTBOT_TEST_POSTGRES_URL"), reason="needs PostgreSQL")
@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_two_clocks_poll_each_show_once_per_interval(
    db_url: str, slack_fake: SlackFake, feed_server: FeedServer, tmp_path: Path
) -> None:
    feeds = {
        name: feed_server.route(f"/{name}.xml", rss(rss_item(3)), etag=f'"{name}"')
        for name in SHOWS
    }
    # A failing feed: backed off after its first failure, whichever clock polls it next.
    feeds["Broken"] = feed_server.route("/Broken.xml", b"down", status=500)
    paths = [f"/{name}.xml" for name in feeds]
    env = dict(os.environ)
    env.update(
        DATABASE_URL=db_url,
        DIGESTBOT_CONFIG=str(write_config(tmp_path / "digestbot.toml", feeds)),
        SLACK_BOT_TOKEN=slack_fake.token,
        SLACK_API_URL=slack_fake.api_url,
        PYTHONPATH=str(ROOT),
    )
    gets = GetTimes(feed_server, paths)
    ok = paths[: len(SHOWS)]
    clocks = [
        subprocess.Popen(
            CLOCK, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    try:
        # Each show's poll of the second interval (or a second poll of the first one).
        assert gets.watch(lambda: all(len(gets.times[p]) >= 2 for p in ok), timeout=150), (
            gets.times,
            [c.poll() for c in clocks],
        )
        # A second clock's poll of the same interval comes within its jitter of the first.
        gets.watch(lambda: False, timeout=10)
    finally:
        for clock in clocks:
            clock.send_signal(signal.SIGTERM)
        errors = [clock.communicate(timeout=60)[1] for clock in clocks]
    assert [c.returncode for c in clocks] == [0, 0], errors
    # One GET a minute, not one per clock; the failing feed backed off to two minutes
    # after its one failure (two clocks made that two failures).
    counts = {path: len(times) for path, times in gets.times.items()}
    assert counts == {**dict.fromkeys(ok, 2), "/Broken.xml": 1}, gets.times
    for path in ok:
        first, second = gets.times[path]
        assert second - first > INTERVAL - 10, (path, second - first)
