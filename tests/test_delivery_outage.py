"""The database failing mid fan-out: one line per outage with
the count of deliveries it held back, not one per channel; nothing lost or doubled once it
answers again; a poll job that meets the outage logs a line, never APScheduler's
traceback (SQLite, PostgreSQL)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from bot.delivery.deliverer import Deliverer
from bot.jobs.scheduler import Clock
from digests.errors import StoreError
from digests.store import Store, ledger_batch, ledger_writer
from digests.store.ledger import Ledger
from tests.feedserver import FeedServer
from tests.fixtures.delivery import copies, rss, rss_item, slack_outbox
from tests.slackfake import SlackFake
from tests.test_delivery import item
from tests.test_scheduler import NOW, TEAM, settings_for

CHANNELS = [f"C{n:03d}" for n in range(30)]


@pytest.fixture
async def deliverer(store: Store, slack_fake: SlackFake) -> AsyncIterator[Deliverer]:
    d = Deliverer(store, slack_outbox(slack_fake), per_channel_interval=0.0, concurrency=5)
    yield d
    await d.aclose()
    await d.outbox.close()


class Outage:
    """The ledger's claims fail once ``claims`` have been asked for (a database restart);
    claims are written in shared transactions, so a whole group fails together."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, claims: int) -> None:
        self.count = 0
        real = Ledger.claim

        def claim(ledger: Ledger, *args: Any, **kwargs: Any) -> bool:
            self.count += 1
            if self.down:
                raise StoreError("cannot claim a delivery: server closed the connection")
            return real(ledger, *args, **kwargs)

        def claim_many(ledger: Ledger, conn: Any, wanted: Any) -> list[bool]:
            if ledger.is_postgres:  # one statement for the group (SQLite: `claim` each)
                self.count += len(wanted)
                if self.down:
                    raise StoreError("cannot claim a delivery: server closed the connection")
            return ledger_batch.claim_many(ledger, conn, wanted)

        self.claims = claims
        monkeypatch.setattr(Ledger, "claim", claim)
        monkeypatch.setattr(ledger_writer, "claim_many", claim_many)

    @property
    def down(self) -> bool:
        return self.count > self.claims


async def test_an_outage_mid_fan_out_is_one_line_and_loses_nothing(
    deliverer: Deliverer,
    slack_fake: SlackFake,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    Outage(monkeypatch, claims=1)
    with caplog.at_level(logging.INFO, logger="bot.delivery"):
        first = await deliverer.deliver([item(c) for c in CHANNELS])
        again = await deliverer.deliver([item(c) for c in CHANNELS])  # still down
    held = len(first.outage)
    assert held > 0 and len(first.posted) + held == len(CHANNELS)
    assert set(first.outage) <= set(first.deferred)
    assert len(again.outage) == len(CHANNELS) - len(first.posted) and not again.posted
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in loud] == [
        "the database failed mid-delivery (cannot claim a delivery: server closed the "
        f"connection): {held} deliveries held back for the next poll or sweep"
    ]
    assert not any(r.exc_info for r in caplog.records)

    monkeypatch.undo()  # the database is back
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="bot.delivery"):
        after = await deliverer.deliver([item(c) for c in CHANNELS])
    assert len(after.posted) == held and not after.outage
    assert [copies(slack_fake, c, "PyTorch:g1") for c in CHANNELS] == [1] * len(CHANNELS)
    assert [r.getMessage() for r in caplog.records] == [
        f"the database answers again; {held + len(again.outage)} deliveries were held back "
        "meanwhile"
    ]


async def test_a_poll_job_meeting_an_outage_logs_a_line_not_a_traceback(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = feed_server.route("/feed.xml", rss(rss_item(3), rss_item(2)))
    settings = settings_for(("PyTorch", url))
    store.ensure_show("PyTorch", url, "")
    for channel in CHANNELS[:8]:
        store.subscribe(TEAM, channel, "PyTorch", source="config")
    outbox = slack_outbox(slack_fake)
    deliverer = Deliverer(store, outbox, per_channel_interval=0.0)
    clock = Clock(settings, store, outbox, http, now=NOW, deliverer=deliverer, sweep_seconds=None)
    outage = Outage(monkeypatch, claims=1)
    real = Store.subscriptions

    def subscriptions(self: Store, *args: Any, **kwargs: Any) -> Any:
        if outage.down:
            raise StoreError("cannot read subscriptions: server closed the connection")
        return real(self, *args, **kwargs)

    # The fan-out meets the outage, then the job's rescheduling does.
    monkeypatch.setattr(Store, "subscriptions", subscriptions)
    try:
        with caplog.at_level(logging.WARNING):
            await clock._poll(settings.shows[0])
    finally:
        await deliverer.aclose()
        await outbox.close()
    assert not any(r.exc_info for r in caplog.records), caplog.text
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert "deliveries held back for the next poll or sweep" in lines[0]
    assert lines[1].startswith("poll of PyTorch: its next run stays as scheduled")
