"""The `/episodes` answer cache: pure parts as tables, then its effect through HTTP."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from bot.listeners.app import build_app
from bot.listeners.commands.base import Deps, Invocation
from bot.listeners.commands.cache import cache_key
from bot.listeners.commands.ttl import SingleFlight, TtlCache
from bot.server.asgi import build_asgi
from config.settings import Settings
from digests.models import Episode
from digests.render.renderer import Renderer
from digests.store import Store
from tests.fixtures.app import (
    APP_NOW,
    CHANNEL,
    TEAM,
    AppServer,
    SlackSender,
    in_process,
    make_settings,
)
from tests.slackfake import SlackFake

HERE = Invocation("T1", "C1", "U1")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_entries_expire_after_ttl() -> None:
    clock = Clock()
    cache: TtlCache[str] = TtlCache(ttl=15, clock=clock)
    cache.put("k", "v")
    clock.now += 14.9
    assert cache.get("k") == "v"
    clock.now += 0.1
    assert cache.get("k") is None
    assert len(cache) == 0


def test_least_recently_used_goes_first() -> None:
    cache: TtlCache[int] = TtlCache(ttl=60, size=2, clock=Clock())
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # now "b" is the least recently used
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)


def test_ttl_zero_stores_nothing() -> None:
    cache: TtlCache[int] = TtlCache(ttl=0, clock=Clock())
    cache.put("a", 1)
    assert cache.get("a") is None


async def test_single_flight_shares_one_computation() -> None:
    flights: SingleFlight[str] = SingleFlight()
    calls: list[str] = []
    gate = asyncio.Event()

    async def compute(key: str) -> str:
        calls.append(key)
        await gate.wait()
        return f"answer {key}"

    waiters = [asyncio.ensure_future(flights.run("a", lambda: compute("a"))) for _ in range(50)]
    other = asyncio.ensure_future(flights.run("b", lambda: compute("b")))
    await asyncio.sleep(0)
    waiters[0].cancel()  # one caller giving up leaves the others their answer
    gate.set()
    results = await asyncio.gather(*waiters[1:], other)
    assert calls == ["a", "b"]
    assert results == ["answer a"] * 49 + ["answer b"]
    # Done flights are forgotten: the next call computes again.
    assert await flights.run("a", lambda: compute("a")) == "answer a"
    assert calls == ["a", "b", "a"]


def _deps(settings: Settings) -> Deps:
    # cache_key never touches the store or the renderer.
    return Deps(settings=settings, store=None, renderer=None, now=lambda: APP_NOW)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("", "recent 5"),
        ("recent 5", "recent 5"),
        ("  RECENT   5 ", "recent 5"),
        ("latest", "latest"),
        ("pr #12", "pr 12"),
        ("nearby 2026-3-5", "nearby 2026-03-05"),
        ("search a  b", "search a b"),
        ("week", "week@2026-10-07\x1fT1\x1fC1"),  # today, and this channel's shows
        ("week 2026-10-01", "week 2026-W40\x1fT1\x1fC1"),
        ("week w40", "week 2026-W40\x1fT1\x1fC1"),
        ("nearby Oct 5", "nearby 2026-10-05"),  # relative to today, keyed as the day itself
        ("list", None),  # this channel's own state
        ("status", None),
        ("subscribe", None),
        ("help", None),
        ("frobnicate", None),
        ("pr abc", None),
    ],
)
def test_cache_keys(text: str, key: str | None) -> None:
    assert cache_key(text, _deps(make_settings("http://127.0.0.1:9/api/")), HERE) == key


def _newer(episode: Episode) -> Episode:
    return episode.model_copy(
        update={
            "guid": "pytorch-2026-10-06",
            "headline": "A Brand New Episode",
            "title": "PyTorch: A Brand New Episode",
            "url": "https://episodes.example.test/pytorch/2026-10-06",
            "published_at": datetime(2026, 10, 6, 13, 0, tzinfo=UTC),
        }
    )


@pytest.mark.parametrize(("ttl", "fresh"), [(60.0, False), (0.0, True)])
def test_answers_are_reused_within_ttl_and_subscribe_clears_them(
    app_settings: Settings,
    seeded_store: tuple[Store, list[Episode]],
    slack_fake: SlackFake,
    ttl: float,
    fresh: bool,
) -> None:
    store, episodes = seeded_store
    app = build_app(app_settings, store, Renderer(), reply_cache_ttl=ttl)
    server = AppServer(app_settings, build_asgi(app, store)).start()
    sender = SlackSender(server.url, slack_fake)
    try:
        assert "All-Gather Showdown" in sender.slash("recent 1").text
        store.upsert_episodes([_newer(episodes[0])], APP_NOW - timedelta(hours=1))
        assert ("A Brand New Episode" in sender.slash("recent 1").text) is fresh
        # A change made in this process clears the cache at once.
        sender.slash("subscribe")
        assert "A Brand New Episode" in sender.slash("recent 1").text
    finally:
        sender.close()
        server.stop()


def test_a_subscription_changed_by_another_process_is_seen_at_once(
    app_settings: Settings, seeded_store: tuple[Store, list[Episode]], slack_fake: SlackFake
) -> None:
    # `week` answers as the channel's recap would: with its filter.
    store, episodes = seeded_store
    with in_process(app_settings, store, slack_fake, episodes, reply_cache_ttl=60) as app:
        before = app.sender.slash("week 2026-W40").json()
        assert app.sender.slash("week 2026-W40").json() == before
        # Written as another process writes it: straight to the database, no command here.
        store.subscribe(TEAM, CHANNEL, "PyTorch", keywords=["watchdog"])
        after = app.sender.slash("week 2026-W40").json()
        note = "As this channel's recap: *PyTorch* mentions watchdog."
        assert note in str(after["blocks"]) and "this channel's recap" not in str(before["blocks"])
        assert app.sender.slash("week 2026-W40").json() == after
