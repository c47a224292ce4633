"""Every public store method turns a database failure into one line: the facade, the ledger,
PR details and transcripts.

The method lists are read off the classes, so a new public method that nobody listed here
fails ``test_every_public_method_is_covered`` until it has a call (and so a translation).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa

from digests.errors import StoreError
from digests.models import Episode
from digests.store import Store
from digests.store.ledger import Ledger, LedgerRow, NewRow
from digests.store.pr_details import PrDetailsStore
from digests.store.transcripts import TranscriptStore
from digests.types import (
    EpisodeWrite,
    FetchState,
    LedgerState,
    PrDetails,
    StoredTranscript,
    UpsertIntents,
)
from tests.fixtures.store import POSTGRES_ENV, postgres_schema

NOW = datetime(2026, 10, 6, 8, 0, tzinfo=UTC)
EPISODE = Episode(
    guid="g1", show="PyTorch", title="PyTorch: One", headline="One", published_at=NOW
)
ROW = LedgerRow(
    id=1,
    team_id="T1",
    channel_id="C1",
    kind="episode",
    key="PyTorch:g1",
    state=LedgerState.PENDING,
    ts=None,
    thread_ts=None,
    content_hash="h",
    attempts=0,
    error=None,
    owner=None,
    claimed_at=None,
    updated_at=NOW,
)
SQL_WORDS = ("SELECT", "INSERT", "UPDATE", "DELETE", "BEGIN", "[SQL", "[parameters")

StoreCall = Callable[[Store], object]


def _read_within_reading(store: Store) -> object:
    with store.reading("reading together"):
        return store.added_shows()


STORE_CALLS: dict[str, StoreCall] = {
    "migrate": lambda s: s.migrate(),
    "reading": _read_within_reading,
    "ensure_show": lambda s: s.ensure_show("PyTorch", "https://a.test/feed", "o/r"),
    "fetch_state": lambda s: s.fetch_state("PyTorch"),
    "added_shows": lambda s: s.added_shows(),
    "added_show": lambda s: s.added_show("PyTorch"),
    "add_show": lambda s: s.add_show(
        "T1", "JAX", "https://a.test/jax", "o/r", added_by="U1", now=NOW, limit=5
    ),
    "remove_added_show": lambda s: s.remove_added_show("T1", "JAX"),
    "save_fetch_state": lambda s: s.save_fetch_state("PyTorch", FetchState(failures=1)),
    "poll_state": lambda s: s.poll_state("PyTorch"),
    "poll_states": lambda s: s.poll_states(["PyTorch"]),
    "due_polls": lambda s: s.due_polls(["PyTorch"], NOW),
    "save_polled": lambda s: s.save_polled([("PyTorch", FetchState(), FetchState(failures=1))]),
    "mark_quiet": lambda s: s.mark_quiet("PyTorch", "key"),
    "state_for_update": lambda s: s.state_for_update([EPISODE]),
    "item_hashes": lambda s: s.item_hashes("PyTorch"),
    "apply_intents": lambda s: s.apply_intents(
        UpsertIntents(inserts=(EpisodeWrite(EPISODE, EPISODE.content_hash()),)), NOW
    ),
    "upsert_episodes": lambda s: s.upsert_episodes([EPISODE], NOW),
    "episode": lambda s: s.episode("PyTorch", "g1"),
    "episode_by_guid_key": lambda s: s.episode_by_guid_key("PyTorch", "0" * 64),
    "episode_by_url": lambda s: s.episode_by_url("https://a.test/x"),
    "first_seen": lambda s: s.first_seen("PyTorch", ["g1"]),
    "archive_seen_at": lambda s: s.archive_seen_at("PyTorch"),
    "first_request": lambda s: s.first_request("event:Ev1", NOW),
    "answers_version": lambda s: s.answers_version(),
    "keep_answer": lambda s: s.keep_answer("t1", {"text": "x", "blocks": []}, NOW),
    "shared_answer": lambda s: s.shared_answer("t1"),
    "recent": lambda s: s.recent(5),
    "between": lambda s: s.between(NOW, NOW),
    "count_between": lambda s: s.count_between(NOW, NOW),
    "nearest": lambda s: s.nearest(NOW),
    "neighbours": lambda s: s.neighbours(EPISODE),
    "by_title": lambda s: s.by_title("One"),
    "by_title_words": lambda s: s.by_title_words(["one"]),
    "by_pr": lambda s: s.by_pr(1),
    "search": lambda s: s.search("compiler"),
    "subscribe": lambda s: s.subscribe("T1", "C1", "PyTorch"),
    "unsubscribe": lambda s: s.unsubscribe("T1", "C1"),
    "rename_subscription": lambda s: s.rename_subscription("T1", "C1", "pytorch", "PyTorch"),
    "subscriptions": lambda s: s.subscriptions(),
    "subscribed_teams": lambda s: s.subscribed_teams("PyTorch"),
    "pause_subscriptions": lambda s: s.pause_subscriptions("T1", "C1", "is_archived", NOW),
    "set_daily_time": lambda s: s.set_daily_time("T1", "C1", "17:00"),
    "hold": lambda s: s.hold("T1", "C1", "PyTorch", NOW),
    "release": lambda s: s.release("T1", "C1", None, NOW),
    "arrived_between": lambda s: s.arrived_between("PyTorch", NOW, NOW, 10),
    "forget_team": lambda s: s.forget_team("T1"),
    "resume_team": lambda s: s.resume_team("T1", "not_installed"),
    "state_value": lambda s: s.state_value("config_channels"),
    "set_state_value": lambda s: s.set_state_value("config_channels", "h"),
}
# Not database work: building and closing the store, and the health check, whose answer
# to a failing database is False (asserted below).
STORE_WITHOUT_ERRORS = {"open", "close", "engine", "ping"}

LedgerCall = Callable[[Ledger, sa.Connection], object]
LEDGER_CALLS: dict[str, LedgerCall] = {
    "run": lambda ledger, _: ledger.run(lambda conn: conn.execute(sa.text("SELECT 1"))),
    "entries": lambda ledger, _: ledger.entries("episode", ["PyTorch:g1"]),
    "rows": lambda ledger, conn: ledger.rows(conn, [ROW.ident]),
    "all_rows": lambda ledger, _: ledger.all_rows(),
    "ensure": lambda ledger, conn: ledger.ensure(
        conn, [NewRow("T1", "C1", "episode", "PyTorch:g1", show="PyTorch")], NOW, "me"
    ),
    "claim": lambda ledger, conn: ledger.claim(conn, ROW, "me", NOW),
    "mark": lambda ledger, conn: ledger.mark(conn, 1, "me", NOW, state=LedgerState.POSTED),
    "owner_alive": lambda ledger, _: ledger.owner_alive("job:1"),
    "alive": lambda ledger, _: ledger.alive(["job:1", "elsewhere:1:x"]),
    "adopt": lambda ledger, conn: ledger.adopt(conn, [("T1", "C1", "episode", "k")], "job:2", NOW),
    "orphans": lambda ledger, _: ledger.orphans("me", lambda _ident: False),
    "unfinished_shows": lambda ledger, _: ledger.unfinished_shows(),
    "unfinished": lambda ledger, _: ledger.unfinished("daily", "catch-up:"),
}
LEDGER_WITHOUT_ERRORS = {"for_store", "is_postgres", "errors"}
# On SQLite these are answered without the database (one machine: an owner is alive while
# its process is; there is no job queue).
LEDGER_SQLITE_ONLY_LOCAL = {"owner_alive", "alive"}


PrDetailsCall = Callable[[PrDetailsStore], object]
PR_DETAILS_CALLS: dict[str, PrDetailsCall] = {
    "get": lambda prs: prs.get([("pytorch/pytorch", 1)]),
    "save": lambda prs: prs.save([PrDetails("pytorch/pytorch", 1, title="One")]),
}


TranscriptCall = Callable[[TranscriptStore], object]
TRANSCRIPT_CALLS: dict[str, TranscriptCall] = {
    "get": lambda ts: ts.get("PyTorch", ["0" * 64]),
    "save": lambda ts: ts.save(
        [StoredTranscript("PyTorch", "0" * 64, "https://a.test/t.vtt", "ok", NOW)]
    ),
}


def public(cls: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(cls) if not name.startswith("_")}


def test_every_public_method_is_covered() -> None:
    assert public(Store) == set(STORE_CALLS) | STORE_WITHOUT_ERRORS
    assert public(Ledger) == set(LEDGER_CALLS) | LEDGER_WITHOUT_ERRORS
    assert public(PrDetailsStore) == set(PR_DETAILS_CALLS)
    assert public(TranscriptStore) == set(TRANSCRIPT_CALLS)


FAILURES = ["connections refused", "statements fail", "statements refused"]


def _break(engine: sa.Engine, failure: str) -> None:
    """Make ``engine`` fail the way ``failure`` says, from now on, with driver errors."""
    dbapi: Any = engine.dialect.loaded_dbapi
    refused = failure == "statements refused"
    error_class = dbapi.ProgrammingError if refused else dbapi.OperationalError
    # Drivers put the statement on the lines after the reason; none of it may leak.
    message = "the disk went away\nLINE 1: SELECT * FROM episodes WHERE guid = 'secret'"

    def fail(*_args: object) -> None:
        raise error_class(message)

    for name in ("do_execute", "do_executemany", "do_execute_no_params"):
        sa.event.listen(engine, name, fail)
    if failure == "connections refused":
        engine.dispose()
        sa.event.listen(engine, "do_connect", fail)


@pytest.fixture(
    scope="module",
    params=[
        "sqlite",
        pytest.param(
            "postgresql",
            marks=pytest.mark.skipif(
                not os.environ.get(POSTGRES_ENV), reason=f"{POSTGRES_ENV} is not set"
            ),
        ),
    ],
)
def migrated_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """One migrated database per backend for the whole module: each test breaks only the
    engine of its own store, so the database itself stays usable."""
    with ExitStack() as stack:
        if request.param == "sqlite":
            url = f"sqlite:///{tmp_path_factory.mktemp('failing') / 'db.sqlite3'}"
        else:
            url = stack.enter_context(postgres_schema(os.environ[POSTGRES_ENV]))
        Store.open(url).close()
        yield url


@pytest.fixture(params=FAILURES)
def failing(
    request: pytest.FixtureRequest, migrated_url: str
) -> Iterator[tuple[Store, sa.Connection]]:
    """A store whose database fails, and a connection it opened before it did."""
    store = Store(migrated_url)
    conn = store.engine.connect()
    _break(store.engine, request.param)
    try:
        yield store, conn
    finally:
        conn.invalidate()
        store.close()


def assert_one_line(caught: pytest.ExceptionInfo[StoreError]) -> None:
    message = str(caught.value)
    assert message and "\n" not in message
    assert not [word for word in SQL_WORDS if word in message], message
    assert "secret" not in message
    assert isinstance(caught.value.__cause__, sa.exc.SQLAlchemyError)


@pytest.mark.parametrize("name", sorted(public(Store) - STORE_WITHOUT_ERRORS))
def test_store_method_fails_in_one_line(name: str, failing: tuple[Store, sa.Connection]) -> None:
    store, _ = failing
    with pytest.raises(StoreError) as caught:
        STORE_CALLS[name](store)
    assert_one_line(caught)


@pytest.mark.parametrize("name", sorted(public(Ledger) - LEDGER_WITHOUT_ERRORS))
def test_ledger_method_fails_in_one_line(name: str, failing: tuple[Store, sa.Connection]) -> None:
    store, conn = failing
    ledger = Ledger.for_store(store)
    if ledger.engine.dialect.name == "sqlite" and name in LEDGER_SQLITE_ONLY_LOCAL:
        LEDGER_CALLS[name](ledger, conn)  # answered without the database: no error
        return
    with pytest.raises(StoreError) as caught:
        LEDGER_CALLS[name](ledger, conn)
    assert_one_line(caught)


@pytest.mark.parametrize("name", sorted(public(PrDetailsStore)))
def test_pr_details_method_fails_in_one_line(
    name: str, failing: tuple[Store, sa.Connection]
) -> None:
    store, _ = failing
    with pytest.raises(StoreError) as caught:
        PR_DETAILS_CALLS[name](PrDetailsStore(store))
    assert_one_line(caught)


@pytest.mark.parametrize("name", sorted(public(TranscriptStore)))
def test_transcript_method_fails_in_one_line(
    name: str, failing: tuple[Store, sa.Connection]
) -> None:
    store, _ = failing
    with pytest.raises(StoreError) as caught:
        TRANSCRIPT_CALLS[name](TranscriptStore(store))
    assert_one_line(caught)


def test_ping_says_false(failing: tuple[Store, sa.Connection]) -> None:
    store, _ = failing
    assert store.ping() is False
