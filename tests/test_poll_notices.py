"""Feed notices carry feed-controlled words (a reason phrase, a Location header, a page's
link): they reach Slack escaped, in the fallback ``text`` as in the blocks, and cut to fit."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from bot.delivery.deliverer import Deliverer
from bot.jobs.pipeline import run_once
from bot.jobs.plan import notice_deliveries
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.decide.deliveries import feed_notice
from digests.render.limits import FALLBACK_TEXT, SECTION_TEXT
from digests.render.renderer import Renderer
from digests.store import Store
from digests.types import FetchState, Subscription
from tests.fixtures.delivery import rss, rss_item
from tests.slackfake import SlackFake

TEAM = "T1"
NOW = datetime(2026, 10, 6, 8, 0, tzinfo=UTC)
FEED = "https://feeds.example/feed.xml"
SHOW = "PyTorch & <!here>"
HOSTILE = "<!channel> <https://evil.example|Click here> & co"
RAW = ("<!channel>", "<!here>", "<https://evil.example|Click here>")
# An `&` that does not start one of the three entities Slack knows.
BARE_AMP = re.compile(r"&(?!amp;|lt;|gt;)")

Handler = Callable[[httpx.Request], httpx.Response]


def reason_phrase(request: httpx.Request) -> httpx.Response:
    return httpx.Response(503, extensions={"reason_phrase": f"Down {HOSTILE}".encode()})


def location(request: httpx.Request) -> httpx.Response:
    # A redirect loop through a hostile Location: the error names where it looped.
    return httpx.Response(302, headers={"Location": f"https://feeds.example/{HOSTILE}"})


def page_link(request: httpx.Request) -> httpx.Response:
    href = HOSTILE.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    page = (
        "<html><head><title>Nothing here</title>"
        f'<link rel="alternate" type="application/rss+xml" href="https://feeds.example/{href}">'
        "</head><body><p>Hello.</p></body></html>"
    )
    return httpx.Response(200, headers={"Content-Type": "text/html"}, text=page)


def long_reason(request: httpx.Request) -> httpx.Response:
    return httpx.Response(500, extensions={"reason_phrase": (HOSTILE + " ").encode() * 200})


def healthy(request: httpx.Request) -> httpx.Response:
    return httpx.Response(
        200, headers={"Content-Type": "application/rss+xml"}, content=rss(rss_item(3))
    )


def assert_escaped(message: dict[str, Any]) -> None:
    for text in (message["text"], json.dumps(message["blocks"], ensure_ascii=False)):
        for raw in RAW:
            assert raw not in text, text
        assert not BARE_AMP.search(text.replace('\\"', "")), text
    for block in message["blocks"]:
        if block.get("type") == "section":
            assert len(block["text"]["text"]) <= SECTION_TEXT
    assert len(message["text"]) <= FALLBACK_TEXT


@pytest.mark.parametrize("failing", [reason_phrase, location, page_link, long_reason])
async def test_every_notice_path_escapes_feed_text(
    store: Store, slack_fake: SlackFake, deliverer: Deliverer, failing: Handler
) -> None:
    settings = Settings(
        shows=[ShowConfig(name=SHOW, feed=FEED)],
        schedule=ScheduleConfig(poll_minutes=15),
        team_id=TEAM,
        slack_bot_token=None,
    )
    store.ensure_show(SHOW, FEED, "pytorch/pytorch")
    store.subscribe(TEAM, "C1", SHOW, source="config")
    handler: list[Handler] = [healthy]
    transport = httpx.MockTransport(lambda request: handler[0](request))
    async with httpx.AsyncClient(transport=transport) as http:
        for n, step in enumerate([healthy, failing, failing, healthy]):
            handler[0] = step
            when = NOW + timedelta(hours=n)
            await run_once(settings, store, deliverer.outbox, http, when, deliverer=deliverer)
    texts = [m["text"] for m in slack_fake.messages("C1")]
    notices = [m for m in slack_fake.messages("C1") if "feed is failing" in m["text"]]
    recovered = [m for m in slack_fake.messages("C1") if "feed has recovered" in m["text"]]
    assert len(notices) == 1 and len(recovered) == 1, texts
    for message in (*notices, *recovered):
        assert_escaped(message)
    assert "&lt;!here&gt;" in recovered[0]["text"]


def test_the_renderer_escapes_both_notices_and_cuts_a_long_one() -> None:
    renderer = Renderer()
    before = FetchState(failures=1, last_success_at=NOW)
    failing = feed_notice(SHOW, before, FetchState(failures=2, last_error=HOSTILE * 100))
    recovered = feed_notice(SHOW, FetchState(failing_notified=True), FetchState(failures=0))
    assert failing is not None and recovered is not None
    for notice in (failing, recovered):
        message = renderer.notice(notice)
        assert_escaped(dict(message))
        assert "&lt;!here&gt;" in message["text"]
    subs = [Subscription(TEAM, "C1", SHOW), Subscription(TEAM, "C2", SHOW, paused_reason="x")]
    (only,) = notice_deliveries(renderer, failing, subs)
    assert only.channel_id == "C1" and only.message == renderer.notice(failing)
