"""Parsing runs off the event loop: the served app answers a slash command while a poll in the
same loop (as in ``digestbot run``) is still parsing a big feed."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import UTC, datetime

import httpx
import pytest

import bot.ingest
from bot.app import build_app
from bot.delivery import Deliverer
from bot.pipeline import run_once
from bot.slack import make_web_client
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.models import ParsedSource
from digests.render import Renderer
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.app import SIGNING_SECRET, SlackSender, sign
from tests.fixtures.delivery import rss, rss_item
from tests.slackfake import SlackFake

NOW = datetime(2026, 10, 31, 8, 0, tzinfo=UTC)


class GatedParse:
    """The real parse phase, held at its start until released: the test then knows the
    parse is in progress, whatever the machine's speed."""

    def __init__(self) -> None:
        self.real = bot.ingest.parse_feed
        self.started = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()

    def __call__(
        self, content: bytes, location: str, content_type: str | None = None
    ) -> ParsedSource:
        self.started.set()
        # Bounded so that a parse on the loop (the bug) ends the test instead of hanging it.
        self.release.wait(timeout=5)
        try:
            return self.real(content, location, content_type)
        finally:
            self.finished.set()


async def test_slash_command_is_answered_while_a_big_feed_parses(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    app_settings: Settings,
    deliverer: Deliverer,
    http: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    items = (rss_item(1 + n % 28).replace("pytorch-2026-10-", f"big-{n}-") for n in range(3000))
    big = rss(*items)
    url = feed_server.route("/big.xml", big)
    poll_settings = Settings(
        shows=[ShowConfig(name="PyTorch", feed=url)],
        schedule=ScheduleConfig(poll_minutes=15),
        team_id="T1",
        slack_bot_token=None,
    )
    gate = GatedParse()
    monkeypatch.setattr(bot.ingest, "parse_feed", gate)
    from bot.server import build_asgi

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
        run_once(poll_settings, store, deliverer.outbox, http, NOW, deliverer=deliverer)
    )
    try:
        assert await asyncio.to_thread(gate.started.wait, 10), "the parse never started"
        async with httpx.AsyncClient(transport=transport, base_url="http://app.test") as client:
            response = await client.post("/slack/events", content=body, headers=headers)
        parsing = gate.started.is_set() and not gate.finished.is_set()
    finally:
        gate.release.set()
        report = await poll
        sender.close()
    assert response.status_code == 200 and response.json()["blocks"]
    assert parsing, "the slash command was answered only after the parse"
    assert report.polls[0].status == "ok" and report.polls[0].new == 3000
