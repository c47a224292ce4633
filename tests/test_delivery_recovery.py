"""Crash recovery of threads and the orphan sweep, against the Slack fake and a real store.

A "crash" here is a ledger row left ``posting`` by an owner that no longer exists, with
whatever parts of the delivery reached Slack before it died actually in the fake.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.delivery.deliverer import Deliverer
from bot.delivery.items import Delivery
from bot.delivery.outbox import EVENT_TYPE, metadata_for
from bot.jobs.pipeline import poll_show
from bot.jobs.sweeper import Sweeper
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.decide.deliveries import episode_key
from digests.store import Store
from digests.store.ledger import Ledger
from tests.feedserver import FeedServer
from tests.fixtures.delivery import digest, rss, rss_item, slack_outbox
from tests.fixtures.ledger import seed_row
from tests.slackfake import SlackFake

TEAM = "T1"
KEY = "PyTorch:g1"
DEAD = "dead-host:1:abc"
NOW = datetime(2026, 10, 6, 8, 0, tzinfo=UTC)
REPLIES = ({"text": "PRs of g1"}, {"text": "Transcript of g1"})


class LiveOwner:
    """Another process's owner name (``host:pid:tag``), alive exactly as long as that
    process: a sleeper on this host, killed by :meth:`close`."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        self.name = f"{socket.gethostname()}:{self.proc.pid}:{uuid.uuid4().hex[:8]}"

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)


async def gone(ledger: Ledger, owner: str) -> None:
    """Wait until ``owner`` is seen dead (its process reaped)."""
    deadline = asyncio.get_running_loop().time() + 10
    while ledger.owner_alive(owner):
        assert asyncio.get_running_loop().time() < deadline, f"{owner} still alive"
        await asyncio.sleep(0.01)


def item(channel: str) -> Delivery:
    return Delivery(TEAM, channel, "episode", KEY, digest(KEY), REPLIES, content_hash="v1")


def left_posting(
    store: Store,
    channel: str,
    *,
    key: str = KEY,
    owner: str | None = DEAD,
    state: str = "posting",
    ts: str | None = None,
    claimed_at: datetime | None = None,
) -> None:
    seed_row(
        store,
        channel,
        key=key,
        team=TEAM,
        owner=owner,
        state=state,
        ts=ts,
        claimed_at=claimed_at,
        created_at=NOW,
    )


async def landed(fake: SlackFake, channel: str, replies: int, key: str = KEY) -> str:
    """What a dead deliverer got out before it died: the digest and ``replies`` replies."""
    outbox = slack_outbox(fake)
    try:
        parent = await outbox.post(
            channel, digest(key), metadata=metadata_for(key, "episode", "digest")
        )
        for n in range(replies):
            await outbox.post(
                channel,
                REPLIES[n],
                metadata=metadata_for(key, "episode", f"thread:{n}"),
                thread_ts=parent,
            )
    finally:
        await outbox.close()
    return parent


def parts(fake: SlackFake, channel: str, key: str = KEY) -> tuple[list[str], list[str]]:
    """(top-level parts, reply parts) carrying ``key`` in ``channel``, in posting order."""
    top: list[str] = []
    replies: list[str] = []
    for message in fake.messages(channel):
        meta: dict[str, Any] = message.get("metadata") or {}
        if meta.get("event_type") != EVENT_TYPE or meta["event_payload"]["key"] != key:
            continue
        (replies if message.get("thread_ts") else top).append(meta["event_payload"]["part"])
    return top, replies


def ledger_row(store: Store, channel: str) -> Any:
    return next(r for r in Ledger.for_store(store).all_rows() if r.channel_id == channel)


