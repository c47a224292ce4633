"""Store behaviour, run against every backend ``db_url`` offers (SQLite, PostgreSQL)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
import sqlalchemy as sa

from bot.jobs.plan import named_episodes
from digests.decide.deliveries import episode_key
from digests.models import Episode, PullRequestRef, guid_key
from digests.store import Store
from digests.store.schema import episode_prs, episodes
from digests.types import FetchState, Subscription
from tests.fixtures.store import (
    SAMPLE_NOW,
    count_episodes,
    pause_channel,
    resume_channel,
    show_names,
)

LATER = SAMPLE_NOW + timedelta(hours=5)


def by_guid(items: list[Episode]) -> dict[str, Episode]:
    return {episode.guid: episode for episode in items}


def make_episode(n: int, show: str = "PyTorch", **changes: Any) -> Episode:
    values: dict[str, Any] = {
        "guid": f"{show.lower()}-{n:05d}",
        "show": show,
        "title": f"{show}: Episode {n}",
        "headline": f"Episode {n}",
        "summary": f"Summary of episode {n}.",
        "published_at": datetime(2025, 1, 1, tzinfo=UTC) + timedelta(hours=n),
        "duration_seconds": 100 + n,
        "url": f"https://example.test/{show.lower()}/{n}",
        "pull_requests": (
            PullRequestRef(
                number=100000 + n, url=f"https://github.com/o/r/pull/{100000 + n}", context="c"
            ),
        ),
    }
    values.update(changes)
    return Episode(**values)


# -- upsert -----------------------------------------------------------------------------------


def test_upsert_reports_new_then_unchanged(store: Store, sample_episodes: list[Episode]) -> None:
    first = store.upsert_episodes(sample_episodes, SAMPLE_NOW)
    assert [r.status for r in first] == ["new"] * len(sample_episodes)
    assert [r.episode for r in first] == sample_episodes

    second = store.upsert_episodes(sample_episodes, LATER)
    assert [r.status for r in second] == ["unchanged"] * len(sample_episodes)
    assert count_episodes(store) == len(sample_episodes)


def test_upsert_round_trips_every_field(store: Store, sample_episodes: list[Episode]) -> None:
    store.upsert_episodes(sample_episodes, SAMPLE_NOW)
    for original in sample_episodes:
        stored = store.episode(original.show, original.guid)
        assert stored == original
        assert stored is not None
        assert stored.published_at.tzinfo is not None
        assert stored.published_at.utcoffset() == timedelta(0)


def test_changed_episode_updates_row_and_prs(store: Store, sample_episodes: list[Episode]) -> None:
    store.upsert_episodes(sample_episodes, SAMPLE_NOW)
    original = sample_episodes[3]
    edited = original.model_copy(
        update={
            "summary": "A corrected summary.",
            "pull_requests": (
                PullRequestRef(number=5, url="https://github.com/pytorch/pytorch/pull/5"),
                original.pull_requests[0],
            ),
        }
    )
    results = store.upsert_episodes([sample_episodes[0], edited], LATER)
    assert [r.status for r in results] == ["unchanged", "changed"]

    stored = store.episode(edited.show, edited.guid)
    assert stored == edited
    assert stored is not None
    assert [pr.number for pr in stored.pull_requests] == [5, 199720]
    assert count_episodes(store) == len(sample_episodes)
    with store.engine.connect() as conn:
        row = conn.execute(
            sa.select(episodes.c.first_seen_at, episodes.c.updated_at).where(
                episodes.c.guid == edited.guid
            )
        ).one()
        pr_rows = conn.execute(sa.select(sa.func.count()).select_from(episode_prs)).scalar()
    assert (row.first_seen_at.astimezone(UTC), row.updated_at.astimezone(UTC)) == (
        SAMPLE_NOW,
        LATER,
    )
    # 2 + 2 + 0 + 2 (was 4) + 1: the old PR rows of the edited episode are gone.
    assert pr_rows == 7


def test_one_row_per_show_and_guid(store: Store) -> None:
    a = make_episode(1)
    same_guid_other_show = make_episode(1, show="Rust").model_copy(update={"guid": a.guid})
    retitled = a.model_copy(update={"title": "PyTorch: Renamed", "headline": "Renamed"})
    results = store.upsert_episodes([a, same_guid_other_show, retitled], SAMPLE_NOW)
    # Within one batch the last copy of a guid wins and is reported once.
    assert [(r.episode.show, r.status) for r in results] == [("PyTorch", "new"), ("Rust", "new")]
    assert count_episodes(store) == 2
    stored = store.episode("PyTorch", a.guid)
    assert stored is not None and stored.headline == "Renamed"


def test_upsert_creates_unknown_shows(store: Store) -> None:
    store.upsert_episodes([make_episode(1, show="Brand New")], SAMPLE_NOW)
    assert show_names(store) == ["Brand New"]


def test_upsert_empty_and_naive_now(store: Store) -> None:
    assert store.upsert_episodes([], SAMPLE_NOW) == []
    with pytest.raises(ValueError, match="timezone-aware"):
        store.upsert_episodes([make_episode(1)], datetime(2026, 1, 1))


def test_unchanged_batch_costs_a_constant_number_of_statements(store: Store) -> None:
    batch = [make_episode(n) for n in range(1200)]
    store.upsert_episodes(batch, SAMPLE_NOW)
    statements: list[str] = []

    def record(*args: Any) -> None:
        statements.append(args[2])

    sa.event.listen(store.engine, "before_cursor_execute", record)
    try:
        results = store.upsert_episodes(batch, LATER)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", record)
    assert {r.status for r in results} == {"unchanged"}
    # show lookup + 3 chunks of 500 guids (+ BEGIN/COMMIT on SQLite); never one per episode.
    assert len(statements) <= 8, statements


def test_large_batch_of_new_episodes_is_batched(store: Store) -> None:
    batch = [make_episode(n) for n in range(1200)]
    statements: list[str] = []

    def record(*args: Any) -> None:
        statements.append(args[2])

    sa.event.listen(store.engine, "before_cursor_execute", record)
    try:
        results = store.upsert_episodes(batch, SAMPLE_NOW)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", record)
    assert len(results) == 1200 and {r.status for r in results} == {"new"}
    assert count_episodes(store) == 1200
    assert len(statements) < 60, len(statements)
    assert store.by_pr(100000 + 777)[0].episode.guid == "pytorch-00777"


# -- reading episodes -------------------------------------------------------------------------


def test_episode_lookups(filled_store: Store, sample_episodes: list[Episode]) -> None:
    assert filled_store.episode("PyTorch", "nope") is None
    assert filled_store.episode("Rust", "pytorch-2026-10-01") is None
    found = filled_store.episode_by_url("https://example.test/pytorch/2026-10-02")
    assert found == sample_episodes[1]
    assert filled_store.episode_by_url("https://example.test/missing") is None


def test_episode_by_guid_key_finds_long_guids_within_their_show(store: Store) -> None:
    # Buttons carry the hash when the guid is too long for a button value (2,000 chars).
    long_guid = "tag:example.test,2026:" + "x" * 3000
    stored = make_episode(1, guid=long_guid)
    other_show = make_episode(1, show="Rust", guid=long_guid)
    store.upsert_episodes([stored, other_show], SAMPLE_NOW)
    assert store.episode_by_guid_key("PyTorch", guid_key(long_guid)) == stored
    assert store.episode_by_guid_key("Rust", guid_key(long_guid)) == other_show
    assert store.episode_by_guid_key("Go", guid_key(long_guid)) is None
    assert store.episode_by_guid_key("PyTorch", guid_key("pytorch-00001")) is None
    assert store.episode_by_guid_key("PyTorch", long_guid) is None


def test_ledger_keys_name_their_episodes_long_guids_too(store: Store) -> None:
    long_guid = "tag:example.test,2026:" + "x" * 3000
    stored = [make_episode(1, guid=long_guid), make_episode(2)]
    store.upsert_episodes(stored, SAMPLE_NOW)
    keys = [episode_key("PyTorch", e.guid) for e in stored] + ["PyTorch:missing", "Rust:g"]
    found = named_episodes(store, "PyTorch", keys)
    assert sorted(e.guid for e in found) == sorted(e.guid for e in stored)


def test_recent_newest_first_with_filters(filled_store: Store) -> None:
    assert [e.guid for e in filled_store.recent(3)] == [
        "pytorch-2026-10-05",
        "rust-2026-10-04",
        "pytorch-2026-10-03",
    ]
    assert [e.guid for e in filled_store.recent(10, shows=["Rust"])] == ["rust-2026-10-04"]
    assert filled_store.recent(10, shows=[]) == []
    assert filled_store.recent(0) == []


def test_recent_returns_prs_in_position_order(filled_store: Store) -> None:
    newest = filled_store.recent(1)[0]
    assert [pr.number for pr in newest.pull_requests] == [199720, 199721, 199726, 199687]
    assert newest.nearby == ("Compiler Parity Push",)


def test_between_is_half_open_and_oldest_first(filled_store: Store) -> None:
    start = datetime(2026, 10, 2, 13, 0, tzinfo=UTC)
    end = datetime(2026, 10, 5, 13, 0, tzinfo=UTC)
    assert [e.guid for e in filled_store.between(start, end)] == [
        "pytorch-2026-10-02",
        "pytorch-2026-10-03",
        "rust-2026-10-04",
    ]
    assert [e.guid for e in filled_store.between(start, end, shows=["PyTorch"])] == [
        "pytorch-2026-10-02",
        "pytorch-2026-10-03",
    ]


def test_reads_within_reading_share_one_checkout_and_see_the_same(filled_store: Store) -> None:
    start = datetime(2026, 10, 2, 13, 0, tzinfo=UTC)
    end = datetime(2026, 10, 5, 13, 0, tzinfo=UTC)
    alone = (filled_store.between(start, end), filled_store.count_between(start, end))
    checkouts: list[object] = []
    sa.event.listen(filled_store.engine, "checkout", lambda *a: checkouts.append(a))
    with filled_store.reading("reading twice"):
        together = (filled_store.between(start, end), filled_store.count_between(start, end))
        with filled_store.reading("nested"):
            filled_store.subscriptions(team_id="T1")
    assert together == alone
    assert len(checkouts) == 1
    filled_store.between(start, end)  # after it, a read checks out its own again
    assert len(checkouts) == 2


def test_between_accepts_other_timezones(filled_store: Store) -> None:
    plus_two = timezone(timedelta(hours=2))
    # 15:00 at +02:00 is 13:00 UTC: the 10-05 episode is exactly at the start.
    start = datetime(2026, 10, 5, 15, 0, tzinfo=plus_two)
    found = filled_store.between(start, start + timedelta(days=1))
    assert [e.guid for e in found] == ["pytorch-2026-10-05"]
    assert found[0].published_at.tzinfo == UTC


@pytest.mark.parametrize(
    ("when", "shows", "expected"),
    [
        (datetime(2026, 10, 3, 14, 0, tzinfo=UTC), None, "pytorch-2026-10-03"),
        (datetime(2026, 10, 4, 20, 0, tzinfo=UTC), ["PyTorch"], "pytorch-2026-10-05"),
        (datetime(2026, 10, 4, 1, 0, tzinfo=UTC), ["PyTorch"], "pytorch-2026-10-03"),
        # Exactly between 10-03 and 10-05 13:00: the earlier one wins the tie.
        (datetime(2026, 10, 4, 13, 0, tzinfo=UTC), ["PyTorch"], "pytorch-2026-10-03"),
        (datetime(2020, 1, 1, tzinfo=UTC), None, "pytorch-2026-10-01"),
        (datetime(2030, 1, 1, tzinfo=UTC), None, "pytorch-2026-10-05"),
    ],
)
def test_nearest(
    filled_store: Store, when: datetime, shows: list[str] | None, expected: str
) -> None:
    found = filled_store.nearest(when, shows=shows)
    assert found is not None and found.guid == expected


def test_nearest_in_empty_store(store: Store) -> None:
    assert store.nearest(SAMPLE_NOW) is None


def test_neighbours_stay_within_the_show(
    filled_store: Store, sample_episodes: list[Episode]
) -> None:
    previous, following = filled_store.neighbours(sample_episodes[2])  # PyTorch 10-03
    assert previous is not None and previous.guid == "pytorch-2026-10-02"
    assert following is not None and following.guid == "pytorch-2026-10-05"
    assert following.pull_requests  # hydrated like any other episode

    first_prev, first_next = filled_store.neighbours(sample_episodes[0])
    assert first_prev is None and first_next is not None
    last_prev, last_next = filled_store.neighbours(sample_episodes[3])
    assert last_next is None and last_prev is not None
    assert filled_store.neighbours(sample_episodes[4]) == (None, None)  # only Rust episode


def test_neighbours_chain_through_equal_timestamps(store: Store) -> None:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    a, b, c = (make_episode(n, published_at=when) for n in (1, 2, 3))
    store.upsert_episodes([a, b, c], SAMPLE_NOW)
    assert [e and e.guid for e in store.neighbours(b)] == [a.guid, c.guid]


def test_neighbours_of_an_episode_not_stored(filled_store: Store) -> None:
    stranger = make_episode(1, published_at=datetime(2026, 10, 4, tzinfo=UTC))
    previous, following = filled_store.neighbours(stranger)
    assert previous is not None and previous.guid == "pytorch-2026-10-03"
    assert following is not None and following.guid == "pytorch-2026-10-05"


@pytest.mark.parametrize(
    ("title", "shows", "expected"),
    [
        ("Compiler Parity Push", None, "pytorch-2026-10-01"),
        ("compiler PARITY push", None, "pytorch-2026-10-01"),
        ("  Compiler   Parity Push ", None, "pytorch-2026-10-01"),
        ("PyTorch: A Quiet Weekend", None, "pytorch-2026-10-03"),
        ("Borrow Checker Diaries", ["PyTorch"], None),
        ("Borrow Checker Diaries", ["Rust"], "rust-2026-10-04"),
        ("Compiler Parity", None, None),
        ("%", None, None),
        ("", None, None),
    ],
)
def test_by_title(
    filled_store: Store, title: str, shows: list[str] | None, expected: str | None
) -> None:
    found = filled_store.by_title(title, shows=shows)
    assert (found.guid if found else None) == expected


def test_by_pr_newest_first_with_context(filled_store: Store) -> None:
    mentions = filled_store.by_pr(199720)
    assert [m.episode.guid for m in mentions] == ["pytorch-2026-10-05", "pytorch-2026-10-02"]
    assert mentions[1].context == "An early draft, PR 199720, sketched the all-gather layout."
    assert filled_store.by_pr(199720, shows=["Rust"]) == []
    assert filled_store.by_pr(1) == []
    (rust,) = filled_store.by_pr(131000)
    assert rust.episode.show == "Rust"


# -- search -----------------------------------------------------------------------------------


def test_search_finds_words_in_any_field(filled_store: Store) -> None:
    assert [e.guid for e in filled_store.search("watchdog")] == ["pytorch-2026-10-02"]
    assert [e.guid for e in filled_store.search("Polonius")] == ["rust-2026-10-04"]
    assert [e.guid for e in filled_store.search("documentation")] == ["pytorch-2026-10-03"]
    assert filled_store.search("xylophone") == []


def test_search_stems_words(filled_store: Store) -> None:
    # "hanging" in the summary, "hangs" asked: both backends stem English.
    assert [e.guid for e in filled_store.search("hangs")] == ["pytorch-2026-10-02"]


def test_search_ranks_headline_matches_first(store: Store) -> None:
    transcript_only = make_episode(
        1, headline="Other news", transcript="Later we touch on the scheduler briefly."
    )
    headline = make_episode(2, headline="Scheduler Rewrite", transcript="Nothing else.")
    newest_unrelated = make_episode(3, headline="Unrelated", transcript="Nothing.")
    store.upsert_episodes([transcript_only, headline, newest_unrelated], SAMPLE_NOW)
    assert [e.guid for e in store.search("scheduler")] == [headline.guid, transcript_only.guid]


def test_search_prefers_all_words_then_falls_back_to_any(filled_store: Store) -> None:
    assert [e.guid for e in filled_store.search("compiler sparse")] == ["pytorch-2026-10-01"]
    found = [e.guid for e in filled_store.search("watchdog polonius")]
    assert sorted(found) == ["pytorch-2026-10-02", "rust-2026-10-04"]


def test_search_filters_shows_and_limits(store: Store) -> None:
    store.upsert_episodes(
        [make_episode(n, transcript="tensor parallel everywhere") for n in range(15)]
        + [make_episode(1, show="Rust", transcript="tensor talk")],
        SAMPLE_NOW,
    )
    assert len(store.search("tensor")) == 10
    assert len(store.search("tensor", limit=3)) == 3
    assert [e.show for e in store.search("tensor", shows=["Rust"])] == ["Rust"]
    assert store.search("tensor", limit=0) == []


def test_search_follows_changed_episodes(
    filled_store: Store, sample_episodes: list[Episode]
) -> None:
    edited = sample_episodes[1].model_copy(
        update={"transcript": "Rewritten around a sentinel process.", "summary": "New."}
    )
    assert filled_store.upsert_episodes([edited], LATER)[0].status == "changed"
    assert filled_store.search("watchdog") == []
    assert [e.guid for e in filled_store.search("sentinel")] == [edited.guid]


HOSTILE_QUERIES = [
    '"foo OR',
    "NEAR(",
    "NEAR(watchdog polonius, 2)",
    "*",
    "watch*",
    "headline:watchdog",
    "-watchdog",
    "^watchdog",
    "watchdog AND",
    "OR OR OR",
    "'; DROP TABLE episodes; --",
    "a & b | !c <-> d",
    "(((",
    '"""',
    "\x00watchdog",
    "ünïcödé 日本語",
    "x" * 5000,
    " ".join(["watchdog"] * 500),
    "",
    "   ",
]


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_search_treats_hostile_input_as_words(filled_store: Store, query: str) -> None:
    results = filled_store.search(query)
    assert isinstance(results, list)
    assert all(isinstance(e, Episode) for e in results)
    assert count_episodes(filled_store) == 5  # nothing was dropped along the way


