"""digests.decide.deliveries: which deliveries are due, next poll times, feed notices — as
tables."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest

from digests.decide.deliveries import (
    FAILING_AFTER,
    candidate_episodes,
    decide,
    episode_key,
    feed_notice,
    key_guid,
    matches,
    next_poll_at,
)
from digests.models import Episode, PrInfo
from digests.types import Due, FetchState, LedgerEntry, Subscription

SHOW = "PyTorch"
T0 = datetime(2026, 10, 6, 8, 0, tzinfo=UTC)


def ep(day: int, *, headline: str = "", summary: str = "", transcript: str = "") -> Episode:
    return Episode(
        guid=f"g{day}",
        show=SHOW,
        title=f"{SHOW}: {headline or f'Day {day}'}",
        headline=headline or f"Day {day}",
        summary=summary,
        published_at=datetime(2026, 10, day, 13, 0, tzinfo=UTC),
        transcript=transcript,
    )


E1, E2, E3 = ep(1), ep(2), ep(3)
E_MPS = ep(4, headline="Metal kernels", summary="MPS upsample gets faster.")
E_DIST = ep(5, transcript="The NCCL watchdog now reports dead ranks.")


def sub(channel: str = "C1", keywords: tuple[str, ...] = (), **kw: object) -> Subscription:
    return Subscription(team_id="T1", channel_id=channel, show=SHOW, keywords=keywords, **kw)  # type: ignore[arg-type]


def posted(
    *episodes: Episode, state: str = "posted", stale: bool = False
) -> dict[str, LedgerEntry]:
    return {
        episode_key(SHOW, e.guid): LedgerEntry(state, "old" if stale else e.content_hash())
        for e in episodes
    }


def plan(result: list[Due]) -> list[tuple[str, str, str]]:
    return [(d.channel_id, d.episode.guid, d.action) for d in result]


DECIDE_CASES = [
    # (id, episodes, subscriptions, ledger by channel, backfill, expected)
    ("first poll posts only the newest", [E1, E2, E3], [sub()], {}, 1, [("C1", "g3", "post")]),
    (
        "first poll, backfill 2",
        [E3, E1, E2],
        [sub()],
        {},
        2,
        [("C1", "g2", "post"), ("C1", "g3", "post")],
    ),
    ("backfill 0 posts nothing at first", [E1, E2], [sub()], {}, 0, []),
    ("second poll, nothing new", [E1, E2, E3], [sub()], {"C1": posted(E3)}, 1, []),
    ("one new episode", [E1, E2, E3], [sub()], {"C1": posted(E2)}, 1, [("C1", "g3", "post")]),
    (
        "two new at once: both, oldest first",
        [E1, E2, E3],
        [sub()],
        {"C1": posted(E1)},
        1,
        [("C1", "g2", "post"), ("C1", "g3", "post")],
    ),
    (
        "never the archive below what the channel has",
        [E1, E2, E3],
        [sub()],
        {"C1": posted(E2, E3)},
        1,
        [],
    ),
    (
        "edited after posting: update",
        [E1, E2],
        [sub()],
        {"C1": posted(E2, stale=True)},
        1,
        [("C1", "g2", "update")],
    ),
    (
        "unfinished claim is offered again",
        [E2, E3],
        [sub()],
        {"C1": posted(E3, state="posting")},
        1,
        [("C1", "g3", "post")],
    ),
    (
        "pending is offered again",
        [E3],
        [sub()],
        {"C1": posted(E3, state="pending")},
        1,
        [("C1", "g3", "post")],
    ),
    (
        "paused row comes back once resumed",
        [E3],
        [sub()],
        {"C1": posted(E3, state="paused")},
        1,
        [("C1", "g3", "post")],
    ),
    ("failed stays failed", [E3], [sub()], {"C1": posted(E3, state="failed")}, 1, []),
    (
        "failed, then edited: try again",
        [E3],
        [sub()],
        {"C1": posted(E3, state="failed", stale=True)},
        1,
        [("C1", "g3", "post")],
    ),
    ("paused subscription gets nothing", [E3], [sub(paused_reason="is_archived")], {}, 1, []),
    (
        "other show's subscription ignored",
        [E3],
        [Subscription(team_id="T1", channel_id="C1", show="Rust")],
        {},
        1,
        [],
    ),
    (
        "keyword in summary, any case",
        [E_MPS],
        [sub(keywords=("mps",))],
        {},
        1,
        [("C1", "g4", "post")],
    ),
    (
        "keyword in transcript",
        [E_DIST],
        [sub(keywords=("nccl", "xla"))],
        {},
        1,
        [("C1", "g5", "post")],
    ),
    ("keyword absent", [E_MPS, E_DIST], [sub(keywords=("xla",))], {}, 1, []),
    (
        "filter on a later poll",
        [E3, E_MPS, E_DIST],
        [sub(keywords=("Metal",))],
        {"C1": posted(E3)},
        1,
        [("C1", "g4", "post")],
    ),
    (
        "channels are independent",
        [E1, E2, E3],
        [sub("C1"), sub("C2")],
        {"C1": posted(E2)},
        1,
        [("C1", "g3", "post"), ("C2", "g3", "post")],
    ),
    (
        "subscribed after publication of two new",
        [E1, E2, E3],
        [sub(created_at=datetime(2026, 10, 1, 20, 0, tzinfo=UTC))],
        {},
        1,
        [("C1", "g2", "post"), ("C1", "g3", "post")],
    ),
    (
        "updates go out whatever the filter",
        [E2],
        [sub(keywords=("nothing-matches",))],
        {"C1": posted(E2, stale=True)},
        1,
        [("C1", "g2", "update")],
    ),
    ("no episodes", [], [sub()], {}, 1, []),
]

MANY = [ep(day) for day in range(1, 16)]


@pytest.mark.parametrize(
    ("ledger", "catch_up", "expected"),
    [
        pytest.param({}, 3, ["g15"], id="first poll still only the newest"),
        pytest.param(posted(MANY[0]), 3, ["g13", "g14", "g15"], id="back after weeks: newest 3"),
        pytest.param(posted(MANY[0]), 20, [f"g{d}" for d in range(2, 16)], id="under the cap"),
        pytest.param(
            posted(MANY[0], MANY[12], MANY[13], MANY[14]), 3, [], id="the rest stay passed over"
        ),
        pytest.param(
            {**posted(MANY[0]), **posted(MANY[1], state="pending")},
            1,
            ["g2", "g15"],
            id="unfinished ones are not capped",
        ),
    ],
)
def test_catch_up_cap(ledger: dict[str, LedgerEntry], catch_up: int, expected: list[str]) -> None:
    result = decide(SHOW, MANY, [sub()], {("T1", "C1"): ledger}, catch_up=catch_up)
    assert [d.episode.guid for d in result] == expected


MANY_40 = [
    ep(1).model_copy(update={"guid": f"n{n:02d}", "published_at": T0 - timedelta(days=40 - n)})
    for n in range(40)
]


def newest_of_40(count: int) -> list[str]:
    return [f"n{n:02d}" for n in range(40 - count, 40)]


@pytest.mark.parametrize(
    ("ledger", "backfill", "expected"),
    [
        # A channel's first poll gets exactly ``backfill`` newest, whatever the catch-up cap.
        pytest.param({}, 1, newest_of_40(1), id="first poll, backfill 1"),
        pytest.param({}, 10, newest_of_40(10), id="first poll, backfill at the cap"),
        pytest.param({}, 15, newest_of_40(15), id="first poll, backfill 15"),
        pytest.param({}, 50, newest_of_40(40), id="first poll, backfill 50: all there are"),
        # Back after a long pause: the cap, raised to the backfill when that is larger.
        pytest.param(posted(MANY_40[0]), 1, newest_of_40(10), id="catch-up, backfill 1: 10"),
        pytest.param(posted(MANY_40[0]), 15, newest_of_40(15), id="catch-up, backfill 15: 15"),
        pytest.param(posted(MANY_40[0]), 0, newest_of_40(10), id="catch-up, backfill 0: 10"),
    ],
)
def test_per_poll_cap_is_at_least_the_backfill(
    ledger: dict[str, LedgerEntry], backfill: int, expected: list[str]
) -> None:
    result = decide(SHOW, MANY_40, [sub()], {("T1", "C1"): ledger}, backfill=backfill)
    assert [d.episode.guid for d in result] == expected


LONG_AGO = datetime(2026, 9, 1, tzinfo=UTC)
DAYS_6_TO_15 = [f"g{d}" for d in range(6, 16)]


@pytest.mark.parametrize(
    ("ledger", "backfill", "created_at", "expected"),
    [
        pytest.param({}, 15, None, [g.guid for g in MANY], id="backfill 15 above the cap: all 15"),
        pytest.param(posted(*MANY[5:]), 15, None, [], id="next run: days 1-5 stay passed over"),
        pytest.param(
            {**posted(*MANY[5:14]), **posted(MANY[14], state="pending")},
            15,
            None,
            ["g15"],
            id="next run: only the unfinished one again",
        ),
        pytest.param({}, 1, LONG_AGO, DAYS_6_TO_15, id="subscribed before all: newest 10"),
        pytest.param(
            posted(*MANY[5:]), 1, LONG_AGO, [], id="subscribed before all: the rest never"
        ),
        pytest.param(
            posted(MANY[0], *MANY[12:]),
            1,
            LONG_AGO,
            [],
            id="resumed after weeks: what the cap dropped never comes later",
        ),
        pytest.param(
            posted(MANY[9]), 15, LONG_AGO, ["g11", "g12", "g13", "g14", "g15"], id="only newer"
        ),
    ],
)
def test_passed_over_ones_are_never_posted_after_newer_ones(
    ledger: dict[str, LedgerEntry],
    backfill: int,
    created_at: datetime | None,
    expected: list[str],
) -> None:
    subscription = sub(created_at=created_at)
    result = decide(SHOW, MANY, [subscription], {("T1", "C1"): ledger}, backfill=backfill)
    assert [d.episode.guid for d in result] == expected


@pytest.mark.parametrize(
    ("episodes", "subs", "ledger", "backfill", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in DECIDE_CASES],
)
def test_decide(
    episodes: list[Episode],
    subs: list[Subscription],
    ledger: dict[str, dict[str, LedgerEntry]],
    backfill: int,
    expected: list[tuple[str, str, str]],
) -> None:
    by_channel = {("T1", channel): entries for channel, entries in ledger.items()}
    result = decide(SHOW, episodes, subs, by_channel, backfill=backfill)
    assert plan(result) == expected
    assert all(d.key == episode_key(SHOW, d.episode.guid) for d in result)


@pytest.mark.parametrize(
    ("keywords", "expected"),
    [
        ((), True),
        (("",), True),
        (("metal",), True),
        (("UPSAMPLE",), True),
        (("cuda",), False),
        (("cuda", "mps"), True),
        (("kernel",), True),  # the start of a word: plurals match
        (("ps",), False),  # never inside a word
        (("etal",), False),
        (("mps upsample",), True),
    ],
)
def test_matches(keywords: tuple[str, ...], expected: bool) -> None:
    assert matches(E_MPS, keywords) is expected


def test_episode_key_fits_the_ledger_column() -> None:
    long_guid = "https://example.test/" + "x" * 400
    key = episode_key(SHOW, long_guid)
    assert len(key) <= 300
    assert key != episode_key(SHOW, long_guid + "y")
    assert episode_key(SHOW, "g1") == "PyTorch:g1"


def test_key_guid_reads_back_what_episode_key_made() -> None:
    long_guid = "https://example.test/" + "x" * 400
    _, digest = key_guid(SHOW, episode_key(SHOW, long_guid))
    assert digest == hashlib.sha256(long_guid.encode()).hexdigest()
    assert key_guid(SHOW, episode_key(SHOW, "g1")) == ("g1", None)
    assert key_guid("Rust", episode_key(SHOW, "g1")) == (None, None)


@pytest.mark.parametrize(
    ("failures", "retry_after", "max_age", "expected_minutes"),
    [
        (0, None, None, 15),
        (1, None, None, 30),
        (2, None, None, 60),
        (3, None, None, 120),
        (10, None, None, 24 * 60),  # capped at a day
        (0, 3600.0, None, 60),  # Retry-After pushes later
        (3, 60.0, None, 120),  # never earlier than the backoff
        (0, None, 1800.0, 30),  # Cache-Control max-age
        (0, None, 10.0, 15),  # a short max-age does not poll more often
        (0, 10**9, None, 24 * 60),  # a silly header still capped
    ],
)
def test_next_poll_at(
    failures: int, retry_after: float | None, max_age: float | None, expected_minutes: int
) -> None:
    got = next_poll_at(
        T0, poll_minutes=15, failures=failures, retry_after=retry_after, max_age=max_age
    )
    assert got - T0 == timedelta(minutes=expected_minutes)


OK_BEFORE = FetchState(last_success_at=T0, failures=0)
FAILING = FetchState(last_success_at=T0, failures=FAILING_AFTER, last_error="HTTP 500")


@pytest.mark.parametrize(
    ("before", "after", "expected_kind"),
    [
        (OK_BEFORE, OK_BEFORE, None),
        (OK_BEFORE, FetchState(last_success_at=T0, failures=1, last_error="x"), None),
        (FetchState(last_success_at=T0, failures=1), FAILING, "failing"),
        (
            FetchState(last_success_at=T0, failures=2, failing_notified=True),
            FetchState(last_success_at=T0, failures=3, failing_notified=True),
            None,
        ),
        (
            FetchState(last_success_at=T0, failures=5, failing_notified=True),
            FetchState(last_success_at=T0 + timedelta(hours=1), failures=0),
            "recovered",
        ),
        (
            FetchState(last_success_at=T0, failures=1),
            FetchState(last_success_at=T0 + timedelta(hours=1), failures=0),
            None,
        ),
    ],
)
def test_feed_notice(before: FetchState, after: FetchState, expected_kind: str | None) -> None:
    notice = feed_notice(SHOW, before, after)
    assert (notice.kind if notice else None) == expected_kind
    if notice is not None:
        assert SHOW in notice.key and T0.isoformat() in notice.key


def test_failing_and_recovered_keys_differ_per_streak() -> None:
    first = feed_notice(SHOW, OK_BEFORE, FAILING)
    later = feed_notice(
        SHOW,
        FetchState(last_success_at=T0 + timedelta(days=2)),
        FetchState(last_success_at=T0 + timedelta(days=2), failures=FAILING_AFTER),
    )
    assert first is not None and later is not None
    assert first.key != later.key


def test_candidates_newest_plus_changed() -> None:
    got = candidate_episodes([E1, E2, E3], [E1], limit=2)
    assert sorted(e.guid for e in got) == ["g1", "g2", "g3"]
    assert sorted(e.guid for e in candidate_episodes([E1, E2, E3], [], limit=1)) == ["g3"]


# -- when the bot first saw an episode (``first_seen``) ---------------------------------------

POLL_1, POLL_2 = T0, T0 + timedelta(minutes=15)


def seen(at: datetime, *episodes: Episode) -> dict[str, datetime]:
    return {e.guid: at for e in episodes}


@pytest.mark.parametrize(
    ("candidates", "ledger", "first_seen", "expected"),
    [
        pytest.param(
            [E1, E2, E3],
            posted(E1, E3),
            {**seen(POLL_1, E1, E3), **seen(POLL_2, E2)},
            ["g2"],
            id="a late episode dated below the newest is still posted",
        ),
        pytest.param(
            [E1, E2, ep(9)],
            posted(ep(9)),
            {**seen(POLL_1, ep(9), E1), **seen(POLL_2, E2)},
            ["g2"],
            id="an item dated in the future mutes nothing after it",
        ),
        pytest.param(
            MANY,
            posted(*MANY[12:]),
            seen(POLL_1, *MANY),
            [],
            id="those the cap passed over in the same poll stay passed over",
        ),
        pytest.param(
            [E1, E2, E3],
            posted(E1, E3),
            {},
            [],
            id="without first_seen: by publication date, as before",
        ),
    ],
)
def test_new_to_the_channel_is_by_when_the_bot_first_saw_it(
    candidates: list[Episode],
    ledger: dict[str, LedgerEntry],
    first_seen: dict[str, datetime],
    expected: list[str],
) -> None:
    result = decide(SHOW, candidates, [sub()], {("T1", "C1"): ledger}, first_seen=first_seen)
    assert [d.episode.guid for d in result] == expected


def test_a_keyword_channel_gets_every_match_first_seen_after_it_subscribed() -> None:
    # The feed dates these two before the subscription (a pubDate set when recorded), but
    # the bot first saw them after it and after the show's first poll: both are new.
    archive_poll = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
    subscribed = datetime(2026, 10, 5, 9, 0, tzinfo=UTC)
    later_poll = datetime(2026, 10, 6, 9, 0, tzinfo=UTC)
    old = ep(1, headline="Inductor basics")  # the archive, also matching
    a = ep(3, headline="Inductor guards")
    b = ep(4, headline="Inductor fusion")
    other = ep(2, headline="Autograd")
    result = decide(
        SHOW,
        [old, other, a, b],
        [sub(keywords=("inductor",), created_at=subscribed)],
        {},
        first_seen={
            old.guid: archive_poll,
            other.guid: archive_poll,
            a.guid: later_poll,
            b.guid: later_poll,
        },
        archive_seen_at=archive_poll,
    )
    assert plan(result) == [("C1", "g3", "post"), ("C1", "g4", "post")]


def test_the_archive_read_after_a_config_subscription_is_not_new() -> None:
    # A config-file subscription is made at start-up, a moment before the show's first
    # poll reads its archive: only the backfill goes out.
    subscribed = datetime(2026, 10, 6, 8, 0, tzinfo=UTC)
    first_poll = subscribed + timedelta(seconds=1)
    result = decide(
        SHOW,
        [E1, E2, E3],
        [sub(created_at=subscribed)],
        {},
        first_seen={e.guid: first_poll for e in (E1, E2, E3)},
        archive_seen_at=first_poll,
    )
    assert plan(result) == [("C1", "g3", "post")]


@pytest.mark.parametrize(
    ("terms", "expected"),
    [
        (("inductor", "-rocm"), False),  # -rocm excludes: the transcript names ROCm
        (("inductor", "+mps"), True),
        (("+cuda",), False),
        (("flex attention",), True),  # a phrase, across any whitespace
        (("dynamo",), True),  # a PR title GitHub gave
        (("+", "inductor"), True),  # a stray sign stored long ago reads as words
    ],
)
def test_matches_reads_filter_terms_and_pr_titles(terms: tuple[str, ...], expected: bool) -> None:
    episode = ep(
        6, headline="Flex  Attention on MPS", summary="Inductor kernels.", transcript="ROCm next."
    ).model_copy(update={"pr_info": (PrInfo(number=1, title="[dynamo] guard fix"),)})
    assert matches(episode, terms) is expected
