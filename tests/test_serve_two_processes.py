"""Two `digestbot serve` behind one URL answer as one.

Two real `serve` processes on one database (SQLite file, PostgreSQL), the episodes polled
by a real `digestbot run --once`, signed requests sent to each, the Slack fake receiving
what a Share posts. A subscribe on A is seen by B's next answer about the channel's shows;
a Share clicked on B posts exactly the answer A showed, not the command run again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.feedserver import FeedServer
from tests.fixtures.app import USER, SlackSender, wait_for
from tests.slackfake import SlackFake
from tests.test_processes import free_port, wait_healthy

ROOT = Path(__file__).resolve().parent.parent
SECRET = "two-serves-signing-secret"
CHANNEL = "C0TWOSERV1"


def _item(show: str, day: int, headline: str) -> str:
    slug = f"{show.split()[0].lower()}-2026-10-{day:02d}"
    published = datetime(2026, 10, day, 13, tzinfo=UTC)
    return (
        f"<item><title>{show}: {headline}</title><guid isPermaLink='false'>{slug}</guid>"
        f"<link>https://shows.example.test/{slug}</link>"
        f"<pubDate>{published:%a, %d %b %Y %H:%M:%S} +0000</pubDate>"
        f"<description>{headline}, briefly.</description>"
        "<itunes:duration>PT3M</itunes:duration></item>"
    )


def _feed(show: str, *items: str) -> str:
    return (
        "<?xml version='1.0' encoding='UTF-8'?>\n"
        "<rss version='2.0' xmlns:itunes='http://www.itunes.com/dtds/podcast-1.0.dtd'>"
        f"<channel><title>{show}</title><link>https://shows.example.test/</link>"
        f"<description>A test feed.</description>{''.join(items)}</channel></rss>"
    )


RUST = [_item("Rust Weekly", 5, "Borrow Checker Notes"), _item("Rust Weekly", 2, "Const Generics")]
KERNEL = [_item("Kernel Notes", 4, "Scheduler Tweaks"), _item("Kernel Notes", 1, "Page Cache")]


@pytest.fixture
def environment(
    tmp_path: Path, feed_server: FeedServer, slack_fake: SlackFake, db_url: str
) -> dict[str, str]:
    rust = feed_server.route("/rust.xml", _feed("Rust Weekly", *RUST))
    kernel = feed_server.route("/kernel.xml", _feed("Kernel Notes", *KERNEL))
    config = tmp_path / "digestbot.toml"
    config.write_text(
        f'[[shows]]\nname = "Rust Weekly"\nfeed = "{rust}"\nrepo = "rust-lang/rust"\n\n'
        f'[[shows]]\nname = "Kernel Notes"\nfeed = "{kernel}"\nrepo = "torvalds/linux"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLACK_")}
    env.update(
        DIGESTBOT_CONFIG=str(config),
        DATABASE_URL=db_url,
        SLACK_BOT_TOKEN="xoxb-test",
        SLACK_SIGNING_SECRET=SECRET,
        SLACK_API_URL=slack_fake.api_url,
    )
    return env


def _poll(env: dict[str, str]) -> None:
    """One real poll of every show (`digestbot run --once`)."""
    done = subprocess.run(
        [sys.executable, "-m", "bot", "run", "--once"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


class Serve:
    """One `digestbot serve` on a port of its own, and a signed sender to it."""

    def __init__(self, env: dict[str, str], fake: SlackFake) -> None:
        port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bot", "serve"],
            env={**env, "PORT": str(port)},
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.base = f"http://127.0.0.1:{port}"
        self.sender = SlackSender(self.base, fake, secret=SECRET)

    def ready(self) -> Serve:
        wait_healthy(self.base, self.proc, "serve")
        assert self.proc.poll() is None, self.proc.stderr.read() if self.proc.stderr else ""
        return self

    def ask(self, text: str) -> dict[str, Any]:
        response = self.sender.slash(text, channel=CHANNEL)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def stop(self) -> str:
        self.sender.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            _, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate(timeout=10)
        return err or ""


@pytest.fixture
def serves(environment: dict[str, str], slack_fake: SlackFake) -> Iterator[tuple[Serve, Serve]]:
    _poll(environment)
    a, b = Serve(environment, slack_fake), Serve(environment, slack_fake)
    try:
        yield a.ready(), b.ready()
    finally:
        for serve in (a, b):
            assert "Traceback" not in serve.stop()


def _listed(body: dict[str, Any]) -> list[str]:
    """The episodes an answer lists, by their links' slugs."""
    text = str(body["blocks"])
    return sorted(
        slug
        for slug in ("rust-2026-10-05", "rust-2026-10-02", "kernel-2026-10-04", "kernel-2026-10-01")
        if f"https://shows.example.test/{slug}" in text
    )


def _share_value(body: dict[str, Any]) -> str:
    (button,) = body["blocks"][-1]["elements"]
    assert button["action_id"] == "episodes_share"
    return str(button["value"])


def test_a_subscribe_on_one_process_changes_the_others_answers(
    serves: tuple[Serve, Serve],
) -> None:
    a, b = serves
    every = ["kernel-2026-10-01", "kernel-2026-10-04", "rust-2026-10-02", "rust-2026-10-05"]
    # B answers (and caches) for a channel that follows nothing: every show.
    assert _listed(b.ask("recent")) == every
    assert _listed(b.ask("recent")) == every
    assert "Kernel Notes" in a.ask("subscribe Kernel Notes")["text"]
    # B's next answer is about the channel's one show, as A's is.
    assert _listed(b.ask("recent")) == ["kernel-2026-10-01", "kernel-2026-10-04"]
    assert _listed(a.ask("recent")) == ["kernel-2026-10-01", "kernel-2026-10-04"]
    a.ask("unsubscribe Kernel Notes")
    assert _listed(b.ask("recent")) == every


def test_share_on_another_process_posts_the_answer_shown(
    serves: tuple[Serve, Serve],
    environment: dict[str, str],
    feed_server: FeedServer,
    slack_fake: SlackFake,
) -> None:
    a, b = serves
    shown = a.ask("recent 3")
    assert _listed(shown) == ["kernel-2026-10-04", "rust-2026-10-02", "rust-2026-10-05"]
    # A newer episode arrives: the command run again would answer something else.
    feed_server.route(
        "/rust.xml", _feed("Rust Weekly", _item("Rust Weekly", 6, "Async Closures"), *RUST)
    )
    _poll(environment)
    rerun = b.ask("recent 3")
    assert "rust-2026-10-06" in str(rerun["blocks"]) and rerun["blocks"] != shown["blocks"]

    url = slack_fake.response_url()
    clicked = b.sender.block_action(
        "episodes_share", _share_value(shown), response_url=url, channel=CHANNEL, ephemeral=True
    )
    assert clicked.status_code == 200
    posted, deleted = wait_for(
        lambda: slack_fake.responses(url) if len(slack_fake.responses(url)) >= 2 else None,
        timeout=30,
        what="the shared answer",
    )
    assert posted["response_type"] == "in_channel"
    # Exactly what A showed: its blocks without the Share button, then who shared it.
    assert posted["text"] == shown["text"]
    assert posted["blocks"][:-1] == shown["blocks"][:-1]
    assert posted["blocks"][-1]["elements"][0]["text"] == f"Shared by <@{USER}>"
    assert deleted["delete_original"] is True
