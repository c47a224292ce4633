"""Weekly recap aggregation: weeks in time zones, filters, PR ordering, subjects."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest

from digests.recap import (
    InvalidWeek,
    aggregate,
    parse_week,
    previous_week,
    subjects,
    week_bounds,
    week_of,
)
from tests.fixtures.recap import episode, pr, sample_week

UTC_TZ = ZoneInfo("UTC")
BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# -- weeks ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("year", "week", "tz", "start", "end", "hours"),
    [
        (2026, 41, "UTC", "2026-10-05T00:00", "2026-10-12T00:00", 168),
        # 2026 has 53 ISO weeks; the last one ends in 2027.
        (2026, 53, "UTC", "2026-12-28T00:00", "2027-01-04T00:00", 168),
        # Week 1 of 2026 starts in 2025.
        (2026, 1, "UTC", "2025-12-29T00:00", "2026-01-05T00:00", 168),
        (2026, 1, "Europe/Berlin", "2025-12-28T23:00", "2026-01-04T23:00", 168),
        # Clocks go back on Sunday 25 Oct 2026 in Berlin: a 169-hour week.
        (2026, 43, "Europe/Berlin", "2026-10-18T22:00", "2026-10-25T23:00", 169),
        # Clocks go forward on Sunday 29 Mar 2026 in Berlin: a 167-hour week.
        (2026, 13, "Europe/Berlin", "2026-03-22T23:00", "2026-03-29T22:00", 167),
        (2026, 44, "America/New_York", "2026-10-26T04:00", "2026-11-02T05:00", 169),
        (2026, 41, "Asia/Kolkata", "2026-10-04T18:30", "2026-10-11T18:30", 168),
    ],
)
def test_week_bounds(year: int, week: int, tz: str, start: str, end: str, hours: int) -> None:
    got_start, got_end = week_bounds(year, week, ZoneInfo(tz))
    assert (got_start, got_end) == (utc(start), utc(end))
    assert got_start.tzinfo is not None and got_start.utcoffset() == timedelta(0)
    assert got_end - got_start == timedelta(hours=hours)


@pytest.mark.parametrize("tz", ["Europe/Berlin", "America/New_York", "America/Santiago"])
def test_weeks_tile_time_without_gap_or_overlap(tz: str) -> None:
    zone = ZoneInfo(tz)
    weeks = [(2025, w) for w in range(40, 53)] + [(2026, w) for w in range(1, 54)]
    bounds = [week_bounds(y, w, zone) for y, w in weeks]
    for (_, end), (start, _) in pairwise(bounds):
        assert end == start


@pytest.mark.parametrize(("year", "week"), [(2025, 53), (2026, 0), (2026, 54)])
def test_week_bounds_rejects_weeks_that_do_not_exist(year: int, week: int) -> None:
    with pytest.raises(InvalidWeek, match=f"{year}-W{week:02d} is not an ISO week"):
        week_bounds(year, week, UTC_TZ)


@pytest.mark.parametrize(
    ("when", "tz", "expected"),
    [
        (date(2027, 1, 1), "UTC", (2026, 53)),
        (date(2027, 1, 4), "UTC", (2027, 1)),
        (date(2025, 12, 29), "UTC", (2026, 1)),
        # Sunday 23:30 in Berlin (CEST) is still Sunday there: week 41.
        (utc("2026-10-11T21:30"), "Europe/Berlin", (2026, 41)),
        # 23:30 UTC on Sunday is already Monday 01:30 in Berlin: week 42.
        (utc("2026-10-11T23:30"), "Europe/Berlin", (2026, 42)),
        (utc("2026-10-11T23:30"), "UTC", (2026, 41)),
        # Sunday 23:30 in New York is Monday 03:30 UTC.
        (utc("2026-10-12T03:30"), "America/New_York", (2026, 41)),
        (utc("2026-10-12T03:30"), "UTC", (2026, 42)),
        # Naive datetimes are UTC, like Episode.published_at.
        (datetime(2026, 10, 11, 23, 30), "Europe/Berlin", (2026, 42)),
    ],
)
def test_week_of(when: date | datetime, tz: str, expected: tuple[int, int]) -> None:
    assert week_of(when, ZoneInfo(tz)) == expected


@pytest.mark.parametrize(
    ("when", "tz", "expected"),
    [
        (datetime(2026, 10, 12, 9, 0, tzinfo=BERLIN), "Europe/Berlin", (2026, 41)),
        (datetime(2027, 1, 4, 9, 0, tzinfo=BERLIN), "Europe/Berlin", (2026, 53)),
        (datetime(2026, 1, 5, 9, 0, tzinfo=UTC), "UTC", (2026, 1)),
        (datetime(2026, 1, 1, 9, 0, tzinfo=UTC), "UTC", (2025, 52)),
        (date(2026, 10, 25), "UTC", (2026, 42)),
    ],
)
def test_previous_week(when: date | datetime, tz: str, expected: tuple[int, int]) -> None:
    assert previous_week(when, ZoneInfo(tz)) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2026-W41", (2026, 41)), ("2026w41", (2026, 41)), (" 2026-W01 ", (2026, 1))],
)
def test_parse_week(text: str, expected: tuple[int, int]) -> None:
    assert parse_week(text) == expected


@pytest.mark.parametrize("text", ["W41", "2026-41", "2026-W", "2025-W53", "last week"])
def test_parse_week_rejects(text: str) -> None:
    with pytest.raises(InvalidWeek):
        parse_week(text)


# -- which episodes -----------------------------------------------------------------------


def guids(recap_episodes: object) -> list[str]:
    return [e.guid for e in recap_episodes]  # type: ignore[attr-defined]


def test_year_boundary_week_takes_both_years() -> None:
    eps = [
        episode("sun-before", "2026-12-27T23:59:59+00:00"),
        episode("mon", "2026-12-28T00:00:00+00:00"),
        episode("new-year", "2027-01-01T13:00:00+00:00"),
        episode("sun", "2027-01-03T23:59:59+00:00"),
        episode("mon-after", "2027-01-04T00:00:00+00:00"),
    ]
    recap = aggregate(eps, year=2026, week=53, tz=UTC_TZ, shows=["PyTorch"])
    assert guids(recap.episodes) == ["mon", "new-year", "sun"]
    assert recap.key == "2026-W53"
    assert (recap.first_day, recap.last_day) == (date(2026, 12, 28), date(2027, 1, 3))


def test_dst_week_in_berlin_keeps_the_extra_hour() -> None:
    # 2026-W43 in Berlin: Mon 19 Oct 00:00 CEST (18 Oct 22:00Z) to Mon 26 Oct 00:00 CET
    # (25 Oct 23:00Z), the night the clocks go back inside it.
    eps = [
        episode("sun-before-2330-local", "2026-10-18T21:30:00+00:00"),
        episode("mon-0030-local", "2026-10-18T22:30:00+00:00"),
        episode("sun-0230-first", "2026-10-25T00:30:00+00:00"),
        episode("sun-0230-second", "2026-10-25T01:30:00+00:00"),
        episode("sun-2330-local", "2026-10-25T22:30:00+00:00"),
        episode("mon-0000-local", "2026-10-25T23:00:00+00:00"),
    ]
    recap = aggregate(eps, year=2026, week=43, tz=BERLIN, shows=["PyTorch"])
    assert guids(recap.episodes) == [
        "mon-0030-local",
        "sun-0230-first",
        "sun-0230-second",
        "sun-2330-local",
    ]
    # The same instants in UTC weeks: the Sunday-before one moves in, the last one stays out.
    in_utc = aggregate(eps, year=2026, week=43, tz=UTC_TZ, shows=["PyTorch"])
    assert guids(in_utc.episodes) == [
        "sun-0230-first",
        "sun-0230-second",
        "sun-2330-local",
        "mon-0000-local",
    ]


def test_sunday_2330_local_belongs_to_the_local_week() -> None:
    sunday_late = episode("sun-late", "2026-10-12T03:30:00+00:00")  # Sun 23:30 EDT
    in_ny = aggregate([sunday_late], year=2026, week=41, tz=NEW_YORK, shows=["PyTorch"])
    assert guids(in_ny.episodes) == ["sun-late"]
    in_utc = aggregate([sunday_late], year=2026, week=41, tz=UTC_TZ, shows=["PyTorch"])
    assert guids(in_utc.episodes) == []
    assert guids(aggregate([sunday_late], year=2026, week=42, tz=UTC_TZ, shows=[]).episodes) == [
        "sun-late"
    ]


def test_shows_filter_is_case_insensitive_and_empty_means_all() -> None:
    eps = [
        episode("a", "2026-10-05T10:00:00+00:00", show="PyTorch"),
        episode("b", "2026-10-06T10:00:00+00:00", show="JAX"),
        episode("c", "2026-10-07T10:00:00+00:00", show="Triton"),
    ]
    picked = aggregate(eps, year=2026, week=41, tz=UTC_TZ, shows=["pytorch", "TRITON"])
    assert guids(picked.episodes) == ["a", "c"]
    assert picked.shows == ("pytorch", "TRITON")
    everything = aggregate(eps, year=2026, week=41, tz=UTC_TZ, shows=[])
    assert guids(everything.episodes) == ["a", "b", "c"]
    assert everything.shows == ("PyTorch", "JAX", "Triton")


@pytest.mark.parametrize(
    ("keywords", "expected"),
    [
        ((), ["mps", "fsdp", "compiler"]),
        (("MPS",), ["mps"]),
        (("fsdp", "Compiler"), ["fsdp", "compiler"]),
        (("  ",), ["mps", "fsdp", "compiler"]),  # blank keywords filter nothing
        (("transcript-only",), ["compiler"]),
        (("quantization",), []),
    ],
)
def test_keyword_filter(keywords: tuple[str, ...], expected: list[str]) -> None:
    eps = [
        episode("mps", "2026-10-05T10:00:00+00:00", "MPS Kernels Get Faster"),
        episode("fsdp", "2026-10-06T10:00:00+00:00", "Sharding", summary="FSDP gets a contract."),
        episode(
            "compiler",
            "2026-10-07T10:00:00+00:00",
            "Compiler Parity",
            transcript="a transcript-only word",
        ),
    ]
    recap = aggregate(eps, year=2026, week=41, tz=UTC_TZ, shows=["PyTorch"], keywords=keywords)
    assert guids(recap.episodes) == expected
    assert recap.keywords == tuple(k for k in keywords if k.strip())


def test_episodes_oldest_first_and_repeats_counted_once() -> None:
    eps = sample_week()
    shuffled = [eps[3], eps[0], eps[4], eps[0], eps[2], eps[1]]
    recap = aggregate(shuffled, year=2026, week=41, tz=UTC_TZ, shows=["PyTorch"])
    assert guids(recap.episodes) == [e.guid for e in eps]
    assert len(recap.episodes) == 5


def test_totals_count_known_durations_and_say_how_many_are_unknown() -> None:
    recap = aggregate(sample_week(), year=2026, week=41, tz=UTC_TZ, shows=["PyTorch"])
    assert recap.total_seconds == 151 + 188 + 163 + 201
    assert recap.untimed_episodes == 1
    assert [e.pr_count for e in recap.episodes] == [5, 3, 3, 3, 3]


def test_empty_week() -> None:
    recap = aggregate(sample_week(), year=2026, week=42, tz=UTC_TZ, shows=["PyTorch"])
    assert recap.episodes == () and recap.pull_requests == () and recap.subjects == ()
    assert recap.total_seconds == 0


# -- pull requests ----------------------------------------------------------------------------


def test_prs_named_in_more_episodes_come_first_then_first_mention() -> None:
    recap = aggregate(sample_week(), year=2026, week=41, tz=UTC_TZ, shows=["PyTorch"])
    numbers = [p.number for p in recap.pull_requests]
    assert numbers == [
        # in two episodes, by first mention (Mon 199720 before Mon 199726 before 199714 …)
        199720,
        199726,
        199714,
        199687,
        199830,
        # in one episode, by first mention
        199721,
        199716,
        199689,
        199801,
        199831,
        199835,
        199840,
    ]
    assert len(numbers) == len(set(numbers))
    first = recap.pull_requests[0]
    assert first.episodes == (
        "All-Gather Showdown and Stack-Aware Merges",
        "All-Gather Contract Converges",
    )
    assert first.guids == ("pytorch-2026-10-05", "pytorch-2026-10-07")
    assert first.url == "https://github.com/pytorch/pytorch/pull/199720"
    # The context is the first sentence that named it.
    assert first.context.startswith("Three drafts")


def test_same_number_in_two_repos_is_two_prs() -> None:
    eps = [
        episode("a", "2026-10-05T10:00:00+00:00", prs=(pr(100, repo="pytorch/pytorch"),)),
        episode("b", "2026-10-06T10:00:00+00:00", show="JAX", prs=(pr(100, repo="jax-ml/jax"),)),
        episode("c", "2026-10-07T10:00:00+00:00", prs=(pr(100, repo="pytorch/pytorch"),)),
    ]
    recap = aggregate(eps, year=2026, week=41, tz=UTC_TZ, shows=[])
    assert [(p.url, p.guids) for p in recap.pull_requests] == [
        ("https://github.com/pytorch/pytorch/pull/100", ("a", "c")),
        ("https://github.com/jax-ml/jax/pull/100", ("b",)),
    ]


def test_empty_context_is_filled_by_a_later_mention() -> None:
    eps = [
        episode("a", "2026-10-05T10:00:00+00:00", prs=(pr(7, ""),)),
        episode("b", "2026-10-06T10:00:00+00:00", prs=(pr(7, "PR 7 is back."),)),
    ]
    recap = aggregate(eps, year=2026, week=41, tz=UTC_TZ, shows=[])
    assert recap.pull_requests[0].context == "PR 7 is back."


# -- subjects ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("documents", "expected"),
    [
        # A phrase that always comes whole replaces its words.
        (
            [("All-Gather Contract", ""), ("", "the all-gather contract again"), ("x", "y")],
            ("all-gather contract",),
        ),
        # A word that also recurs on its own stays, ranked by how many episodes name it.
        (
            [
                ("Compiler Guards", ""),
                ("Compiler Parity", "compiler guards tighten"),
                ("Compiler Hardening", ""),
            ],
            ("compiler", "compiler guards"),
        ),
        # Plurals fold together; stopwords, show names and boilerplate never count.
        (
            [("MPS Kernels and Today's Fixes", ""), ("PyTorch: one MPS kernel", "")],
            ("MPS kernels",),
        ),
        # Nothing recurs in a single episode.
        ([("Compiler Compiler Compiler", "compiler")], ()),
        # Punctuation breaks phrases: "speed, precision" is not a phrase.
        ([("Speed, Precision", ""), ("speed precision", "")], ("speed", "precision")),
        ([("Speed Precision", ""), ("more speed precision", "")], ("speed precision",)),
        # Numbers alone are not subjects.
        ([("PR 199720 and 2026", ""), ("199720 in 2026", "")], ()),
        ([], ()),
    ],
)
def test_subjects(documents: list[tuple[str, str]], expected: tuple[str, ...]) -> None:
    assert subjects(documents, extra_stopwords=["PyTorch"]) == expected


def test_subjects_of_the_sample_week() -> None:
    recap = aggregate(sample_week(), year=2026, week=41, tz=UTC_TZ, shows=["PyTorch"])
    # MPS and compiler: two headlines each, MPS first on Tuesday; then the phrase of
    # Monday and Wednesday; words only in summaries come last.
    assert recap.subjects[:3] == ("MPS", "compiler", "all-gather contract")
    assert set(recap.subjects[3:]) == {"stacks", "merge bot"}
    assert "pytorch" not in {s.casefold() for s in recap.subjects}
    assert len(recap.subjects) <= 8


def test_subjects_limit() -> None:
    docs = [(" ".join(f"word{i}x" for i in range(20)), "")] * 2
    assert len(subjects(docs, limit=5)) == 5


def test_filler_and_function_words_are_never_subjects() -> None:
    # Words a week of transcripts repeats whatever it covers: a maintained stop list
    # (function words, "side", "whereas") plus briefing filler ("notes", "dominates").
    docs = [
        ("Side Notes: Inductor Dominates", "On the side, whereas the inductor notes dominate."),
        ("More Side Notes", "Whereas autograd dominates, inductor is back on the side."),
        ("Notes From the Side", "Inductor again dominates; whereas nothing else."),
    ]
    found = subjects(docs, extra_stopwords=["PyTorch"])
    assert found == ("inductor",)


def test_the_show_name_is_never_a_subject() -> None:
    docs = [("JAX: Sharding", "JAX sharding again"), ("JAX Sharding Redux", "jax")]
    assert subjects(docs, extra_stopwords=["JAX"]) == ("sharding",)


def test_subjects_scale_linearly_not_pairwise() -> None:
    # 400 distinct recurring phrases: a pairwise containment check would be 160,000
    # comparisons; the sub-phrase index answers the same.
    docs = [(f"alpha{i}x beta{i}x gamma{i}x", "") for i in range(400)] * 2
    found = subjects(docs, limit=1000)
    assert len(found) == 400
    assert all(len(s.split()) == 3 for s in found)
