"""The sweeper tells an orphan's show by the ledger row's ``show``; rows from before the
ledger kept it, by the key's prefix."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx
import pytest

from bot.delivery.deliverer import Deliverer
from bot.jobs.pipeline import run_once
from bot.jobs.sweeper import Sweeper
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.store import Store
from digests.store.ledger import Ledger, LedgerRow
from tests.feedserver import FeedServer
from tests.fixtures.delivery import rss, rss_item
from tests.slackfake import SlackFake

NOW = datetime(2026, 10, 6, 8, 0, tzinfo=UTC)


def row(key: str, show: str | None) -> LedgerRow:
    return LedgerRow(
        id=1,
        team_id="T1",
        channel_id="C1",
        kind="episode",
        key=key,
        state="posting",
        ts=None,
        thread_ts=None,
        content_hash="h",
        attempts=1,
        error=None,
        owner=None,
        claimed_at=NOW,
        updated_at=NOW,
        show=show,
    )


@pytest.mark.parametrize(
    ("key", "show", "expected"),
    [
        # "Py" with the guid "Torch:1" has the same key as "Py:Torch" with "1".
        ("Py:Torch:1", "Py", "Py"),
        ("Py:Torch:1", "Py:Torch", "Py:Torch"),
        ("Py:Torch:1", None, "Py:Torch"),  # an old row: the longest matching name
        ("Py:1", None, "Py"),
        ("Gone:1", "Gone", None),  # a show no longer configured
        ("Gone:1", None, None),
    ],
)
def test_show_of_an_orphan(key: str, show: str | None, expected: str | None) -> None:
    settings = Settings(
        shows=[ShowConfig(name="Py", feed="a.xml"), ShowConfig(name="Py:Torch", feed="b.xml")],
        slack_bot_token=None,
    )
    sweeper = Sweeper(settings, None, None)  # type: ignore[arg-type]
    assert sweeper.show_of(row(key, show)) == expected


async def test_a_poll_writes_the_show_on_its_ledger_rows_and_the_sweep_reads_it(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:
    # "Py" with the guid "Torch:…" has keys that "Py:Torch" would claim by prefix.
    body = rss(rss_item(3)).replace(b"pytorch-2026-10-03", b"Torch:3")
    url = feed_server.route("/feed.xml", body)
    settings = Settings(
        shows=[ShowConfig(name="Py", feed=url), ShowConfig(name="Py:Torch", feed=url)],
        schedule=ScheduleConfig(poll_minutes=15),
        team_id="T1",
        slack_bot_token=None,
    )
    store.ensure_show("Py", url, "pytorch/pytorch")
    store.subscribe("T1", "C1", "Py", source="config")
    await run_once(
        settings, store, deliverer.outbox, http, NOW, shows=settings.shows[:1], deliverer=deliverer
    )
    (row,) = [r for r in Ledger.for_store(store).all_rows() if r.kind == "episode"]
    assert (row.key, row.show) == ("Py:Torch:3", "Py")
    assert Sweeper(settings, store, deliverer).show_of(row) == "Py"
