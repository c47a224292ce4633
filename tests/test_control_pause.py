"""`/episodes pause` and `resume` over real signed HTTP, with real polls in between: a feed on
loopback, the Slack fake, SQLite and PostgreSQL, and one controllable clock for the app and
the polls. What arrives while paused is not posted then or later, unless `--catch-up`."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from bot.listeners.commands.control_parse import parse_pause, parse_resume
from bot.listeners.commands.model import CommandError, Pause, Resume
from digests.decide.deliveries import decide
from digests.models import Episode
from digests.types import Subscription
from tests.fixtures.app import wait_for
from tests.fixtures.control import START, Rig


def key(day: int) -> str:
    return f"PyTorch:pytorch-2026-10-{day:02d}"


async def test_a_timed_pause_holds_what_arrives_and_ends_by_itself(rig: Rig) -> None:
    rig.slash("subscribe PyTorch")
    await rig.poll(START)
    assert rig.posted() == [key(1)]

    rig.clock.now = START + timedelta(hours=1)
    assert rig.slash("pause for 3d") == [
        "Paused *PyTorch* here until Sun 4 Oct 2026 15:00 UTC: episodes that arrive meanwhile "
        "are not posted, then or later.",
        "`/episodes resume` ends it early; add `--catch-up` for the newest 10 of them.",
    ]
    line = rig.slash("list")[1]
    assert line.endswith(" — :double_vertical_bar: paused until Sun 4 Oct 2026 15:00 UTC")
    assert "paused until Sun 4 Oct 2026 15:00 UTC" in "\n".join(rig.slash("status"))

    rig.serve(1, 2)
    await rig.poll(datetime(2026, 10, 2, 14, 0, tzinfo=UTC))
    rig.serve(1, 2, 3)
    await rig.poll(datetime(2026, 10, 3, 14, 0, tzinfo=UTC))
    assert rig.posted() == [key(1)]

    # The pause is over: what comes next is posted, what came meanwhile never is.
    rig.serve(1, 2, 3, 4)
    await rig.poll(datetime(2026, 10, 4, 15, 0, tzinfo=UTC))
    await rig.poll(datetime(2026, 10, 4, 16, 0, tzinfo=UTC))
    assert rig.posted() == [key(1), key(4)]
    line = rig.slash("list")[1]
    assert "paused" not in line


async def test_resume_catch_up_posts_what_arrived_meanwhile(rig: Rig) -> None:
    rig.slash("subscribe PyTorch")
    await rig.poll(START)
    rig.clock.now = START + timedelta(minutes=5)
    assert rig.slash("pause PyTorch")[0] == (
        "Paused *PyTorch* here until you resume: episodes that arrive meanwhile are not "
        "posted, then or later."
    )
    assert rig.slash("list")[1].endswith(" — :double_vertical_bar: paused until resumed")
    rig.serve(1, 2, 3)
    await rig.poll(datetime(2026, 10, 3, 14, 0, tzinfo=UTC))
    assert rig.posted() == [key(1)]

    rig.clock.now = datetime(2026, 10, 3, 15, 0, tzinfo=UTC)
    assert rig.slash("resume PyTorch --catch-up") == [
        "Resumed *PyTorch*: new episodes are posted here again.",
        "The 2 episodes that arrived while paused are posted shortly.",
    ]
    await rig.poll(datetime(2026, 10, 3, 16, 0, tzinfo=UTC))
    assert rig.posted() == [key(1), key(2), key(3)]


async def test_resume_without_catch_up_leaves_what_arrived_unposted(rig: Rig) -> None:
    rig.slash("subscribe PyTorch")
    await rig.poll(START)
    rig.clock.now = START + timedelta(minutes=5)
    rig.slash("pause until mon")
    rig.serve(1, 2)
    await rig.poll(datetime(2026, 10, 2, 14, 0, tzinfo=UTC))

    rig.clock.now = datetime(2026, 10, 2, 15, 0, tzinfo=UTC)
    assert rig.slash("resume") == [
        "Resumed *PyTorch*: new episodes are posted here again.",
        "1 episode that arrived while paused stays unposted (`/episodes resume --catch-up` "
        "would have posted up to 10).",
    ]
    assert rig.slash("resume") == ["Nothing is paused in this channel."]
    rig.serve(1, 2, 3)
    await rig.poll(datetime(2026, 10, 3, 14, 0, tzinfo=UTC))
    assert rig.posted() == [key(1), key(3)]


@pytest.mark.parametrize(
    ("text", "reason", "usage"),
    [
        ("pause for 0d", "A pause of `0d` is no pause; give at least 1h.", "pause"),
        ("pause for 400d", "Pauses last at most 365 days; `400d` is longer.", "pause"),
        ("pause for ever", "`ever` is not a length of time; write it like 12h, 3d or 2w.", "pause"),
        (
            "pause until 2026-09-30",
            "30 Sep 2026 is not in the future; write a later day, with its year.",
            "pause",
        ),
        (
            "pause until today",
            "1 Oct 2026 is not in the future; write a later day, with its year.",
            "pause",
        ),
        (
            "pause until",
            "Pause until what? Write it like `for 3d`, `until mon` or `until 2026-12-24`.",
            "pause",
        ),
        ("pause Rust for 3d", "There is no show called `Rust`. Shows: PyTorch.", "pause"),
        (
            "resume --now",
            "Unexpected `--now`; `resume` takes a show and `--catch-up`.",
            "resume",
        ),
    ],
)
async def test_bad_pauses_get_one_line_and_the_usage(
    rig: Rig, text: str, reason: str, usage: str
) -> None:
    rig.slash("subscribe PyTorch")
    lines = rig.slash(text)
    assert lines[0] == f":warning: {reason}"
    assert lines[1].startswith(f"Usage: `/episodes {usage} [show]")
    assert not any(s.held_at for s in rig.store.subscriptions())


async def test_pausing_an_unsubscribed_channel_says_so(rig: Rig) -> None:
    assert rig.slash("pause for 3d") == [
        "This channel is not subscribed to any show, so there is nothing to pause."
    ]
    assert rig.slash("resume PyTorch") == [
        "This channel does not follow *PyTorch*, so there is nothing to resume."
    ]


async def test_help_lists_pause_and_resume(rig: Rig) -> None:
    everything = "\n".join(rig.slash("help"))
    assert "`/episodes pause [show] [for 3d | until mon | until 2026-12-24]`" in everything
    assert "`/episodes resume [show] [--catch-up]`" in everything


THURSDAY = date(2026, 10, 1)
SHOWS = ["PyTorch", "Deep Learning Daily"]


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("", Pause()),
        ("PyTorch", Pause("PyTorch")),
        ('"Deep Learning Daily" for 12h', Pause("Deep Learning Daily", timedelta(hours=12))),
        ("for 3 days", Pause(duration=timedelta(days=3))),
        ("for 2w", Pause(duration=timedelta(weeks=2))),
        ("until mon", Pause(until=date(2026, 10, 5))),
        ("until Thursday", Pause(until=date(2026, 10, 8))),  # today's weekday: next week's
        ("until fri", Pause(until=date(2026, 10, 2))),
        ("until tomorrow", Pause(until=date(2026, 10, 2))),
        ("pytorch until 2026-12-24", Pause("PyTorch", until=date(2026, 12, 24))),
        ("till 24 Dec 2026", Pause(until=date(2026, 12, 24))),
        # No year: the coming such day, not the latest past one (as `nearby` reads it).
        ("until 24 Dec", Pause(until=date(2026, 12, 24))),
        ("until Dec 24th", Pause(until=date(2026, 12, 24))),
        ("until 24/12", Pause(until=date(2026, 12, 24))),
        ("until Thu 24 Dec", Pause(until=date(2026, 12, 24))),
        ("until 2 Oct", Pause(until=date(2026, 10, 2))),
        ("until 30 Sep", Pause(until=date(2027, 9, 30))),  # this year's is past
    ],
)
def test_pause_arguments(words: str, expected: Pause) -> None:
    assert parse_pause(words.split(), SHOWS, THURSDAY) == expected


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("", Resume()),
        ("--catch-up", Resume(catch_up=True)),
        ("deep learning daily —catch-up", Resume("Deep Learning Daily", catch_up=True)),
    ],
)
def test_resume_arguments(words: str, expected: Resume) -> None:
    assert parse_resume(words.split(), SHOWS) == expected


def test_a_day_without_its_year_that_is_today_is_not_in_the_future() -> None:
    with pytest.raises(CommandError) as info:
        parse_pause(["until", "1", "Oct"], SHOWS, THURSDAY)
    assert info.value.reason == "1 Oct 2026 is not in the future; write a later day, with its year."


async def test_pause_until_a_day_without_its_year_pauses_until_the_coming_one(rig: Rig) -> None:
    rig.slash("subscribe PyTorch")
    lines = rig.slash("pause until 24 Dec")
    assert lines[0].startswith("Paused *PyTorch* here until Thu 24 Dec 2026 00:00 UTC")
    (sub,) = rig.store.subscriptions()
    assert sub.held_at is not None


def test_a_pause_past_the_limit_is_refused() -> None:
    with pytest.raises(CommandError) as info:
        parse_pause(["until", "2027-12-24"], SHOWS, THURSDAY)
    assert info.value.reason == "Pauses last at most 365 days; `2027-12-24` is longer."


def test_decide_passes_over_what_arrived_in_a_user_pause() -> None:
    def episode(day: int) -> Episode:
        when = datetime(2026, 10, day, 13, 0, tzinfo=UTC)
        return Episode(
            guid=f"g{day}", show="PyTorch", title=f"T{day}", headline=f"T{day}", published_at=when
        )

    eps = [episode(d) for d in (2, 3, 4)]
    seen = {e.guid: e.published_at + timedelta(hours=1) for e in eps}
    sub = Subscription(
        "T",
        "C",
        "PyTorch",
        created_at=datetime(2026, 10, 1, tzinfo=UTC),
        held_at=datetime(2026, 10, 2, tzinfo=UTC),
        held_until=datetime(2026, 10, 4, tzinfo=UTC),
    )
    due = decide("PyTorch", eps, [sub], {}, first_seen=seen, catch_up=10)
    assert [d.episode.guid for d in due] == ["g4"]
    open_ended = Subscription("T", "C", "PyTorch", created_at=sub.created_at, held_at=sub.held_at)
    assert decide("PyTorch", eps, [open_ended], {}, first_seen=seen) == []


async def test_pause_and_resume_are_announced_in_the_channel(rig: Rig) -> None:
    rig.slash("subscribe PyTorch")
    rig.clock.now = START + timedelta(hours=1)
    url = rig.fake.response_url()
    rig.sender.slash("pause PyTorch for 3d", response_url=url)
    (notice,) = wait_for(lambda: rig.fake.responses(url), what="the pause announcement")
    assert notice["response_type"] == "in_channel"
    assert notice["text"].endswith(
        " paused posting of *PyTorch* here until Sun 4 Oct 2026 15:00 UTC."
    )
    url = rig.fake.response_url()
    rig.sender.slash("resume", response_url=url)
    (notice,) = wait_for(lambda: rig.fake.responses(url), what="the resume announcement")
    assert notice["response_type"] == "in_channel"
    assert notice["text"].endswith(" resumed posting of *PyTorch* here.")


async def test_a_pause_with_no_show_named_is_announced_with_the_show_its_reply_names(
    rig: Rig,
) -> None:
    """Wording: the reply said "Paused *PyTorch*" while the channel was told
    "paused posting of every show here"; both name the show now."""
    rig.slash("subscribe PyTorch")
    rig.clock.now = START + timedelta(hours=1)
    url = rig.fake.response_url()
    response = rig.sender.slash("pause", response_url=url)
    assert response.json()["blocks"][0]["text"]["text"].startswith("Paused *PyTorch* here ")
    (notice,) = wait_for(lambda: rig.fake.responses(url), what="the pause announcement")
    assert notice["response_type"] == "in_channel"
    assert notice["text"].endswith(" paused posting of *PyTorch* here until someone resumes it.")
    url = rig.fake.response_url()
    rig.sender.slash("pause for 3d", response_url=url)
    (notice,) = wait_for(lambda: rig.fake.responses(url), what="the second pause announcement")
    assert notice["text"].endswith(
        " paused posting of *PyTorch* here until Sun 4 Oct 2026 15:00 UTC."
    )
