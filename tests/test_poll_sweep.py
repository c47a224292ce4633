"""The sweeper tells an orphan's show by the ledger row's ``show``; rows from before the
ledger kept it, by the key's prefix."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.sweeper import Sweeper
from config.settings import Settings, ShowConfig
from digests.store.ledger import LedgerRow

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