@pytest.mark.parametrize(
    ("replies_landed", "ts_recorded"),
    [(2, False), (1, False), (0, False), (0, True), (1, True)],
    ids=["all-landed", "one-reply-landed", "digest-only", "digest-only-ts-known", "ts-known"],
)
async def test_a_crash_around_the_thread_leaves_one_parent_and_one_of_each_reply(
    store: Store,
    slack_fake: SlackFake,
    deliverer: Deliverer,
    replies_landed: int,
    ts_recorded: bool,
) -> None:
    parent = await landed(slack_fake, "C1", replies_landed)
    left_posting(store, "C1", ts=parent if ts_recorded else None)
    before = len(slack_fake.calls_to("chat.postMessage"))

    report = await deliverer.deliver([item("C1")])

    assert report.recovered == [(TEAM, "C1", "episode", KEY)] and not report.posted
    assert parts(slack_fake, "C1") == (["digest"], ["thread:0", "thread:1"])
    posts = slack_fake.calls_to("chat.postMessage")[before:]
    assert len(posts) == 2 - replies_landed
    assert all(p.params.get("thread_ts") == parent for p in posts)
    # With the ts recorded the channel's history is not needed, only the thread.
    assert bool(slack_fake.calls_to("conversations.history")) is not ts_recorded
    replies = slack_fake.calls_to("conversations.replies")
    assert replies and all(c.params.get("include_all_metadata") for c in replies)
    row = ledger_row(store, "C1")
    last_reply = slack_fake.messages("C1")[-1]["ts"]
    assert (row.state, row.ts, row.thread_ts) == ("posted", parent, last_reply)

    again = await deliverer.deliver([item("C1")])
    assert again.unchanged and parts(slack_fake, "C1") == (["digest"], ["thread:0", "thread:1"])


async def test_an_unreadable_thread_is_not_replied_to_blind(
    store: Store, slack_fake: SlackFake, deliverer: Deliverer
) -> None:
    parent = await landed(slack_fake, "C1", 1)
    left_posting(store, "C1")
    slack_fake.fail_next("conversations.replies", status=500, times=deliverer.max_attempts)

    first = await deliverer.deliver([item("C1")])

    assert first.deferred == [(TEAM, "C1", "episode", KEY)]
    assert parts(slack_fake, "C1") == (["digest"], ["thread:0"])  # nothing posted blind
    row = ledger_row(store, "C1")
    assert (row.state, row.owner, row.ts) == ("posting", None, parent)

    second = await deliverer.deliver([item("C1")])
    assert second.recovered == [(TEAM, "C1", "episode", KEY)]
    assert parts(slack_fake, "C1") == (["digest"], ["thread:0", "thread:1"])


async def test_a_failed_recovery_keeps_the_original_claim_time(
    store: Store, slack_fake: SlackFake, deliverer: Deliverer
) -> None:
    """Retries must search history back to the first claim, not to the latest one."""
    claimed = datetime.now(UTC) - timedelta(minutes=45)
    left_posting(store, "C1", claimed_at=claimed)
    slack_fake.fail_next("conversations.history", status=500, times=deliverer.max_attempts)

    report = await deliverer.deliver([item("C1")])

    assert report.deferred and slack_fake.messages("C1") == []
    row = ledger_row(store, "C1")
    assert (row.state, row.owner, row.attempts) == ("posting", None, 2)
    assert row.claimed_at == claimed
    oldest = float(slack_fake.calls_to("conversations.history")[0].params["oldest"])
    assert oldest <= claimed.timestamp()


async def test_orphans_are_the_rows_no_live_owner_is_on(
    store: Store, slack_fake: SlackFake, deliverer: Deliverer
) -> None:
    ledger = Ledger.for_store(store)
    live = LiveOwner()
    other = live.name
    try:
        left_posting(store, "C1", owner=DEAD)
        left_posting(store, "C2", owner=DEAD, state="pending")
        left_posting(store, "C3", owner=None)
        left_posting(store, "C4", owner=other)
        left_posting(store, "C5", owner=other, state="pending")
        left_posting(store, "C6", owner=DEAD, state="posted", ts="1.000001")
        left_posting(store, "C7", owner=deliverer.owner)  # ours, but no task is on it
        left_posting(store, "C8", owner=deliverer.owner, state="pending")  # ours to retry

        orphans = await deliverer.orphans()
        assert sorted(r.channel_id for r in orphans) == ["C1", "C2", "C3", "C7"]
    finally:
        live.close()
    await gone(ledger, other)
    # Once the other owner is gone its rows are orphans too.
    assert sorted(r.channel_id for r in await deliverer.orphans()) == [
        "C1",
        "C2",
        "C3",
        "C4",
        "C5",
        "C7",
    ]


