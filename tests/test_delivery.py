"""bot.delivery: the exactly-once ledger protocol, against the Slack fake and a real store."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from bot.delivery.deliverer import Deliverer
from bot.delivery.items import Delivery
from bot.delivery.outbox import PrintOutbox, metadata_for
from digests.store import Store
from digests.store.ledger import Ledger
from tests.fixtures.delivery import copies, digest, keys_in, slack_outbox, thread
from tests.fixtures.ledger import seed_row
from tests.fixtures.store import resume_channel
from tests.slackfake import SlackFake

TEAM = "T1"
SHOW = "PyTorch"
NOW = datetime(2026, 10, 6, 8, 0, tzinfo=UTC)


def item(channel: str, key: str = "PyTorch:g1", *, content: str = "v1", **kw: object) -> Delivery:
    return Delivery(
        team_id=TEAM,
        channel_id=channel,
        kind="episode",
        key=key,
        message=digest(f"{key} {content}"),
        content_hash=content,
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture
async def deliverers(store: Store, slack_fake: SlackFake) -> AsyncIterator[list[Deliverer]]:
    made: list[Deliverer] = []
    yield made
    for d in made:
        await d.aclose()
        await d.outbox.close()


def make(made: list[Deliverer], store: Store, fake: SlackFake, **kw: object) -> Deliverer:
    kw.setdefault("per_channel_interval", 0.0)
    kw.setdefault("backoff", 0.01)
    outbox = slack_outbox(fake, timeout=int(kw.pop("timeout", 10)))  # type: ignore[call-overload]
    deliverer = Deliverer(store, outbox, **kw)  # type: ignore[arg-type]
    made.append(deliverer)
    return deliverer


def states(store: Store) -> dict[str, str]:
    return {f"{r.channel_id}/{r.key}": r.state for r in Ledger.for_store(store).all_rows()}


async def test_posts_once_with_metadata_and_thread(
    store: Store, slack_fake: SlackFake, deliverers: list[Deliverer]
) -> None:
    d = make(deliverers, store, slack_fake)
    first = await d.deliver([item("C1", thread=thread("g1"))])
    second = await d.deliver([item("C1", thread=thread("g1"))])

    messages = slack_fake.messages("C1")
    assert [m["text"] for m in messages] == ["Digest PyTorch:g1 v1", "PRs of g1"]
    parent, reply = messages
    assert reply["thread_ts"] == parent["ts"]
    assert parent["metadata"]["event_payload"]["key"] == "PyTorch:g1"
    assert reply["metadata"]["event_payload"]["part"] == "thread:0"
    assert first.posted == [(TEAM, "C1", "episode", "PyTorch:g1")]
    assert second.posted == [] and second.unchanged == first.posted
    row = Ledger.for_store(store).all_rows()[0]
    assert (row.state, row.ts, row.thread_ts) == ("posted", parent["ts"], reply["ts"])


async def test_fan_out_with_429_and_500_loses_and_doubles_nothing(
    store: Store, slack_fake: SlackFake, deliverers: list[Deliverer]
) -> None:
    channels = [f"C{n:03d}" for n in range(30)]
    slack_fake.fail_next("chat.postMessage", status=429, retry_after=0.2, times=3)
    slack_fake.fail_next("chat.postMessage", status=500, times=3)
    slack_fake.fail_next("chat.postMessage", status=503, times=2)
    d = make(deliverers, store, slack_fake, concurrency=5)

    report = await d.deliver([item(c) for c in channels])

    assert [copies(slack_fake, c, "PyTorch:g1") for c in channels] == [1] * len(channels)
    assert report.retries == 8
    assert len(report.posted) == len(channels) and not report.failed
    assert slack_fake.max_in_flight <= 5
    assert set(states(store).values()) == {"posted"}


async def test_archived_channel_in_the_middle_is_paused_and_holds_nothing_up(
    store: Store, slack_fake: SlackFake, deliverers: list[Deliverer]
) -> None:
    channels = ["C01", "C02", "C03", "C04"]
    for channel in channels:
        store.subscribe(TEAM, channel, SHOW, source="config")
    slack_fake.channel_error("C02", "is_archived")
    d = make(deliverers, store, slack_fake)

    report = await d.deliver([item(c, k) for c in channels for k in ("PyTorch:g1", "PyTorch:g2")])

    assert report.paused == {(TEAM, "C02"): "is_archived"}
    assert (TEAM, "C02", "episode", "PyTorch:g2") in report.held
    for channel in ("C01", "C03", "C04"):
        assert keys_in(slack_fake.messages(channel)) == ["PyTorch:g1", "PyTorch:g2"]
    assert slack_fake.messages("C02") == []
    paused = store.subscriptions(team_id=TEAM, channel_id="C02")
    assert paused[0].paused_reason == "is_archived"
    assert store.subscriptions(team_id=TEAM, channel_id="C01")[0].paused_reason is None
    assert states(store)["C02/PyTorch:g1"] == "paused"
    assert states(store)["C02/PyTorch:g2"] == "pending"

    # Unarchived and resumed: the parked deliveries go out, once.
    slack_fake.channel_error("C02", None)
    resume_channel(store, TEAM, "C02")
    again = await d.deliver([item(c, k) for c in channels for k in ("PyTorch:g1", "PyTorch:g2")])
    assert keys_in(slack_fake.messages("C02")) == ["PyTorch:g1", "PyTorch:g2"]
    assert len(again.posted) == 2 and len(again.unchanged) == 6


async def test_invalid_auth_stops_the_team(
    store: Store, slack_fake: SlackFake, deliverers: list[Deliverer]
) -> None:
    slack_fake.tokens.discard(slack_fake.token)  # the token was revoked
    d = make(deliverers, store, slack_fake)
    report = await d.deliver([item("C1"), item("C2"), item("C1", "PyTorch:g2")])

    assert report.stopped_teams == {TEAM: "invalid_auth"} and report.fatal
    assert len(slack_fake.calls_to("chat.postMessage")) <= 2  # one per channel at most
    assert set(states(store).values()) == {"pending"}  # certainly not posted: offered later
    later = await d.deliver([item("C3")])
    assert later.held and slack_fake.calls_to("chat.postMessage")[-1].params["channel"] != "C3"


async def test_crash_recovery_finds_the_post_in_history(
    store: Store, slack_fake: SlackFake, deliverers: list[Deliverer]
) -> None:
    """A row left ``posting`` by a dead owner: landed → recorded; not landed → posted once."""
    ledger = Ledger.for_store(store)
    outbox = slack_outbox(slack_fake)
    try:
        landed_ts = await outbox.post(
            "C1", digest("landed"), metadata=metadata_for("PyTorch:g1", "episode", "digest")
        )
    finally:
        # Its aiohttp session, left open, is reported when collected: in a later test.
        await outbox.close()
    for channel in ("C1", "C2"):
        seed_row(store, channel, key="PyTorch:g1", team=TEAM, created_at=NOW)

    d = make(deliverers, store, slack_fake)
    report = await d.deliver([item("C1"), item("C2")])

    assert report.recovered == [(TEAM, "C1", "episode", "PyTorch:g1")]
    assert report.posted == [(TEAM, "C2", "episode", "PyTorch:g1")]
    assert copies(slack_fake, "C1", "PyTorch:g1") == 1
    assert copies(slack_fake, "C2", "PyTorch:g1") == 1
    rows = {r.channel_id: r for r in ledger.all_rows()}
    assert rows["C1"].ts == landed_ts and rows["C1"].state == "posted"
    history = slack_fake.calls_to("conversations.history")
    assert history and all(c.params.get("include_all_metadata") for c in history)


async def test_a_live_owner_is_left_alone(
    store: Store, slack_fake: SlackFake, deliverers: list[Deliverer]
) -> None:
    first = make(deliverers, store, slack_fake)
    await first.deliver([item("C0")])  # registers its owner as alive
    seed_row(
        store,
        "C1",
        key="PyTorch:g1",
        team=TEAM,
        owner=first.owner,
        claimed_at=NOW,
        created_at=NOW,
    )
    second = make(deliverers, store, slack_fake)
    report = await second.deliver([item("C1")])
    assert report.busy == [(TEAM, "C1", "episode", "PyTorch:g1")]
    assert slack_fake.messages("C1") == []


async def test_timeout_is_checked_before_posting_again(
    store: Store, slack_fake: SlackFake, deliverers: list[Deliverer]
) -> None:
    slack_fake.latency = 1.3  # longer than the client's 1 s timeout: the post lands anyway
    d = make(deliverers, store, slack_fake, timeout=1, max_attempts=2)
    report = await d.deliver([item("C1")])
    assert report.failed  # could not tell; left for recovery
    row = Ledger.for_store(store).all_rows()[0]
    assert (row.state, row.owner) == ("posting", None)

    slack_fake.latency = 0.0
    again = await d.deliver([item("C1")])
    assert again.recovered == [(TEAM, "C1", "episode", "PyTorch:g1")]
    assert copies(slack_fake, "C1", "PyTorch:g1") == 1


async def test_edited_episode_updates_the_message(
    store: Store, slack_fake: SlackFake, deliverers: list[Deliverer]
) -> None:
    d = make(deliverers, store, slack_fake)
    await d.deliver([item("C1", content="v1")])
    report = await d.deliver([item("C1", content="v2")])

    assert report.updated == [(TEAM, "C1", "episode", "PyTorch:g1")]
    messages = slack_fake.messages("C1")
    assert len(messages) == 1 and messages[0]["text"] == "Digest PyTorch:g1 v2"
    assert Ledger.for_store(store).all_rows()[0].content_hash == "v2"
    third = await d.deliver([item("C1", content="v2")])
    assert third.unchanged and len(slack_fake.calls_to("chat.update")) == 1


async def test_invalid_blocks_fail_once_and_never_loop(
    store: Store, slack_fake: SlackFake, deliverers: list[Deliverer]
) -> None:
    d = make(deliverers, store, slack_fake)
    bad = Delivery(
        TEAM,
        "C1",
        "episode",
        "PyTorch:g9",
        {
            "text": "x",
            "blocks": [{"type": "header", "text": {"type": "plain_text", "text": "h" * 200}}],
        },
        content_hash="h1",
    )
    report = await d.deliver([bad, item("C1")])
    assert report.failed == {(TEAM, "C1", "episode", "PyTorch:g9"): "invalid_blocks"}
    assert keys_in(slack_fake.messages("C1")) == ["PyTorch:g1"]  # the next one still went
    again = await d.deliver([bad])
    assert again.failed and len(slack_fake.calls_to("chat.postMessage")) == 2


async def test_two_deliverers_at_once_post_once(
    store: Store, slack_fake: SlackFake, deliverers: list[Deliverer]
) -> None:
    import asyncio

    slack_fake.latency = 0.02
    channels = [f"C{n:02d}" for n in range(25)]
    a = make(deliverers, store, slack_fake, concurrency=4)
    b = make(deliverers, store, slack_fake, concurrency=4)
    ra, rb = await asyncio.gather(
        a.deliver([item(c) for c in channels]), b.deliver([item(c) for c in reversed(channels)])
    )
    assert [copies(slack_fake, c, "PyTorch:g1") for c in channels] == [1] * 25
    assert len(ra.posted) + len(rb.posted) == 25


async def test_pacing_spaces_posts_in_one_channel(
    store: Store, slack_fake: SlackFake, deliverers: list[Deliverer]
) -> None:
    d = make(deliverers, store, slack_fake, per_channel_interval=0.2)
    await d.deliver([item("C1", f"PyTorch:g{n}") for n in range(3)] + [item("C2")])
    stamps = [float(m["ts"]) for m in slack_fake.messages("C1")]
    assert len(stamps) == 3
    assert all(b - a >= 0.18 for a, b in itertools.pairwise(stamps))


async def test_print_outbox_records_the_ledger(store: Store) -> None:
    import io

    out = io.StringIO()
    d = Deliverer(store, PrintOutbox(out), per_channel_interval=0.0)
    try:
        await d.deliver([item("C1", thread=thread("g1"))])
        await d.deliver([item("C1", thread=thread("g1"))])
    finally:
        d.close()
    text = out.getvalue()
    assert text.count("would post to #C1\n") == 1
    assert "PyTorch:g1 v1" in text and "PRs of g1" in text
    assert states(store) == {"C1/PyTorch:g1": "posted"}


async def test_not_in_channel_joins_once_then_posts(
    store: Store, slack_fake: SlackFake, deliverers: list[Deliverer]
) -> None:
    slack_fake.channel_error("C1", "not_in_channel")
    d = make(deliverers, store, slack_fake)
    report = await d.deliver([item("C1")])
    assert report.posted == [(TEAM, "C1", "episode", "PyTorch:g1")]
    assert len(slack_fake.calls_to("conversations.join")) == 1
    assert copies(slack_fake, "C1", "PyTorch:g1") == 1


async def test_update_of_a_deleted_message_is_given_up_once(
    store: Store, slack_fake: SlackFake, deliverers: list[Deliverer]
) -> None:
    d = make(deliverers, store, slack_fake)
    await d.deliver([item("C1", content="v1")])
    slack_fake.fail_next("chat.update", error="message_not_found")
    first = await d.deliver([item("C1", content="v2")])
    second = await d.deliver([item("C1", content="v2")])
    assert first.failed and second.unchanged
    assert len(slack_fake.calls_to("chat.update")) == 1
    assert len(slack_fake.calls_to("chat.postMessage")) == 1
