"""An edited episode brings its whole delivery in line: the digest and its thread replies.

End to end through ``bot.jobs.pipeline.run_once``, a feed on loopback, the Slack fake and a real
store:
each reply part is updated in place, posted when missing, deleted when no longer needed, and
never doubled — not on the next poll, not after a failure or a crash midway.
"""

from __future__ import annotations

import asyncio
import io
import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from bot.delivery.deliverer import Deliverer
from bot.delivery.items import Delivery
from bot.delivery.outbox import EVENT_TYPE, PrintOutbox, metadata_for
from bot.jobs.pipeline import run_once
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.store import Store
from digests.store.ledger import Ledger
from tests.feedserver import FeedServer
from tests.fixtures.delivery import rss, rss_item, slack_outbox
from tests.fixtures.ledger import crash_all
from tests.slackfake import SlackFake

TEAM = "T1"
CHANNEL = "C1"
KEY = "PyTorch:pytorch-2026-10-03"
NOW = datetime(2026, 10, 6, 8, 0, tzinfo=UTC)
DEAD = "dead-host:1:abc"

# Show notes that add nothing and one PR, all in the digest: no thread reply at all.
BARE = rss_item(3, summary="PR 199603 lands a fix.", prs="PR 199603 lands a fix.")
# The default item: both PRs fit the digest, the transcript says more: one reply part.
PLAIN = rss_item(3)
RETOLD = rss_item(
    3, prs="PR 199603 lands a fix; PR 199703 follows up. Then the team compares compile times."
)
# Ten PRs: two past the digest's cut, so the reply lists them.
TEN = rss_item(3, prs=" ".join(f"PR {199900 + n} moves part {n} along." for n in range(10)))
# Eighty PRs with long sentences: the reply takes several messages.
LONG = rss_item(
    3,
    prs=" ".join(
        f"PR {199000 + n} moves part {n} along, " + "with a long account of what changed " * 6 + "."
        for n in range(80)
    ),
)


def settings_for(url: str) -> Settings:
    return Settings(
        shows=[ShowConfig(name="PyTorch", feed=url, repo="pytorch/pytorch")],
        schedule=ScheduleConfig(poll_minutes=15),
        team_id=TEAM,
        slack_bot_token=None,
        thread_replies=True,
    )


def thread(fake: SlackFake) -> tuple[str, list[tuple[str, str]]]:
    """(the digest's ts, [(part, reply text as JSON)] under it in order); exactly one digest."""
    messages = fake.messages(CHANNEL)
    (parent,) = [m for m in messages if not m.get("thread_ts")]
    replies: list[tuple[str, str]] = []
    for message in messages:
        if message.get("thread_ts") != parent["ts"]:
            continue
        meta: dict[str, Any] = message.get("metadata") or {}
        assert meta.get("event_type") == EVENT_TYPE and meta["event_payload"]["key"] == KEY
        replies.append((meta["event_payload"]["part"], json.dumps(message)))
    return parent["ts"], replies


def parts(fake: SlackFake) -> list[str]:
    return [part for part, _ in thread(fake)[1]]


async def poll(
    settings: Settings, store: Store, deliverer: Deliverer, http: httpx.AsyncClient
) -> Any:
    report = await run_once(settings, store, deliverer.outbox, http, NOW, deliverer=deliverer)
    assert report.errors == []
    return report


def expected_parts(count: int) -> list[str]:
    return [f"thread:{n}" for n in range(count)]