@pytest.mark.parametrize(
    "query", ['"watchdog', "watchdog)", "headline:watchdog", "-watchdog", "watchdog*"]
)
def test_search_operators_are_just_punctuation(filled_store: Store, query: str) -> None:
    assert [e.guid for e in filled_store.search(query)] == ["pytorch-2026-10-02"]


# -- shows and fetch state --------------------------------------------------------------------


def test_fetch_state_round_trip(store: Store) -> None:
    store.ensure_show("PyTorch", "https://example.test/feed.xml", "pytorch/pytorch")
    assert store.fetch_state("PyTorch") == FetchState()
    plus_five = timezone(timedelta(hours=5))
    state = FetchState(
        etag='W/"abc"',
        last_modified="Mon, 05 Oct 2026 13:00:40 GMT",
        last_polled_at=datetime(2026, 10, 5, 18, 0, 1, 250000, tzinfo=plus_five),
        last_success_at=datetime(2026, 10, 5, 12, 0, tzinfo=UTC),
        last_error="cannot fetch https://example.test/feed.xml: timed out",
        failures=3,
        next_poll_at=datetime(2026, 10, 5, 14, 0, tzinfo=UTC),
        failing_notified=True,
    )
    store.save_fetch_state("PyTorch", state)
    loaded = store.fetch_state("PyTorch")
    assert loaded == state  # aware datetimes compare by instant
    assert loaded.last_polled_at is not None
    assert loaded.last_polled_at.tzinfo == UTC
    assert loaded.last_polled_at == datetime(2026, 10, 5, 13, 0, 1, 250000, tzinfo=UTC)

    store.save_fetch_state("PyTorch", FetchState(etag="v2"))
    assert store.fetch_state("PyTorch") == FetchState(etag="v2")


