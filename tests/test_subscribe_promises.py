"""What a reply promises is what happens: the episodes a new keyword
subscription's reply names are posted at the next poll even when newer ones arrive first,
and `preview` says what `subscribe` with its filter would post, which is what it posts.
Signed slash requests to the real app, real polls of a feed on loopback, the Slack fake,
SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.fixtures.control import Rig
from tests.fixtures.delivery import rss, rss_item


def utc(day: int, hour: int) -> datetime:
    return datetime(2026, 10, day, hour, 0, tzinfo=UTC)


def key(day: int) -> str:
    return f"PyTorch:pytorch-2026-10-{day:02d}"


def serve(rig: Rig, *items: str) -> None:
    rig.feed.route("/feed.xml", rss(*reversed(items)))  # newest first, as feeds list them


WINDOWS = rss_item(2, headline="Clang on Windows", summary="Clang fixes for Windows builds.")
MODULES = rss_item(3, headline="Clang Modules Speedup", summary="Clang builds modules faster.")
NEWER = rss_item(4, headline="Clang Diagnostics", summary="Clang warns about more mistakes.")


async def test_the_episode_a_subscribe_reply_names_is_posted_though_a_newer_one_came(
    rig: Rig,
) -> None:
    serve(rig, rss_item(1), WINDOWS, MODULES)
    await rig.poll(utc(3, 14))  # nobody subscribed yet: the episodes are stored
    rig.clock.now = utc(3, 15)
    reply = rig.slash("subscribe PyTorch +clang -windows")
    assert "Matching already, and posted here at the next poll: " in reply[-2]
    assert "Clang Modules Speedup" in reply[-2] and "Windows" not in reply[-2]
    # `why` reads the same promise from the channel's delivery record.
    assert "Planned for this channel" in rig.slash("why Clang Modules Speedup")[0]

    serve(rig, rss_item(1), WINDOWS, MODULES, NEWER)  # a newer match before that poll
    await rig.poll(utc(4, 14))
    assert rig.posted() == [key(3), key(4)]
    await rig.poll(utc(4, 15))
    assert rig.posted() == [key(3), key(4)]


async def test_preview_says_what_subscribe_posts_and_subscribe_posts_it(rig: Rig) -> None:
    inductor = rss_item(1, headline="Inductor Fusion", summary="Inductor fuses more kernels.")
    serve(rig, inductor, rss_item(2), rss_item(3))
    await rig.poll(utc(3, 14))
    rig.clock.now = utc(3, 15)

    preview = rig.slash("preview PyTorch inductor")
    assert "Of its last 3 episodes, this filter lets 1 through and skips 2." in preview[0]
    assert "Inductor Fusion — let through: mentions “inductor”" in preview[1]
    footer = preview[-1]
    assert footer.startswith("Nothing changed. `/episodes subscribe PyTorch inductor` here ")
    assert footer.endswith("|Inductor Fusion> · 2:01 · 2 PRs.")
    assert "would post each new episode this filter lets through, and at the next poll " in footer
    assert rig.posted() == []

    reply = rig.slash("subscribe PyTorch inductor")
    assert "Matching already, and posted here at the next poll: " in reply[-2]
    assert "Inductor Fusion" in reply[-2]
    await rig.poll(utc(3, 16))
    assert rig.posted() == [key(1)]

    # Followed already: subscribing again would change the filter, not post these.
    again = rig.slash("preview PyTorch fusion")
    assert again[-1] == (
        "Nothing changed. This channel follows *PyTorch* already: `/episodes subscribe "
        "PyTorch fusion` would filter the episodes that come next this way, and post none of "
        "these."
    )


async def test_preview_and_subscribe_agree_when_nothing_recent_matches(rig: Rig) -> None:
    serve(rig, rss_item(1), rss_item(2))
    await rig.poll(utc(2, 14))
    rig.clock.now = utc(2, 15)
    assert rig.slash("preview PyTorch quantum")[-1] == (
        "Nothing changed. `/episodes subscribe PyTorch quantum` here would post none of "
        "these: the next episode this filter lets through is the first posted here."
    )
    reply = rig.slash("subscribe PyTorch quantum")
    assert "Nothing yet matches — the next matching episode will be posted here." in reply
    quantum = rss_item(3, headline="Quantum Kernels", summary="Quantum of speed.")
    serve(rig, rss_item(1), rss_item(2), quantum)
    await rig.poll(utc(3, 14))
    assert rig.posted() == [key(3)]
