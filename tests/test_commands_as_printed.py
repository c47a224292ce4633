"""`/episodes` takes what the bot prints, reads quoted name lists,
scopes `status`, and says what the polls found of a show with no episodes.

Four shows on feeds served on loopback, polled for real (``run_once``, the Slack fake
receiving the digests), then signed slash commands to the real app over the same store,
SQLite and PostgreSQL. "Quiet Show" is never polled; "Empty Show"'s feed has no items.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from bot.delivery.deliverer import Deliverer
from bot.jobs.pipeline import run_once
from config.settings import Settings, ShowConfig
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.app import APP_NOW, TEAM, RunningApp, in_process, make_settings
from tests.fixtures.delivery import slack_outbox
from tests.slackfake import SlackFake

RUST = "C0RUST0001"  # follows Rust Weekly
EMPTY = "C0EMPTY001"  # follows Empty Show
NONE = "C0NONE0001"  # follows nothing
POLLED_AT = datetime(2026, 10, 7, 9, 0, tzinfo=UTC)
LLVM_LINK = "https://github.com/llvm/llvm-project/pull/100050"


def _feed(title: str, items: str = "") -> str:
    return (
        "<?xml version='1.0' encoding='UTF-8'?>\n"
        "<rss version='2.0' xmlns:itunes='http://www.itunes.com/dtds/podcast-1.0.dtd'>"
        f"<channel><title>{title}</title><link>https://shows.example.test/</link>"
        f"<description>A test feed.</description>{items}</channel></rss>"
    )


def _item(slug: str, title: str, day: int, description: str) -> str:
    return (
        f"<item><title>{title}</title><guid isPermaLink='false'>{slug}</guid>"
        f"<link>https://shows.example.test/{slug}</link>"
        f"<pubDate>{datetime(2026, 10, day, 13, tzinfo=UTC):%a, %d %b %Y %H:%M:%S} +0000</pubDate>"
        f"<description>{description}</description><itunes:duration>4:11</itunes:duration></item>"
    )


RUST_FEED = _feed(
    "Rust Weekly",
    _item(
        "rust-2026-10-06",
        "Rust Weekly: Codegen Meets LLVM",
        6,
        f"The backend bump rides on {LLVM_LINK} upstream. PR 4242 wires it into rustc.",
    )
    + _item("rust-2026-10-01", "Rust Weekly: Borrow Checker Notes", 1, "Polonius inches on."),
)
KERNEL_FEED = _feed(
    "Kernel Notes", _item("kernel-2026-10-05", "Kernel Notes: Scheduler Tweaks", 5, "EEVDF.")
)


@dataclass
class Polled:
    app: RunningApp
    settings: Settings

    def ask(self, text: str, channel: str) -> dict[str, Any]:
        response = self.app.sender.slash(text, channel=channel)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def text(self, text: str, channel: str) -> str:
        return json.dumps(self.ask(text, channel)["blocks"], ensure_ascii=False)


@pytest.fixture
async def polled(
    store: Store, slack_fake: SlackFake, feed_server: FeedServer, http: httpx.AsyncClient
) -> AsyncIterator[Polled]:
    feeds = {
        "Rust Weekly": (feed_server.route("/rust.xml", RUST_FEED), "rust-lang/rust"),
        "Kernel Notes": (feed_server.route("/kernel.xml", KERNEL_FEED), "torvalds/linux"),
        "Empty Show": (feed_server.route("/empty.xml", _feed("Empty Show")), "example/empty"),
        "Quiet Show": (feed_server.route("/quiet.xml", _feed("Quiet Show")), "example/quiet"),
    }
    settings = make_settings(
        slack_fake.api_url,
        slack_fake.token,
        timezone="America/Sao_Paulo",
        thread_replies=False,
        shows=[ShowConfig(name=n, feed=f, repo=r) for n, (f, r) in feeds.items()],
    )
    store.subscribe(TEAM, RUST, "Rust Weekly")
    store.subscribe(TEAM, EMPTY, "Empty Show")
    deliverer = Deliverer(store, slack_outbox(slack_fake), per_channel_interval=0.0)
    try:
        # Every show but Quiet Show is polled once, for real.
        shows = [s for s in settings.shows if s.name != "Quiet Show"]
        report = await run_once(
            settings, store, deliverer.outbox, http, POLLED_AT, deliverer=deliverer, shows=shows
        )
        assert [p.status for p in report.polls] == ["ok"] * 3, report.polls
    finally:
        await deliverer.aclose()
        await deliverer.outbox.close()
    with in_process(settings, store, slack_fake, [], reply_cache_ttl=0) as app:
        yield Polled(app, settings)


# -- item 3: every form of a PR the bot prints is taken back --------------------------------


def test_the_pr_label_a_digest_prints_is_accepted(polled: Polled, slack_fake: SlackFake) -> None:
    (digest,) = slack_fake.messages(RUST)
    posted = json.dumps(digest["blocks"], ensure_ascii=False)
    labels = re.findall(r"\|([\w./-]*#\d+)>", posted)
    links = re.findall(r"<(https://github\.com/[^|>]+)\|", posted)
    assert "llvm/llvm-project#100050" in labels and "#4242" in labels, labels
    for label in labels:
        number = label.rsplit("#", 1)[1]
        link = next(u for u in links if u.endswith(f"/{number}"))
        for text in (f"pr {label}", label, f"pr {link}", f"pr <{link}|{label}>"):
            body = polled.ask(text, RUST)
            listed = json.dumps(body["blocks"])
            assert "rust-2026-10-06" in listed, (text, body["text"])
            assert "is not a pull-request number" not in listed, text
    # The label names its repository: another repository's PR of that number is not it.
    other = polled.ask("pr rust-lang/rust#100050", RUST)
    assert "No episode names rust-lang/rust#100050." in other["text"]


def test_a_pr_label_in_nearby(polled: Polled) -> None:
    assert "Codegen Meets LLVM" in polled.text("nearby llvm/llvm-project#100050", RUST)


# -- item 4: quoted names in a comma list ---------------------------------------------------


@pytest.mark.parametrize(
    "names",
    [
        '"Empty Show", "Kernel Notes"',
        '"Empty Show","Kernel Notes"',
        "“Empty Show”, “Kernel Notes”",
        "'Empty Show' , 'Kernel Notes'",
    ],
)
def test_quoted_names_in_a_comma_list(polled: Polled, names: str) -> None:
    store = polled.app.store

    def followed() -> list[tuple[str, bool]]:
        subs = store.subscriptions(team_id=TEAM, channel_id=NONE)
        return [(s.show, s.held(APP_NOW)) for s in subs]

    polled.ask(f"subscribe {names}", NONE)
    assert followed() == [("Empty Show", False), ("Kernel Notes", False)]
    polled.ask(f"pause {names}", NONE)
    assert followed() == [("Empty Show", True), ("Kernel Notes", True)]
    polled.ask(f"resume {names}", NONE)
    assert followed() == [("Empty Show", False), ("Kernel Notes", False)]
    reply = polled.ask(f"unsubscribe {names}", NONE)
    assert "There is no show" not in reply["text"], reply["text"]
    assert followed() == []


def test_a_quoted_show_after_a_show_is_still_a_keyword(polled: Polled) -> None:
    polled.ask('subscribe Kernel Notes "Empty Show"', NONE)
    (sub,) = polled.app.store.subscriptions(team_id=TEAM, channel_id=NONE)
    assert (sub.show, sub.keywords) == ("Kernel Notes", ("Empty Show",))


# -- item 5: status is about the channel's shows --------------------------------------------


def _status_shows(body: dict[str, Any]) -> list[str]:
    sections = [b["text"]["text"] for b in body["blocks"] if b["type"] == "section"]
    return [m.group(1) for s in sections if (m := re.match(r"\*(.+?)\*\nLast poll", s))]


def test_status_lists_the_shows_the_channel_follows(polled: Polled) -> None:
    assert _status_shows(polled.ask("status", RUST)) == ["Rust Weekly"]
    assert _status_shows(polled.ask("status", EMPTY)) == ["Empty Show"]
    # A channel that follows none: every show.
    every = ["Rust Weekly", "Kernel Notes", "Empty Show", "Quiet Show"]
    assert _status_shows(polled.ask("status", NONE)) == every


# -- item 6: a show with no episodes says what its polls found ------------------------------


def test_recent_of_a_polled_empty_show_says_when_it_was_polled(polled: Polled) -> None:
    said = "No episodes yet: *Empty Show*'s feed had no episodes at its last poll, "
    when = "2026-10-07 06:00 America/Sao_Paulo."
    for text, channel in (("recent", EMPTY), ("recent Empty Show", NONE), ("latest", EMPTY)):
        body = polled.ask(text, channel)
        assert body["blocks"][0]["text"]["text"] == said + when, text
        assert "first poll may not have run" not in json.dumps(body), text


def test_recent_of_a_show_never_polled_says_so(polled: Polled) -> None:
    body = polled.ask("recent Quiet Show", NONE)
    assert body["blocks"][0]["text"]["text"] == (
        "No episodes yet: *Quiet Show* has not been polled yet. Try again in a few minutes."
    )


def test_a_channel_of_several_empty_shows_hears_of_each(polled: Polled) -> None:
    polled.ask("subscribe Empty Show, Quiet Show", NONE)
    text = polled.text("recent", NONE)
    assert "*Empty Show*'s feed had no episodes at its last poll, 2026-10-07 06:00" in text
    assert "*Quiet Show* has not been polled yet." in text
