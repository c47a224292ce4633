"""One workspace, three shows, five channels, end to end.

PyTorch → pytorch/pytorch, JAX → jax-ml/jax, Triton → triton-lang/triton, in Asia/Tokyo.
Feeds of 30–50 episodes are served by ``tests.feedserver`` (Triton's has an undated item in
the middle), read by ``bot.jobs.pipeline.run_once`` and delivered to the Slack fake; channels
subscribe and ask through the signed slash-command path of the real app. Then episodes
arrive between polls (two in one poll, one backdated below the newest), and each channel
must get exactly the digests its shows and keywords call for, and answers about its shows.
SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from xml.sax.saxutils import escape

import httpx
import pytest

from bot.delivery.deliverer import Deliverer
from bot.delivery.slack import make_web_client
from bot.jobs.pipeline import run_once
from bot.listeners.app import build_app
from bot.server.asgi import build_asgi
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.render.renderer import Renderer
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.app import (
    AppLoop,
    InProcessClient,
    SlackSender,
    assert_valid_message,
    make_settings,
)
from tests.fixtures.delivery import keys_in, slack_outbox
from tests.slackfake import SlackFake

REPOS = {"PyTorch": "pytorch/pytorch", "JAX": "jax-ml/jax", "Triton": "triton-lang/triton"}
# The app's clock: Wed 14 Oct 2026, 12:00 in Tokyo (ISO week 42 there).
APP_NOW = datetime(2026, 10, 14, 3, 0, tzinfo=UTC)
C_TORCH, C_SHARDING, C_FSDP, C_TRITON, C_INTEROP = (
    "C0TORCH001",
    "C0SHARD001",
    "C0FSDP0001",
    "C0TRITON01",
    "C0INTEROP1",
)
C_NONE = "C0NOSUBS01"  # follows nothing: answers about every show


@dataclass(frozen=True)
class Item:
    show: str
    slug: str
    when: datetime | None  # None: no <pubDate>
    headline: str
    summary: str = ""
    transcript: str = ""


def daily(show: str, first: datetime, count: int) -> list[Item]:
    return [
        Item(
            show,
            f"{show.lower()}-{(first + timedelta(days=n)):%Y-%m-%d}",
            first + timedelta(days=n),
            f"{show} Daily {first + timedelta(days=n):%b %d}",
            f"Routine {show} work: tests and docs.",
        )
        for n in range(count)
    ]


def feed(show: str, items: list[Item]) -> bytes:
    body = []
    for item in sorted(items, key=lambda i: i.when or datetime.min.replace(tzinfo=UTC))[::-1]:
        parts = [
            f"<title>{escape(show)}: {escape(item.headline)}</title>",
            f"<guid isPermaLink='false'>{item.slug}</guid>",
            f"<link>https://episodes.example.test/{item.slug}</link>",
            f"<description>{escape(item.summary or item.headline)}</description>",
        ]
        if item.when is not None:
            parts.append(f"<pubDate>{item.when:%a, %d %b %Y %H:%M:%S} +0000</pubDate>")
        if item.transcript:
            parts.append(f"<content:encoded>{escape(item.transcript)}</content:encoded>")
        body.append("<item>" + "".join(parts) + "</item>")
    return (
        "<?xml version='1.0' encoding='UTF-8'?>"
        "<rss version='2.0' xmlns:content='http://purl.org/rss/1.0/modules/content/'>"
        f"<channel><title>{show}</title><link>https://episodes.example.test/{show}</link>"
        + "".join(body)
        + "</channel></rss>"
    ).encode()


def at(month: int, day: int, hour: int = 13) -> datetime:
    return datetime(2026, month, day, hour, 0, tzinfo=UTC)


TORCH = [
    *daily("PyTorch", at(9, 1), 39),
    Item("PyTorch", "pytorch-fsdp2", at(10, 10), "FSDP2 Lands", "FSDP2 becomes the default."),
]
JAX = [
    *daily("JAX", at(9, 11), 29),
    Item("JAX", "jax-sharding", at(10, 10), "Sharding in Practice", "New sharding APIs."),
]
# 50 items, one in the middle without a date (where 21 Sep would be).
TRITON = [
    i if i.slug != "triton-2026-09-21" else Item("Triton", "triton-undated", None, "No Date")
    for i in daily("Triton", at(8, 22), 49)
] + [Item("Triton", "triton-autotuner", at(10, 10), "Autotuner Cache", "Configs cached.")]

# Arriving between the polls: two JAX episodes in one poll, a PyTorch one on a Sunday
# evening UTC (Monday morning in Tokyo), a Triton one dated below Triton's newest.
LATER = {
    "PyTorch": [
        Item("PyTorch", "pytorch-inductor", at(10, 11, 20), "Inductor Autotuning", "Kernels."),
    ],
    "JAX": [
        Item("JAX", "jax-shardy", at(10, 12, 13), "Shardy Migration", "The sharding rewrite."),
        Item(
            "JAX",
            "jax-interop",
            at(10, 12, 14),
            "Interop Notes",
            "A PyTorch interop fix.",
            "The change is https://github.com/pytorch/pytorch/pull/5012 on their side.",
        ),
    ],
    "Triton": [
        Item("Triton", "triton-fsdp", at(10, 8), "FSDP Kernels", "Kernels for fsdp shards."),
    ],
}


@dataclass
class World:
    settings: Settings
    store: Store
    fake: SlackFake
    sender: SlackSender
    server: FeedServer

    def ask(self, channel: str, text: str) -> dict[str, Any]:
        response = self.sender.slash(text, channel=channel)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        assert_valid_message(body)
        return body

    def serve(self, extra: dict[str, list[Item]] | None = None) -> None:
        extra = extra or {}
        for show, items in (("PyTorch", TORCH), ("JAX", JAX), ("Triton", TRITON)):
            self.server.route(f"/{show.lower()}.xml", feed(show, items + extra.get(show, [])))

    def posted(self, channel: str) -> list[str]:
        return keys_in(self.fake.messages(channel))


@pytest.fixture
def world(
    store: Store, slack_fake: SlackFake, feed_server: FeedServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[World]:
    for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "SLACK_API_URL"):
        monkeypatch.delenv(name, raising=False)
    urls = {show: feed_server.route(f"/{show.lower()}.xml", b"") for show in REPOS}
    settings = make_settings(
        slack_fake.api_url,
        slack_fake.token,
        timezone="Asia/Tokyo",
        shows=[ShowConfig(name=s, feed=urls[s], repo=r) for s, r in REPOS.items()],
        schedule=ScheduleConfig(poll_minutes=15),
        thread_replies=False,
    )
    for show, repo in REPOS.items():
        store.ensure_show(show, urls[show], repo)
    app = build_app(
        settings,
        store,
        Renderer.of(settings),
        client=make_web_client(settings),
        now=lambda: APP_NOW,
        reply_cache_ttl=0,
    )
    app_loop = AppLoop()
    http = InProcessClient(build_asgi(app, store), app_loop)
    sender = SlackSender("http://slack-app.test", slack_fake, http=http)
    try:
        yield World(settings, store, slack_fake, sender, feed_server)
    finally:
        sender.close()
        app_loop.close()


def text(body: dict[str, Any]) -> str:
    return json.dumps(body["blocks"], ensure_ascii=False)


def slugs(body: dict[str, Any]) -> list[str]:
    """The episodes an answer links to, in order."""
    found = []
    blob = text(body)
    for item in [*TORCH, *JAX, *TRITON, *(i for v in LATER.values() for i in v)]:
        where = blob.find(f"https://episodes.example.test/{item.slug}|")
        if where >= 0:
            found.append((where, item.slug))
    return [slug for _, slug in sorted(found)]


def subscribe(world: World) -> None:
    replies = {
        C_TORCH: world.ask(C_TORCH, "subscribe PyTorch"),
        C_SHARDING: world.ask(C_SHARDING, "subscribe jax sharding"),
        C_FSDP: world.ask(C_FSDP, "subscribe PyTorch Triton fsdp"),
        C_TRITON: world.ask(C_TRITON, "subscribe “Triton” recap off"),
        # "pytorch" names a show: quoted after the show, it is the keyword.
        C_INTEROP: world.ask(C_INTEROP, 'subscribe JAX "pytorch"'),
    }
    lines = {c: r["blocks"][1]["text"]["text"] for c, r in replies.items()}
    assert lines == {
        C_TORCH: "Now: *PyTorch* · every episode · weekly recap on",
        C_SHARDING: "Now: *JAX* · keywords “sharding” · weekly recap on",
        C_FSDP: "Now: *PyTorch*, *Triton* · keywords “fsdp” · weekly recap on",
        C_TRITON: "Now: *Triton* · every episode · weekly recap off",
        C_INTEROP: "Now: *JAX* · keywords “pytorch” · weekly recap on",
    }
    # Nothing is stored yet, so no keyword channel has a backfill to expect.
    assert "Nothing yet matches" in text(replies[C_FSDP])


async def test_three_shows_five_channels(world: World, http: httpx.AsyncClient) -> None:
    subscribe(world)
    deliverer = Deliverer(
        world.store, slack_outbox(world.fake), per_channel_interval=0.0, backoff=0.01
    )
    start = datetime.now(UTC)
    try:
        world.serve()
        first = start + timedelta(minutes=1)
        await run_once(
            world.settings, world.store, deliverer.outbox, http, first, deliverer=deliverer
        )
        # First poll: each channel's backfill, the newest if it matches; never the undated
        # Triton item, never the archive.
        assert {c: world.posted(c) for c in (C_TORCH, C_SHARDING, C_FSDP, C_TRITON)} == {
            C_TORCH: ["PyTorch:pytorch-fsdp2"],
            C_SHARDING: ["JAX:jax-sharding"],
            C_FSDP: ["PyTorch:pytorch-fsdp2"],
            C_TRITON: ["Triton:triton-autotuner"],
        }
        assert world.posted(C_INTEROP) == []

        world.serve(LATER)
        second = start + timedelta(minutes=20)
        await run_once(
            world.settings, world.store, deliverer.outbox, http, second, deliverer=deliverer
        )
    finally:
        await deliverer.aclose()
        await deliverer.outbox.close()

    assert {c: world.posted(c) for c in (C_TORCH, C_SHARDING, C_FSDP, C_TRITON, C_INTEROP)} == {
        C_TORCH: ["PyTorch:pytorch-fsdp2", "PyTorch:pytorch-inductor"],
        C_SHARDING: ["JAX:jax-sharding", "JAX:jax-shardy"],
        # Backdated below Triton's newest, but first seen after the subscription.
        C_FSDP: ["PyTorch:pytorch-fsdp2", "Triton:triton-fsdp"],
        C_TRITON: ["Triton:triton-autotuner", "Triton:triton-fsdp"],
        C_INTEROP: ["JAX:jax-interop"],
    }
    answers(world)


def answers(world: World) -> None:
    # Scoped to the channel's show: one show, so lines do not name it.
    torch = world.ask(C_TORCH, "recent 2")
    assert slugs(torch) == ["pytorch-inductor", "pytorch-fsdp2"]
    assert "*PyTorch* · " not in text(torch)
    # A channel that follows nothing: every show, each line naming its own.
    everything = world.ask(C_NONE, "recent 3")
    assert slugs(everything) == ["jax-interop", "jax-shardy", "pytorch-inductor"]
    assert "*JAX* · " in text(everything) and "*PyTorch* · " in text(everything)
    # The undated Triton item never tops anything.
    assert slugs(world.ask(C_TRITON, "latest")) == ["triton-autotuner"]
    assert slugs(world.ask(C_NONE, "recent Triton 1")) == ["triton-autotuner"]
    # Weeks are Tokyo's: Sunday 20:00 UTC is Monday morning there, in week 42.
    assert "pytorch-inductor" in slugs(world.ask(C_TORCH, "week"))
    w41 = slugs(world.ask(C_TORCH, "week 2026-W41"))
    assert "pytorch-fsdp2" in w41 and "pytorch-inductor" not in w41
    # `week` keeps what the channel's recap keeps, and says so.
    sharding = world.ask(C_SHARDING, "week 2026-W42")
    assert slugs(sharding) == ["jax-shardy"]
    assert "As this channel's recap: *JAX* mentions sharding." in text(sharding)
    # Another repository's PR, labelled with it; a link of a third repository, nothing.
    interop = world.ask(C_INTEROP, "pr https://github.com/pytorch/pytorch/pull/5012")
    assert slugs(interop) == ["jax-interop"]
    assert "Episodes naming pytorch/pytorch#5012" in text(interop)
    assert "pytorch/pytorch#5012" in text(world.ask(C_INTEROP, "week 2026-W42"))
    other = world.ask(C_INTEROP, "pr https://github.com/jax-ml/jax/pull/5012")
    assert "No episode names jax-ml/jax#5012." in text(other)
    # A show named in the command; a near miss gets a hint.
    assert slugs(world.ask(C_TORCH, "nearby JAX Oct 1"))[1] == "jax-2026-10-01"
    assert "did you mean Triton?" in text(world.ask(C_TORCH, "latest Trtion"))
    listed = text(world.ask(C_FSDP, "list"))
    assert "*PyTorch* — only episodes mentioning “fsdp”" in listed
    assert "*Triton* — only episodes mentioning “fsdp”" in listed