def test_fetch_state_of_unknown_show(store: Store) -> None:
    assert store.fetch_state("Nobody") == FetchState()
    store.save_fetch_state("Nobody", FetchState(failures=1))
    assert store.fetch_state("Nobody").failures == 1
    assert show_names(store) == ["Nobody"]


def test_poll_states_read_every_show_at_once(store: Store) -> None:
    for name in ("A", "B"):
        store.ensure_show(name, f"https://example.test/{name}.xml", "pytorch/pytorch")
    store.save_fetch_state("A", FetchState(etag="a", failures=2))
    states = store.poll_states(["B", "A", "Nobody", "A"])
    assert set(states) == {"A", "B"}  # a show with no row is not there: it has the defaults
    assert states == {"A": store.poll_state("A"), "B": store.poll_state("B")}
    assert states["A"][0] == FetchState(etag="a", failures=2)


def test_due_polls_are_the_shows_due_by_the_horizon_and_those_never_stored(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = datetime(2026, 10, 5, 18, 0, tzinfo=UTC)
    for name, due in (("Soon", now + timedelta(seconds=30)), ("Later", now + timedelta(hours=1))):
        store.ensure_show(name, f"https://example.test/{name}.xml", "pytorch/pytorch")
        store.save_fetch_state(name, FetchState(next_poll_at=due))
    store.ensure_show("Never", "https://example.test/n.xml", "pytorch/pytorch")
    monkeypatch.setattr("digests.store.shows.chunks", lambda items: [items[:2], items[2:]])
    names = ["Soon", "Later", "Never", "Unknown"]
    assert store.due_polls(names, now + timedelta(minutes=1)) == {
        "Soon": now + timedelta(seconds=30), "Never": None, "Unknown": None,
    }  # fmt: skip
    later = now + timedelta(hours=1)
    assert store.due_polls(["Later"], now + timedelta(hours=2)) == {"Later": later}
    assert store.due_polls([], now) == {}


def test_save_polled_writes_each_state_unless_another_poll_did_meanwhile(store: Store) -> None:
    polled = datetime(2026, 10, 5, 18, 0, 1, 250000, tzinfo=timezone(timedelta(hours=5)))
    for name in ("A", "B", "C"):
        store.ensure_show(name, f"https://example.test/{name}.xml", "pytorch/pytorch")
        store.save_fetch_state(name, FetchState(etag=name, last_polled_at=polled))
    read = {name: store.poll_states(["A", "B", "C"])[name][0] for name in ("A", "B", "C")}
    later = polled + timedelta(minutes=15)
    # Another poll of B wrote its state after this cycle read it: its state stays.
    other = FetchState(etag="B2", last_polled_at=later, failing_notified=True)
    store.save_fetch_state("B", other)
    new = {n: replace(read[n], last_polled_at=later, failures=0) for n in read}
    written = store.save_polled([(n, read[n], new[n]) for n in ("A", "B", "C")])
    assert written == 2
    assert store.fetch_state("A") == new["A"] and store.fetch_state("C") == new["C"]
    assert store.fetch_state("B") == other
    never = FetchState()  # a show never polled: NULL matches NULL
    store.ensure_show("D", "https://example.test/D.xml", "pytorch/pytorch")
    assert store.save_polled([("D", never, FetchState(etag="d", last_polled_at=later))]) == 1
    assert store.fetch_state("D").etag == "d"
    assert store.save_polled([]) == 0


def test_ensure_show_is_idempotent_and_follows_config(store: Store) -> None:
    store.ensure_show("PyTorch", "https://a.test/feed.xml", "pytorch/pytorch")
    store.save_fetch_state("PyTorch", FetchState(etag="keep"))
    store.ensure_show("PyTorch", "https://b.test/feed.xml", "pytorch/pytorch")
    assert show_names(store) == ["PyTorch"]
    assert store.fetch_state("PyTorch").etag == "keep"
    with store.engine.connect() as conn:
        feed = conn.execute(sa.text("SELECT feed FROM shows WHERE name = 'PyTorch'")).scalar()
    assert feed == "https://b.test/feed.xml"


# -- subscriptions ----------------------------------------------------------------------------


def test_subscribe_creates_and_replaces(store: Store) -> None:
    created = store.subscribe("T1", "C1", "PyTorch", keywords=["FSDP", " fsdp ", "", "MPS"])
    assert created == Subscription("T1", "C1", "PyTorch", keywords=("FSDP", "MPS"))
    assert created.created_at is not None and created.created_at.tzinfo == UTC

    replaced = store.subscribe("T1", "C1", "PyTorch", keywords=(), recap=False, source="config")
    assert replaced == Subscription("T1", "C1", "PyTorch", recap=False, source="config")
    assert store.subscriptions() == [replaced]


def test_subscribe_unpauses(store: Store) -> None:
    store.subscribe("T1", "C1", "PyTorch")
    assert pause_channel(store, "T1", "C1", "channel_not_found", SAMPLE_NOW) == 1
    again = store.subscribe("T1", "C1", "PyTorch")
    assert not again.paused and again.paused_at is None


def test_subscribe_rejects_unknown_source(store: Store) -> None:
    with pytest.raises(ValueError, match="source"):
        store.subscribe("T1", "C1", "PyTorch", source="api")


def test_unsubscribe_counts(store: Store) -> None:
    for show in ("PyTorch", "Rust", "Go"):
        store.subscribe("T1", "C1", show)
    store.subscribe("T1", "C2", "PyTorch")
    assert store.unsubscribe("T1", "C1", "Rust") == 1
    assert store.unsubscribe("T1", "C1", "Rust") == 0
    assert store.unsubscribe("T1", "C1") == 2
    assert [(s.channel_id, s.show) for s in store.subscriptions()] == [("C2", "PyTorch")]


def test_subscription_filters(store: Store) -> None:
    store.subscribe("T1", "C1", "PyTorch")
    store.subscribe("T1", "C1", "Rust")
    store.subscribe("T1", "C2", "PyTorch")
    store.subscribe("T2", "C9", "PyTorch")
    pause_channel(store, "T1", "C2", "is_archived", SAMPLE_NOW)

    def keys(subs: list[Subscription]) -> list[tuple[str, str, str]]:
        return [(s.team_id, s.channel_id, s.show) for s in subs]

    assert keys(store.subscriptions(team_id="T2")) == [("T2", "C9", "PyTorch")]
    assert keys(store.subscriptions(channel_id="C1")) == [
        ("T1", "C1", "PyTorch"),
        ("T1", "C1", "Rust"),
    ]
    assert keys(store.subscriptions(show="PyTorch", include_paused=False)) == [
        ("T1", "C1", "PyTorch"),
        ("T2", "C9", "PyTorch"),
    ]
    assert len(store.subscriptions(show="PyTorch")) == 3


def test_pause_and_resume_channel(store: Store) -> None:
    store.subscribe("T1", "C1", "PyTorch")
    store.subscribe("T1", "C1", "Rust")
    store.subscribe("T1", "C2", "PyTorch")
    paused_at = datetime(2026, 10, 5, 9, 0, tzinfo=timezone(timedelta(hours=-4)))

    assert pause_channel(store, "T1", "C1", "not_in_channel", paused_at) == 2
    assert pause_channel(store, "T1", "C1", "again", SAMPLE_NOW) == 0  # first reason kept
    paused = store.subscriptions(channel_id="C1")
    assert {(s.paused_reason, s.paused_at) for s in paused} == {
        ("not_in_channel", datetime(2026, 10, 5, 13, 0, tzinfo=UTC))
    }
    assert all(s.paused for s in paused)
    assert not store.subscriptions(channel_id="C2")[0].paused

    assert resume_channel(store, "T1", "C1") == 2
    assert resume_channel(store, "T1", "C1") == 0
    assert [s.paused for s in store.subscriptions()] == [False, False, False]


@pytest.mark.parametrize(
    "url",
    [
        "https://example.test/pytorch/2026-10-02",
        "https://example.test/pytorch/2026-10-02/",
        "http://example.test/pytorch/2026-10-02",
        "https://example.test/pytorch/2026-10-02#t=30",
        "  https://example.test/pytorch/2026-10-02  ",
        "https://example.test/pytorch/2026-10-02?utm_source=share",
        "https://example.test/pytorch/2026-10-02/?utm_source=x&b=2#t=30",
        "http://example.test/pytorch/2026-10-02?utm_source=x",
    ],
)
def test_episode_by_url_accepts_pasted_spellings(filled_store: Store, url: str) -> None:
    found = filled_store.episode_by_url(url)
    assert found is not None and found.guid == "pytorch-2026-10-02"


def test_episode_by_url_prefers_the_exact_url(store: Store) -> None:
    slash = make_episode(1, url="https://example.test/ep/")
    bare = make_episode(2, url="https://example.test/ep")  # newer, but not what was asked
    store.upsert_episodes([slash, bare], SAMPLE_NOW)
    found = store.episode_by_url("https://example.test/ep/")
    assert found is not None and found.guid == slash.guid
    assert store.episode_by_url("") is None
    assert store.episode_by_url("https://example.test/e") is None


def test_episode_by_url_keeps_a_query_the_feed_has(store: Store) -> None:
    """A feed whose links differ only by their query: the exact one wins, and the query is
    dropped only when nothing else matches."""
    one = make_episode(1, url="https://example.test/play?id=1")
    two = make_episode(2, url="https://example.test/play?id=2")
    page = make_episode(3, url="https://example.test/page")
    store.upsert_episodes([one, two, page], SAMPLE_NOW)
    found = store.episode_by_url("https://example.test/play?id=1")
    assert found is not None and found.guid == one.guid
    tracked = store.episode_by_url("https://example.test/page?utm_source=share#x")
    assert tracked is not None and tracked.guid == page.guid
    assert store.episode_by_url("https://example.test/play?id=3") is None
    assert store.episode_by_url("?utm_source=x") is None


def test_nul_characters_from_a_hostile_feed_are_dropped(store: Store) -> None:
    hostile = make_episode(
        1,
        guid="g\x001",
        title="PyTorch: Null\x00 Island",
        headline="Null\x00 Island",
        transcript="zero\x00byte",
        nearby=("Other\x00",),
        url="https://example.test/\x00nul",
        pull_requests=(PullRequestRef(number=7, url="https://x.test/7", context="PR\x00 7"),),
    )
    assert store.upsert_episodes([hostile], SAMPLE_NOW)[0].status == "new"
    assert store.upsert_episodes([hostile], LATER)[0].status == "unchanged"
    stored = store.episode("PyTorch", "g\x001")
    assert stored is not None
    assert (stored.guid, stored.headline, stored.transcript, stored.nearby) == (
        "g1",
        "Null Island",
        "zerobyte",
        ("Other",),
    )
    assert stored.pull_requests[0].context == "PR 7"
    assert store.by_title("Null\x00 Island") == stored
    assert store.episode_by_url("https://example.test/\x00nul") == stored
    assert store.search("zerobyte\x00") == [stored]
    assert store.subscribe("T1", "C1", "PyTorch", keywords=["a\x00b"]).keywords == ("ab",)