async def test_pending_rows_carry_the_deliverer_that_planned_them(
    store: Store, slack_fake: SlackFake, deliverer: Deliverer
) -> None:
    slack_fake.channel_error("C1", "is_archived")
    store.subscribe(TEAM, "C1", "PyTorch", source="config")
    second = Delivery(TEAM, "C1", "episode", "PyTorch:g2", digest("g2"), content_hash="v1")
    report = await deliverer.deliver([item("C1"), second])
    assert report.held == [second.ident]
    row = next(r for r in Ledger.for_store(store).all_rows() if r.key == "PyTorch:g2")
    assert (row.state, row.owner) == ("pending", deliverer.owner)


async def test_the_sweep_finishes_a_dead_owners_fan_out_and_nothing_else(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:
    url = feed_server.route("/feed.xml", rss(rss_item(3), rss_item(2)))
    settings = Settings(
        shows=[ShowConfig(name="PyTorch", feed=url, repo="pytorch/pytorch")],
        schedule=ScheduleConfig(poll_minutes=15),
        team_id=TEAM,
    )
    store.ensure_show("PyTorch", url, "pytorch/pytorch")
    channels = ["C1", "C2", "C3", "C4", "C5"]
    for channel in channels:
        store.subscribe(TEAM, channel, "PyTorch", source="config")
    polled = await poll_show(settings, store, http, settings.shows[0], NOW)
    assert polled.status == "ok"
    key = episode_key("PyTorch", "pytorch-2026-10-03")
    live = LiveOwner()
    other = live.name
    try:
        left_posting(store, "C1", key=key, state="pending")  # never started
        await landed(slack_fake, "C2", 0, key=key)
        left_posting(store, "C2", key=key)  # digest out, died before the reply
        await landed(slack_fake, "C3", 1, key=key)
        left_posting(store, "C3", key=key)  # all out, died before recording it
        left_posting(store, "C4", key=key, owner=other)  # the other clock's
        # C5 has no row: a poll's business, not the sweep's.
        sweeper = Sweeper(settings, store, deliverer)

        report = await sweeper.sweep()

        assert sorted(i[1] for i in report.posted) == ["C1"]
        assert sorted(i[1] for i in report.recovered) == ["C2", "C3"]
        for channel in ("C1", "C2", "C3"):
            assert parts(slack_fake, channel, key) == (["digest"], ["thread:0"]), channel
        assert slack_fake.messages("C4") == [] and slack_fake.messages("C5") == []
        calls = len(slack_fake.calls)
        assert (await sweeper.sweep()).posted == [] and len(slack_fake.calls) == calls
    finally:
        live.close()
    await gone(Ledger.for_store(store), other)
    # The other clock died too: its row is the sweep's now.
    late = await sweeper.sweep()
    assert [i[1] for i in late.posted] == ["C4"]
    assert parts(slack_fake, "C4", key) == (["digest"], ["thread:0"])
    assert slack_fake.messages("C5") == []


def test_on_sqlite_an_owner_is_alive_while_its_process_is(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'd.sqlite3'}")
    ledger = Ledger.for_store(store)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        owner = f"{socket.gethostname()}:{sleeper.pid}:abcd1234"
        assert ledger.owner_alive(owner)
        assert not ledger.owner_alive(f"elsewhere:{sleeper.pid}:abcd1234")  # not this machine
        assert not ledger.owner_alive("not-an-owner-name")
        sleeper.kill()
        sleeper.wait(timeout=10)
        assert not ledger.owner_alive(owner)
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
        store.close()
