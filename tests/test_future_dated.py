"""An item the feed dates a month ahead is dated when first seen, as an
undated one is: posted when it arrives, then below what comes after it in `latest`, `recent`
and the App Home. Signed requests to the real app, real polls of a feed on loopback, the
Slack fake, SQLite and PostgreSQL."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from tests.fixtures.app import USER, wait_for
from tests.fixtures.control import Rig
from tests.fixtures.delivery import rss, rss_item


def utc(day: int, hour: int) -> datetime:
    return datetime(2026, 10, day, hour, 0, tzinfo=UTC)


AHEAD = rss_item(31, headline="Release Candidate Preview")  # dated 31 Oct, seen on 2 Oct


def key(day: int) -> str:
    return f"PyTorch:pytorch-2026-10-{day:02d}"


def serve(rig: Rig, *items: str) -> None:
    rig.feed.route("/feed.xml", rss(*items))


async def test_an_item_dated_a_month_ahead_is_dated_when_first_seen(rig: Rig) -> None:
    rig.slash("subscribe PyTorch")
    await rig.poll(utc(1, 14))
    serve(rig, AHEAD, rss_item(2), rss_item(1))
    await rig.poll(utc(2, 14))
    # Posted when it arrives, as any new episode is.
    assert rig.posted() == [key(1), key(2), key(31)]
    serve(rig, AHEAD, rss_item(3), rss_item(2), rss_item(1))
    await rig.poll(utc(3, 14))
    assert rig.posted() == [key(1), key(2), key(31), key(3)]

    # The next day's episode is the latest, not the one the feed dates 31 Oct.
    rig.clock.now = utc(3, 15)
    latest = "\n".join(rig.slash("latest"))
    assert "Daily Briefing 3" in latest and "Release Candidate Preview" not in latest
    recent = "\n".join(rig.slash("recent"))
    order = [recent.find(h) for h in ("Daily Briefing 3", "Release Candidate", "Daily Briefing 2")]
    assert -1 not in order and order == sorted(order), recent
    assert "31 Oct" not in recent and "2 Oct 2026" in recent

    rig.sender.event({"type": "app_home_opened", "user": USER, "tab": "home"})
    view = wait_for(lambda: rig.fake.home_view(USER))
    home = json.dumps(view["blocks"], ensure_ascii=False)
    assert home.find("Daily Briefing 3") < home.find("Release Candidate Preview")
