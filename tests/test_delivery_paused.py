"""A channel Slack refuses is paused, and whoever subscribed it is told by DM, once.

Polls for real: feeds on loopback, the Slack fake over HTTP, SQLite and PostgreSQL.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from bot.delivery.deliverer import Deliverer
from bot.delivery.pausing import paused_notice
from bot.jobs.pipeline import run_once
from bot.listeners.commands.model import Subscribe
from bot.listeners.commands.parse import parse_command
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.store import Store
from digests.types import Subscription
from tests.feedserver import FeedServer
from tests.fixtures.delivery import keys_in, rss, rss_item
from tests.fixtures.store import resume_channel
from tests.slackfake import SlackFake

TEAM = "T1"
NOW = datetime(2026, 10, 6, 8, 0, tzinfo=UTC)


def settings_for(url: str) -> Settings:
    return Settings(
        shows=[
            ShowConfig(name="PyTorch", feed=url, repo="pytorch/pytorch"),
            ShowConfig(name="Rust", feed=url.replace("feed", "rust"), repo="rust-lang/rust"),
        ],
        schedule=ScheduleConfig(poll_minutes=15),
        team_id=TEAM,
        slack_bot_token=None,
        thread_replies=False,
    )


def dm_texts(fake: SlackFake, user: str) -> list[str]:
    return [str(m["text"]) for m in fake.messages(user)]


async def test_the_subscriber_hears_of_a_pause_once(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = feed_server.route("/feed.xml", rss(rss_item(3), rss_item(2)), etag='"v1"')
    feed_server.route("/rust.xml", rss(), etag='"r1"')
    settings = settings_for(url)
    for show in ("PyTorch", "Rust"):
        store.ensure_show(show, "", "")
    store.subscribe(TEAM, "C1", "PyTorch", keywords=["briefing"], created_by="U0ADA")
    store.subscribe(TEAM, "C1", "Rust", created_by="U0ADA")
    store.subscribe(TEAM, "C2", "PyTorch", created_by="U0BOB")
    store.subscribe(TEAM, "C3", "PyTorch", source="config")
    store.subscribe(TEAM, "C4", "PyTorch", created_by="U0BOB")
    slack_fake.channel_error("C1", "is_archived")
    slack_fake.channel_error("C3", "channel_not_found")
    slack_fake.channel_error("C4", "not_in_channel")
    slack_fake.fail_next("conversations.join", error="method_not_supported_for_channel_type")

    with caplog.at_level(logging.WARNING, logger="bot.delivery"):
        first = await run_once(settings, store, deliverer.outbox, http, NOW, deliverer=deliverer)
    assert set(first.delivery.paused) == {(TEAM, "C1"), (TEAM, "C3"), (TEAM, "C4")}
    assert keys_in(slack_fake.messages("C2")) == ["PyTorch:pytorch-2026-10-03"]

    (ada,) = dm_texts(slack_fake, "U0ADA")
    assert ada == (
        "I stopped posting *PyTorch*, *Rust* digests to <#C1>: the channel is archived. "
        "To resume, fix that and run `/episodes subscribe PyTorch briefing` and "
        "`/episodes subscribe Rust` in the channel."
    )
    (bob,) = dm_texts(slack_fake, "U0BOB")
    assert "<#C4>" in bob and "I am not a member and cannot join it" in bob
    # The config file's subscription has nobody to tell: the log says it.
    assert any("C3" in r.getMessage() and "config file" in r.getMessage() for r in caplog.records)
    dms = [c for c in slack_fake.calls_to("chat.postMessage") if c.params["channel"][0] == "U"]
    assert len(dms) == 2

    # Another episode, more polls, the channels still refusing: nobody is told again.
    feed_server.route("/feed.xml", rss(rss_item(4), rss_item(3), rss_item(2)), etag='"v2"')
    for hours in (1, 2):
        at = NOW + timedelta(hours=hours)
        await run_once(settings, store, deliverer.outbox, http, at, deliverer=deliverer)
    assert len(dm_texts(slack_fake, "U0ADA")) == 1 and len(dm_texts(slack_fake, "U0BOB")) == 1
    assert keys_in(slack_fake.messages("C2"))[-1] == "PyTorch:pytorch-2026-10-04"

    # Resumed by a new subscribe and refused again: that is a new pause, told again.
    slack_fake.channel_error("C1", None)
    store.subscribe(TEAM, "C1", "Rust", created_by="U0ADA")
    resume_channel(store, TEAM, "C1")
    slack_fake.channel_error("C1", "channel_not_found")
    feed_server.route("/feed.xml", rss(rss_item(5), rss_item(4)), etag='"v3"')
    at = NOW + timedelta(hours=3)
    await run_once(settings, store, deliverer.outbox, http, at, deliverer=deliverer)
    texts = dm_texts(slack_fake, "U0ADA")
    assert len(texts) == 2 and "Slack cannot find the channel" in texts[1]


SHOWS = ["PyTorch", "Deep Learning", "Deep Learning Daily", "R&D <Weekly>"]


@pytest.mark.parametrize(
    ("show", "keywords"),
    [
        ("PyTorch", ()),
        ("PyTorch", ("inductor",)),
        # Unquoted, "Deep Learning daily" would be read as the longer show.
        ("Deep Learning", ("daily", "compiler")),
        ("Deep Learning Daily", ("compiler", "mps")),
        ("R&D <Weekly>", ("a&b", "<x>")),
        ("PyTorch", ("graph breaks", "it's")),
    ],
)
def test_the_dm_gives_the_command_that_restores_each_subscription(
    show: str, keywords: tuple[str, ...]
) -> None:
    subs = [
        Subscription(TEAM, "C1", show, keywords=keywords, created_by="U0ADA"),
        Subscription(TEAM, "C1", "PyTorch", keywords=("fsdp",), created_by="U0ADA"),
    ]
    text = paused_notice("C1", subs, "is_archived")["text"]
    commands = text.split("`")[1::2]
    assert len(commands) == 2 and all(c.startswith("/episodes ") for c in commands)
    # The text inside the backticks is what Slack sends when it is copied and run.
    parsed = [parse_command(c.removeprefix("/episodes "), SHOWS) for c in commands]
    assert parsed == [Subscribe(show, keywords), Subscribe("PyTorch", ("fsdp",))]


def test_the_dm_escapes_every_text_that_came_from_a_feed_or_slack() -> None:
    """For pause DMs: show names, keywords, Slack's error and the channel id
    reach the DM as words, never as a mention, a broadcast or a forged link."""
    hostile = "<!channel> <https://evil.example|Click here> & <@U0BOSS>"
    subs = [
        Subscription(TEAM, "C1", f"Show {hostile}", keywords=(hostile,), created_by="U0ADA"),
    ]
    for error in ("is_archived", hostile):
        message = paused_notice(f"C1>{hostile}", subs, error)
        (block,) = message["blocks"]
        for text in (message["text"], block["text"]["text"]):
            assert "<!channel>" not in text and "<https://evil" not in text
            assert "<@U0BOSS>" not in text and "&lt;!channel&gt;" in text
            assert text.count("<") == 1 and "<#C1&gt;" in text  # only our channel mention
        # verbatim: Slack does not turn a bare name or URL in the text into a link either.
        assert block["text"]["verbatim"] is True


def test_the_dm_fits_slack_however_many_shows_were_paused() -> None:
    subs = [
        Subscription(TEAM, "C1", f"Show {n} " + "x" * 80, keywords=("kw",), created_by="U0ADA")
        for n in range(60)
    ]
    message = paused_notice("C1", subs, "is_archived")
    assert len(message["text"]) <= 3000
    assert all(len(b["text"]["text"]) <= 3000 for b in message["blocks"])
