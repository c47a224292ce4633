"""Parsing runs off the event loop: the served app answers a slash command while a poll in the
same loop (as in ``digestbot run``) is still parsing — one big feed, or more feeds than the
thread pool has workers."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from datetime import UTC, datetime

import httpx
import pytest

import bot.jobs.ingest
from bot.delivery.deliverer import Deliverer
from bot.delivery.slack import make_web_client
from bot.jobs.pipeline import run_once
from bot.listeners.app import build_app
from bot.server.asgi import build_asgi
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.models import ParsedSource
from digests.render.renderer import Renderer
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.app import SIGNING_SECRET, SlackSender, sign
from tests.fixtures.delivery import rss, rss_item
from tests.slackfake import SlackFake

NOW = datetime(2026, 10, 31, 8, 0, tzinfo=UTC)
# asyncio's default thread pool, which the store's calls and the slash answers use too.
POOL_WORKERS = min(32, (os.cpu_count() or 1) + 4)


class GatedParse:
    """The real parse phase, held at its start until released: the test then knows the
    parses are in progress, whatever the machine's speed."""

    def __init__(self) -> None:
        self.real = bot.jobs.ingest.parse_feed
        self.lock = threading.Lock()
        self.started = 0
        self.finished = 0
        self.release = threading.Event()

    def __call__(
        self, content: bytes, location: str, content_type: str | None = None
    ) -> ParsedSource:
        with self.lock:
            self.started += 1
        # Bounded so that a parse on the loop (the bug) ends the test instead of hanging it.
        self.release.wait(timeout=5)
        try:
            return self.real(content, location, content_type)
        finally:
            with self.lock:
                self.finished += 1

    def wait_started(self, count: int) -> bool:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.started >= count:
                return True
            time.sleep(0.005)
        return False


def big_feed(items: int, prefix: str = "big") -> bytes:
    return rss(
        *(rss_item(1 + n % 28).replace("pytorch-2026-10-", f"{prefix}-{n}-") for n in range(items))
    )


async def answer_while_parsing(
    settings: Settings,
    store: Store,
    app_settings: Settings,
    slack_fake: SlackFake,
    deliverer: Deliverer,
    http: httpx.AsyncClient,
    gate: GatedParse,
    started: int,
) -> tuple[httpx.Response, bool, list[str]]:
    """A poll of ``settings`` in this loop and, once ``started`` parses are held, a signed
    ``/episodes help`` to the app: its answer, whether no parse had finished by then, and
    the polls' statuses."""
    app = build_app(
        app_settings, store, Renderer(tz=app_settings.tz), client=make_web_client(app_settings)
    )
    sender = SlackSender("http://app.test", slack_fake)
    body = sender.slash_body("help")
    ts = int(time.time())
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": str(ts),
        "X-Slack-Signature": sign(SIGNING_SECRET, ts, body),
    }
    transport = httpx.ASGITransport(app=build_asgi(app, store))
    poll = asyncio.ensure_future(
        run_once(settings, store, deliverer.outbox, http, NOW, deliverer=deliverer)
    )
    try:
        assert await asyncio.to_thread(gate.wait_started, started), "the parses never started"
        async with httpx.AsyncClient(transport=transport, base_url="http://app.test") as client:
            response = await client.post("/slack/events", content=body, headers=headers)
        parsing = gate.finished == 0
    finally:
        gate.release.set()
        report = await poll
        sender.close()
    return response, parsing, [p.status for p in report.polls]


def poll_settings(feeds: list[tuple[str, str]]) -> Settings:
    return Settings(
        shows=[ShowConfig(name=name, feed=url) for name, url in feeds],
        schedule=ScheduleConfig(poll_minutes=15),
        team_id="T1",
        slack_bot_token=None,
    )


async def test_slash_command_is_answered_while_a_big_feed_parses(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    app_settings: Settings,
    deliverer: Deliverer,
    http: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = poll_settings([("PyTorch", feed_server.route("/big.xml", big_feed(3000)))])
    gate = GatedParse()
    monkeypatch.setattr(bot.jobs.ingest, "parse_feed", gate)
    response, parsing, statuses = await answer_while_parsing(
        settings, store, app_settings, slack_fake, deliverer, http, gate, started=1
    )
    assert response.status_code == 200 and response.json()["blocks"]
    assert parsing, "the slash command was answered only after the parse"
    assert statuses == ["ok"]


async def test_more_feeds_than_pool_workers_leave_the_pool_to_the_answer(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    app_settings: Settings,
    deliverer: Deliverer,
    http: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    count = POOL_WORKERS + 2
    feeds = [
        (f"Show {n}", feed_server.route(f"/f{n}.xml", big_feed(50, prefix=f"s{n}")))
        for n in range(count)
    ]
    gate = GatedParse()
    monkeypatch.setattr(bot.jobs.ingest, "parse_feed", gate)
    # The slash answer goes to the same pool: the parses held must leave workers for it.
    held = bot.jobs.ingest.parse_concurrency()
    assert 0 < held < POOL_WORKERS
    response, parsing, statuses = await answer_while_parsing(
        poll_settings(feeds), store, app_settings, slack_fake, deliverer, http, gate, held
    )
    assert response.status_code == 200 and response.json()["blocks"]
    assert parsing, "the slash command waited for the parses to give the pool back"
    assert gate.started == count and statuses == ["ok"] * count
