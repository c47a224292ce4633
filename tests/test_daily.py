"""Daily digest mode, the pure parts: times of day, DST, the day's window, what goes in it,
the `subscribe … daily` syntax, and the message within Block Kit's limits."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bot.listeners.commands.model import DAILY_OFF, CommandError, Subscribe
from bot.listeners.commands.parse import parse_command, unparse
from digests.decide.daily import (
    Arrival,
    BadTime,
    channel_episodes,
    fire_time,
    last_due,
    next_due,
    parse_time_of_day,
    window,
)
from digests.models import Episode, PullRequestRef
from digests.render.daily import render_daily
from digests.render.limits import BLOCKS_PER_MESSAGE, MESSAGE_TEXT_BUDGET, message_text_size
from digests.render.renderer import Renderer
from digests.types import Subscription

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("17:00", "17:00"),
        ("7:05", "07:05"),
        ("00:00", "00:00"),
        ("23:59", "23:59"),
        ("5pm", "17:00"),
        ("5:30PM", "17:30"),
        ("5:30 p.m.", "17:30"),
        ("12am", "00:00"),
        ("12pm", "12:00"),
        ("9am", "09:00"),
    ],
)
def test_times_of_day(text: str, expected: str) -> None:
    assert parse_time_of_day(text) == expected


@pytest.mark.parametrize("text", ["25:00", "24:00", "9:60", "13pm", "0am", "5", "17", "noon", ""])
def test_not_times_of_day(text: str) -> None:
    with pytest.raises(BadTime):
        parse_time_of_day(text)


@pytest.mark.parametrize(
    ("day", "at", "tz", "expected"),
    [
        # Summer and winter time in Berlin: 17:00 is 15:00 or 16:00 UTC.
        (date(2026, 10, 24), "17:00", BERLIN, utc(2026, 10, 24, 15)),
        (date(2026, 10, 25), "17:00", BERLIN, utc(2026, 10, 25, 16)),
        # 02:30 on the fall-back night happens twice: the first one (CEST).
        (date(2026, 10, 25), "02:30", BERLIN, utc(2026, 10, 25, 0, 30)),
        # 02:30 on the spring-forward night does not happen: the moment after the gap.
        (date(2027, 3, 28), "02:30", BERLIN, utc(2027, 3, 28, 1, 30)),
        (date(2026, 11, 1), "01:30", NEW_YORK, utc(2026, 11, 1, 5, 30)),
        (date(2027, 3, 14), "02:15", NEW_YORK, utc(2027, 3, 14, 7, 15)),
    ],
)
def test_fire_times_across_dst(day: date, at: str, tz: ZoneInfo, expected: datetime) -> None:
    assert fire_time(day, at, tz) == expected


def test_a_day_across_the_change_is_25_or_23_hours() -> None:
    start, end = window(date(2026, 10, 25), "17:00", BERLIN)
    assert (start, end) == (utc(2026, 10, 24, 15), utc(2026, 10, 25, 16))
    start, end = window(date(2027, 3, 28), "17:00", BERLIN)
    assert end - start == timedelta(hours=23)
    # A gap time: the day before's 02:30 CET to this day's 03:30 CEST, 24 hours apart.
    start, end = window(date(2027, 3, 28), "02:30", BERLIN)
    assert end - start == timedelta(hours=24)


@pytest.mark.parametrize(
    ("now", "at", "day", "due"),
    [
        (utc(2026, 10, 25, 15, 59), "17:00", date(2026, 10, 24), utc(2026, 10, 24, 15)),
        (utc(2026, 10, 25, 16), "17:00", date(2026, 10, 25), utc(2026, 10, 25, 16)),
        # Both 02:30s of the fall-back night are the same day's one digest time.
        (utc(2026, 10, 25, 0, 30), "02:30", date(2026, 10, 25), utc(2026, 10, 25, 0, 30)),
        (utc(2026, 10, 25, 1, 30), "02:30", date(2026, 10, 25), utc(2026, 10, 25, 0, 30)),
        # Just before local midnight: still that day.
        (utc(2026, 10, 25, 22, 20), "23:30", date(2026, 10, 24), utc(2026, 10, 24, 21, 30)),
    ],
)
def test_last_due(now: datetime, at: str, day: date, due: datetime) -> None:
    assert last_due(now, at, BERLIN) == (day, due)
    assert next_due(now, at, BERLIN) > now


def episode(guid: str, published: datetime, show: str = "PyTorch", **kw: object) -> Episode:
    values: dict[str, object] = {
        "show": show,
        "guid": guid,
        "url": f"https://example.test/{guid}",
        "title": f"Episode {guid}",
        "headline": kw.pop("headline", f"Episode {guid}"),
        "published_at": published,
        "summary": kw.pop("summary", "About the compiler."),
        "duration_seconds": 151,
    }
    values.update(kw)
    return Episode(**values)  # type: ignore[arg-type]


def sub(**kw: object) -> Subscription:
    values: dict[str, object] = {
        "team_id": "T1",
        "channel_id": "C1",
        "show": "PyTorch",
        "daily_at": "17:00",
    }
    values.update(kw)
    return Subscription(**values)  # type: ignore[arg-type]


def test_what_goes_in_a_day() -> None:
    start, end = utc(2026, 10, 24, 15), utc(2026, 10, 25, 16)
    arrivals = [
        Arrival(episode("a", utc(2026, 10, 25, 6)), utc(2026, 10, 25, 6, 5)),
        # Published before the window, seen in it (polled late): this day's.
        Arrival(episode("late", utc(2026, 10, 24, 14, 50)), utc(2026, 10, 24, 15, 5)),
        # Seen before the window: the day before's.
        Arrival(episode("before", utc(2026, 10, 24, 14)), utc(2026, 10, 24, 14, 5)),
        # Seen after the time: the next day's.
        Arrival(episode("after", utc(2026, 10, 25, 16)), utc(2026, 10, 25, 16, 0)),
        # The archive, read on a first poll in the window: not news.
        Arrival(episode("old", utc(2026, 9, 1)), utc(2026, 10, 25, 6)),
        Arrival(episode("other", utc(2026, 10, 25, 6), show="JAX"), utc(2026, 10, 25, 6)),
        Arrival(episode("rocm", utc(2026, 10, 25, 7), summary="rocm"), utc(2026, 10, 25, 7)),
    ]
    got = channel_episodes([sub(keywords=("compiler",))], arrivals, start, end)
    assert [e.guid for e in got] == ["late", "a"]
    # A user pause holds back what arrived in it; a mode change what came before it.
    held = sub(held_at=utc(2026, 10, 25), held_until=utc(2026, 10, 25, 6, 30))
    assert [e.guid for e in channel_episodes([held], arrivals, start, end)] == ["late", "rocm"]
    changed = sub(mode_changed_at=utc(2026, 10, 25, 6, 30))
    assert [e.guid for e in channel_episodes([changed], arrivals, start, end)] == ["rocm"]
    both = [sub(), sub(show="JAX")]
    assert [e.guid for e in channel_episodes(both, arrivals, start, end)] == [
        "late",
        "other",  # published with "a", seen first
        "a",
        "rocm",
    ]


SHOWS = ["PyTorch", "JAX", "Deep Learning Daily"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("subscribe PyTorch daily", Subscribe("PyTorch", daily="17:00")),
        ("subscribe PyTorch daily 17:00", Subscribe("PyTorch", daily="17:00")),
        ("subscribe PyTorch daily 5pm", Subscribe("PyTorch", daily="17:00")),
        ("subscribe PyTorch DAILY 9:30am", Subscribe("PyTorch", daily="09:30")),
        ("subscribe PyTorch daily off", Subscribe("PyTorch", daily=DAILY_OFF)),
        (
            "subscribe PyTorch inductor daily 08:00 recap off",
            Subscribe("PyTorch", ("inductor",), recap=False, daily="08:00"),
        ),
        (
            "subscribe PyTorch JAX fsdp recap on daily 18:15",
            Subscribe("PyTorch", ("fsdp",), also=("JAX",), recap=True, daily="18:15"),
        ),
        # Not the mode: `daily` before other words, or quoted, is a keyword.
        ("subscribe PyTorch daily standup", Subscribe("PyTorch", ("daily", "standup"))),
        ('subscribe PyTorch "daily"', Subscribe("PyTorch", ("daily",))),
        # A show whose name ends in the word.
        ("subscribe Deep Learning Daily", Subscribe("Deep Learning Daily")),
        ("subscribe Deep Learning Daily daily", Subscribe("Deep Learning Daily", daily="17:00")),
        (
            "subscribe deep learning daily daily 7am",
            Subscribe("Deep Learning Daily", daily="07:00"),
        ),
    ],
)
def test_subscribe_daily_syntax(text: str, expected: Subscribe) -> None:
    parsed = parse_command(text, SHOWS)
    assert parsed == expected
    assert parse_command(unparse(parsed), SHOWS) == parsed


@pytest.mark.parametrize("value", ["25:00", "9:75", "13pm", "24:00"])
def test_a_bad_daily_time_is_one_line_with_the_usage(value: str) -> None:
    with pytest.raises(CommandError) as info:
        parse_command(f"subscribe PyTorch daily {value}", SHOWS)
    assert info.value.subcommand == "subscribe"
    reason = info.value.reason
    assert "\n" not in reason and value in reason and "daily 17:00" in reason


def test_many_episodes_fit_one_message_and_say_how_many_more() -> None:
    prs = tuple(
        PullRequestRef(
            number=100 + i,
            url=f"https://github.com/pytorch/pytorch/pull/{100 + i}",
            context="A long sentence about the pull request. " * 6,
        )
        for i in range(12)
    )
    episodes = [
        episode(
            f"g{i}",
            utc(2026, 10, 25, 6) + timedelta(minutes=i),
            headline="<b>&" * 60,
            pull_requests=prs,
        )
        for i in range(60)
    ]
    message = render_daily(episodes, Renderer(), shows=["PyTorch"], day=date(2026, 10, 25))
    assert len(message["blocks"]) <= BLOCKS_PER_MESSAGE
    assert message_text_size(message) <= MESSAGE_TEXT_BUDGET
    text = str(message["blocks"])
    assert "more episodes" in text
    assert "<b>" not in text  # feed text escaped
    assert message["blocks"][0]["text"]["text"] == "PyTorch — daily digest, Sun 25 Oct 2026"