async def test_a_changed_transcript_updates_the_reply_in_place(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:
    url = feed_server.route("/feed.xml", rss(PLAIN))
    settings = settings_for(url)
    store.ensure_show("PyTorch", "", "pytorch/pytorch")
    store.subscribe(TEAM, CHANNEL, "PyTorch", source="config")
    await poll(settings, store, deliverer, http)
    parent, before = thread(slack_fake)
    assert [p for p, _ in before] == ["thread:0"] and "compile times" not in before[0][1]
    posts = len(slack_fake.calls_to("chat.postMessage"))

    feed_server.route("/feed.xml", rss(RETOLD))
    report = await poll(settings, store, deliverer, http)

    assert report.delivery.updated == [(TEAM, CHANNEL, "episode", KEY)]
    same_parent, after = thread(slack_fake)
    assert same_parent == parent and [p for p, _ in after] == ["thread:0"]
    assert "compile times" in after[0][1]
    assert len(slack_fake.calls_to("chat.postMessage")) == posts  # edited, not re-posted
    row = Ledger.for_store(store).all_rows()[0]
    assert (row.state, row.error) == ("posted", None)

    updates = len(slack_fake.calls_to("chat.update"))
    again = await poll(settings, store, deliverer, http)
    assert again.due == 0 and not again.delivery.updated
    assert len(slack_fake.calls_to("chat.update")) == updates
    assert len(slack_fake.calls_to("chat.postMessage")) == posts


async def test_with_thread_replies_switched_off_an_edit_leaves_earlier_replies(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:
    url = feed_server.route("/feed.xml", rss(PLAIN))
    store.ensure_show("PyTorch", "", "pytorch/pytorch")
    store.subscribe(TEAM, CHANNEL, "PyTorch", source="config")
    await poll(settings_for(url), store, deliverer, http)
    parent, before = thread(slack_fake)
    assert [p for p, _ in before] == ["thread:0"]

    feed_server.route("/feed.xml", rss(RETOLD))
    off = settings_for(url).model_copy(update={"thread_replies": False})
    report = await poll(off, store, deliverer, http)

    assert report.delivery.updated == [(TEAM, CHANNEL, "episode", KEY)]
    assert slack_fake.calls_to("chat.delete") == []
    assert thread(slack_fake) == (parent, before)  # the reply as it was, not deleted
    row = Ledger.for_store(store).all_rows()[0]
    assert (row.state, row.error) == ("posted", None)
    again = await poll(off, store, deliverer, http)
    assert again.due == 0 and not again.delivery.updated


@pytest.mark.parametrize(
    ("first", "edited", "before", "after"),
    [
        pytest.param(BARE, TEN, 0, 1, id="PRs past the cut: the first reply"),
        pytest.param(PLAIN, LONG, 1, 3, id="many more PRs: parts added"),
        pytest.param(LONG, PLAIN, 3, 1, id="fewer PRs: extra parts deleted"),
        pytest.param(TEN, BARE, 1, 0, id="nothing left to add: the reply deleted"),
    ],
)
async def test_an_edit_adds_or_removes_reply_parts_once(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
    first: str,
    edited: str,
    before: int,
    after: int,
) -> None:
    url = feed_server.route("/feed.xml", rss(first))
    settings = settings_for(url)
    store.ensure_show("PyTorch", "", "pytorch/pytorch")
    store.subscribe(TEAM, CHANNEL, "PyTorch", source="config")
    await poll(settings, store, deliverer, http)
    assert parts(slack_fake) == expected_parts(before)

    feed_server.route("/feed.xml", rss(edited))
    await poll(settings, store, deliverer, http)
    await poll(settings, store, deliverer, http)  # a second poll changes nothing

    assert parts(slack_fake) == expected_parts(after)
    top_level = [c for c in slack_fake.calls_to("chat.postMessage") if "thread_ts" not in c.params]
    assert len(top_level) == 1
    replies_posted = len(slack_fake.calls_to("chat.postMessage")) - 1
    assert replies_posted == before + max(0, after - before)
    assert len(slack_fake.calls_to("chat.delete")) == max(0, before - after)
    row = Ledger.for_store(store).all_rows()[0]
    last = thread(slack_fake)[1]
    assert row.state == "posted" and row.error is None
    if after:
        ts_of_last = [m["ts"] for m in slack_fake.messages(CHANNEL)][-1]
        assert row.thread_ts == ts_of_last and last
    else:
        assert row.thread_ts is None


async def test_a_reply_that_fails_is_added_by_the_next_poll_once(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:
    url = feed_server.route("/feed.xml", rss(PLAIN))
    settings = settings_for(url)
    store.ensure_show("PyTorch", "", "pytorch/pytorch")
    store.subscribe(TEAM, CHANNEL, "PyTorch", source="config")
    await poll(settings, store, deliverer, http)

    feed_server.route("/feed.xml", rss(LONG))
    # The first new part fails on every attempt.
    slack_fake.fail_next("chat.postMessage", status=500, times=deliverer.max_attempts)
    failed = await poll(settings, store, deliverer, http)
    assert failed.delivery.deferred == [(TEAM, CHANNEL, "episode", KEY)]
    assert parts(slack_fake) == ["thread:0"]
    row = Ledger.for_store(store).all_rows()[0]
    assert row.state == "posted" and row.error and "thread reply 1" in row.error

    retried = await poll(settings, store, deliverer, http)
    assert retried.delivery.updated == [(TEAM, CHANNEL, "episode", KEY)]
    assert parts(slack_fake) == expected_parts(3)
    await poll(settings, store, deliverer, http)
    assert parts(slack_fake) == expected_parts(3)
    assert Ledger.for_store(store).all_rows()[0].error is None


@pytest.mark.parametrize("landed", [0, 1, 2], ids=["none-landed", "one-landed", "all-landed"])
async def test_an_edit_cut_short_by_a_crash_is_finished_once(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
    landed: int,
) -> None:
    """A deliverer died mid-edit (row ``posting``, its owner gone, the old hash) after
    ``landed`` of the two new parts reached Slack: the next poll finishes the edit."""
    url = feed_server.route("/feed.xml", rss(PLAIN))
    settings = settings_for(url)
    store.ensure_show("PyTorch", "", "pytorch/pytorch")
    store.subscribe(TEAM, CHANNEL, "PyTorch", source="config")
    await poll(settings, store, deliverer, http)
    parent, _ = thread(slack_fake)

    feed_server.route("/feed.xml", rss(LONG))
    # What the dead deliverer got out: the new parts it posted before it died.
    outbox = slack_outbox(slack_fake)
    try:
        for n in range(1, 1 + landed):
            await outbox.post(
                CHANNEL,
                {"text": f"STALE {n}"},
                metadata=metadata_for(KEY, "episode", f"thread:{n}"),
                thread_ts=parent,
            )
    finally:
        await outbox.close()
    crash_all(store, DEAD)

    report = await poll(settings, store, deliverer, http)

    assert report.delivery.recovered == [(TEAM, CHANNEL, "episode", KEY)]
    assert parts(slack_fake) == expected_parts(3)
    replies = thread(slack_fake)[1]
    assert all("STALE" not in text for _, text in replies)  # every part shows the edit
    again = await poll(settings, store, deliverer, http)
    assert again.due == 0 and parts(slack_fake) == expected_parts(3)
    row = Ledger.for_store(store).all_rows()[0]
    assert (row.state, row.ts) == ("posted", parent)


async def test_without_slack_an_edit_prints_what_it_would_change(store: Store) -> None:
    def version(content: str, replies: int) -> Delivery:
        thread = tuple({"text": f"{content} reply {n}"} for n in range(replies))
        message = {"text": f"digest {content}"}
        return Delivery(TEAM, CHANNEL, "episode", KEY, message, thread, content_hash=content)

    out = io.StringIO()
    d = Deliverer(store, PrintOutbox(out), per_channel_interval=0.0)
    try:
        await d.deliver([version("v1", 2)])
        edited = await d.deliver([version("v2", 1)])
        again = await d.deliver([version("v2", 1)])
    finally:
        d.close()
    assert edited.updated == [(TEAM, CHANNEL, "episode", KEY)] and again.unchanged
    text = out.getvalue()
    assert text.count("would post to") == 3 and text.count("would update") == 2
    assert text.count("would delete") == 1 and "v2 reply 0" in text


async def test_two_deliverers_editing_at_once_add_each_part_once(
    store: Store, slack_fake: SlackFake
) -> None:
    channels = [f"C{n:02d}" for n in range(12)]

    def version(channel: str, content: str, replies: int) -> Delivery:
        thread = tuple({"text": f"{content} reply {n}"} for n in range(replies))
        message = {"text": f"digest {content}"}
        return Delivery(TEAM, channel, "episode", KEY, message, thread, content_hash=content)

    made = [
        Deliverer(store, slack_outbox(slack_fake), per_channel_interval=0.0, backoff=0.01)
        for _ in range(2)
    ]
    try:
        await made[0].deliver([version(c, "v1", 1) for c in channels])
        slack_fake.latency = 0.01
        a, b = await asyncio.gather(
            made[0].deliver([version(c, "v2", 3) for c in channels]),
            made[1].deliver([version(c, "v2", 3) for c in reversed(channels)]),
        )
    finally:
        for d in made:
            await d.aclose()
            await d.outbox.close()
    assert len(a.updated) + len(b.updated) == len(channels)
    for channel in channels:
        replies = [m for m in slack_fake.messages(channel) if m.get("thread_ts")]
        assert [m["text"] for m in replies] == [f"v2 reply {n}" for n in range(3)], channel
