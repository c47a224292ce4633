"""Reads that stay flat as the archive grows: the shapes the store relies on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from alembic import command

from digests.models import Episode, PullRequestRef
from digests.store import Store, search
from digests.store.episodes import ANALYZE_AFTER

START = datetime(2026, 1, 5, 13, 0, tzinfo=UTC)
# When the store read them: after every date here (an item dated more than a day after it
# is first seen is dated when first seen instead).
SEEN = START + timedelta(days=ANALYZE_AFTER)


def _episode(show: str, day: int, headline: str = "", transcript: str = "") -> Episode:
    headline = headline or f"Day {day} of {show}"
    return Episode(
        guid=f"{show}-{day}",
        show=show,
        title=f"{show}: {headline}",
        headline=headline,
        published_at=START + timedelta(days=day),
        transcript=transcript,
    )


def _fill(store: Store, count: int = 10) -> None:
    for show in ("PyTorch", "Triton"):
        store.upsert_episodes([_episode(show, d, transcript="gather") for d in range(count)], SEEN)


def test_the_read_indexes_exist(store: Store) -> None:
    names = {ix["name"] for ix in sa.inspect(store._db.engine).get_indexes("episodes")}
    assert {"ix_episodes_show_id_published_at", "ix_episodes_show_id_first_seen_at"} <= names


def test_count_between_counts_what_between_returns(store: Store) -> None:
    _fill(store)
    start, end = START + timedelta(days=2), START + timedelta(days=6)
    assert store.count_between(start, end) == len(store.between(start, end)) == 8
    assert store.count_between(start, end, ["PyTorch"]) == 4
    assert store.count_between(start, end, ["Nobody"]) == 0
    assert store.count_between(start, end, []) == 0


def test_search_ranks_only_the_newest_matches(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first stored episode is the best match by far, but outside the bound of three.
    store.upsert_episodes([_episode("PyTorch", -5, headline="gather gather gather")], SEEN)
    _fill(store)
    assert store.search("gather", limit=10)[0].guid == "PyTorch--5"
    monkeypatch.setattr(search, "RANKED_CANDIDATES", 3)
    found = store.search("gather", limit=10)
    assert len(found) == 3
    assert "PyTorch--5" not in {e.guid for e in found}
    assert {e.show for e in store.search("gather", limit=10, shows=["Triton"])} == {"Triton"}


def test_an_unranked_search_is_newest_first_within_the_bound(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No scores (bm25's first call counts each word's matches in the whole archive): the
    # best match by far comes last, as the oldest; the bound still holds.
    store.upsert_episodes([_episode("PyTorch", -5, headline="gather gather gather")], SEEN)
    _fill(store)
    found = store.search("gather", limit=50, ranked=False)
    assert [e.published_at for e in found] == sorted((e.published_at for e in found), reverse=True)
    assert found[-1].guid == "PyTorch--5" and len(found) == 21
    assert {e.show for e in store.search("gather", shows=["Triton"], ranked=False)} == {"Triton"}
    assert store.search("gather", shows=["Nobody"], ranked=False) == []
    monkeypatch.setattr(search, "RANKED_CANDIDATES", 3)
    assert len(store.search("gather", limit=10, ranked=False)) == 3


def test_a_search_reads_pull_requests_only_for_the_episodes_picked(store: Store) -> None:
    pr = PullRequestRef(7, "https://github.com/o/r/pull/7", "PR 7 gathers.")
    store.upsert_episodes(
        [
            _episode("PyTorch", d, transcript="gather").model_copy(update={"pull_requests": (pr,)})
            for d in range(5)
        ],
        SEEN,
    )
    pools: list[list[Episode]] = []

    def pick(pool: list[Episode]) -> list[Episode]:
        pools.append(pool)
        return pool[::-2]

    found = store.search("gather", limit=50, ranked=False, pick=pick)
    assert [e.guid for e in pools[0]] == [f"PyTorch-{d}" for d in (4, 3, 2, 1, 0)]
    assert all(e.pull_requests == () for e in pools[0])
    assert [e.guid for e in found] == ["PyTorch-0", "PyTorch-2", "PyTorch-4"]
    assert all(e.pull_requests == (pr,) for e in found)
    assert store.search("gather", shows=["Nobody"], pick=pick) == [] and len(pools) == 1


def test_a_large_upsert_refreshes_the_statistics(store: Store) -> None:
    store.upsert_episodes([_episode("PyTorch", d) for d in range(ANALYZE_AFTER)], SEEN)
    with store._db.engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            rows = conn.exec_driver_sql("SELECT count(*) FROM sqlite_stat1 WHERE tbl='episodes'")
        else:
            rows = conn.exec_driver_sql(
                "SELECT count(*) FROM pg_stats WHERE tablename = 'episodes'"
                " AND schemaname = current_schema()"
            )
        assert rows.scalar()


def test_title_words_stay_substrings_through_the_trigram_index(store: Store) -> None:
    store.upsert_episodes(
        [
            _episode("PyTorch", 1, headline="Sharding the optimizer"),
            _episode("PyTorch", 2, headline="Reworked guards for dynamic shapes"),
            _episode("Triton", 3, headline="Shard layouts, day 2500"),
        ],
        SEEN,
    )
    found = lambda *words: [e.guid for e in store.by_title_words(list(words))]  # noqa: E731
    assert found("shard") == ["Triton-3", "PyTorch-1"]
    assert found("SHARD", "2500") == ["Triton-3"]
    assert found("pytorch", "guards") == ["PyTorch-2"]  # the show's name is in the title only
    assert found("of", "guards") == []  # a short word still has to be there
    assert found("fo", "guards") == ["PyTorch-2"]
    assert found('ha"rd') == []


def test_the_title_trigram_index_follows_updates_and_deletes(store: Store) -> None:
    store.upsert_episodes([_episode("PyTorch", 1, headline="Sharding the optimizer")], SEEN)
    store.upsert_episodes([_episode("PyTorch", 1, headline="Fusion passes")], SEEN)
    assert store.by_title_words(["sharding"]) == []
    assert [e.guid for e in store.by_title_words(["fusion"])] == ["PyTorch-1"]
    if store._db.dialect == "sqlite":
        with store._db.engine.connect() as conn:
            rows = conn.exec_driver_sql(
                "SELECT rowid FROM episodes_fts_titles WHERE episodes_fts_titles MATCH 'fusion'"
            ).all()
        assert len(rows) == 1


def test_a_search_within_shows_finds_only_their_matches(store: Store) -> None:
    # "gather" in most of the archive but in none of Lightning's episodes: the scope is
    # part of the index's query, not a filter that the archive's matches are read for.
    _fill(store)
    store.upsert_episodes([_episode("Lightning", d, transcript="fused") for d in range(5)], SEEN)
    assert store.search("gather", shows=["Lightning"]) == []
    assert {e.show for e in store.search("gather", shows=["Lightning", "Triton"])} == {"Triton"}
    assert len(store.search("gather", limit=50, shows=["PyTorch", "Triton"])) == 20
    assert [e.guid for e in store.search("fused", limit=2, shows=["Lightning"])] == [
        "Lightning-4",
        "Lightning-3",
    ]
    assert store.search("gather", shows=["Nobody"]) == []


def test_a_show_s_id_is_not_a_word_of_its_episodes(store: Store) -> None:
    for show in ("PyTorch", "Triton"):  # no digits in the text: only a show's id could match
        store.upsert_episodes(
            [_episode(show, d, headline="News", transcript="gather") for d in range(3)], SEEN
        )
    with store._db.engine.connect() as conn:
        ids = [str(i) for i in conn.exec_driver_sql("SELECT id FROM shows").scalars()]
    for show_id in ids:
        assert store.search(show_id) == []
        assert store.search(show_id, shows=["PyTorch"]) == []


def test_a_scoped_search_reads_the_newest_first_then_the_index(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PostgreSQL reads a show's newest SCOPE_WINDOW episodes first and asks the index only
    # when they hold fewer than RANKED_CANDIDATES matches; either way the same candidates.
    monkeypatch.setattr(search, "RANKED_CANDIDATES", 3)
    monkeypatch.setattr(search, "SCOPE_WINDOW", 6)
    words = {0: "gather", 1: "gather", 8: "gather"}
    store.upsert_episodes(
        [_episode("PyTorch", d, transcript=words.get(d, "scatter")) for d in range(12)], SEEN
    )
    store.upsert_episodes([_episode("Triton", d, transcript="gather") for d in range(12)], SEEN)
    found = lambda word: {e.guid for e in store.search(word, shows=["PyTorch"])}  # noqa: E731
    assert found("scatter") == {"PyTorch-11", "PyTorch-10", "PyTorch-9"}  # the window's
    assert found("gather") == {"PyTorch-8", "PyTorch-1", "PyTorch-0"}  # one in the window
    assert found("fused") == set()


def test_postgresql_has_the_scoped_search_indexes(store: Store) -> None:
    if store._db.dialect != "postgresql":
        pytest.skip("PostgreSQL's indexes")
    names = {ix["name"] for ix in sa.inspect(store._db.engine).get_indexes("episodes")}
    assert "ix_episodes_show_id_id" in names


def test_postgresql_plans_each_search_for_its_own_words(store: Store) -> None:
    # Bound words let a prepared statement's generic plan (after five runs) guess a rare
    # word for every search; in the statement's text, each search is planned for its own.
    if store._db.dialect != "postgresql":
        pytest.skip("PostgreSQL's plans")
    _fill(store)
    sent: list[tuple[str, object]] = []

    def record(_conn: object, _cursor: object, statement: str, params: object, *_: object) -> None:
        sent.append((statement, params))

    sa.event.listen(store._db.engine, "before_cursor_execute", record)
    try:
        for _ in range(7):
            assert store.search("gather o'brien", any_words=False) == []
            assert len(store.search("gather", limit=50)) == 20
    finally:
        sa.event.remove(store._db.engine, "before_cursor_execute", record)
    searches = [(s, p) for s, p in sent if "websearch_to_tsquery" in s]
    assert searches
    assert all('"gather"' in s and '"gather"' not in repr(p) for s, p in searches)


def test_the_search_index_follows_updates_and_deletes(store: Store) -> None:
    store.upsert_episodes([_episode("PyTorch", d, transcript="gather") for d in range(3)], SEEN)
    store.upsert_episodes([_episode("PyTorch", 1, transcript="scatter")], SEEN)
    with store._db.engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM episodes WHERE guid = 'PyTorch-2'")
    assert [e.guid for e in store.search("gather", shows=["PyTorch"])] == ["PyTorch-0"]
    assert [e.guid for e in store.search("scatter", shows=["PyTorch"])] == ["PyTorch-1"]
    if store._db.dialect == "sqlite":
        with store._db.engine.begin() as conn:
            # FTS5 compares its index with its content (the view): raises when they differ.
            conn.exec_driver_sql(
                "INSERT INTO episodes_fts(episodes_fts) VALUES ('integrity-check')"
            )


def test_an_upgraded_archive_has_statistics_for_every_index(store: Store) -> None:
    # An index created after the last ANALYZE has none on SQLite, which then guessed it the
    # best for `show_id = ?` and sorted the whole show for a show's newest episodes.
    if store._db.dialect != "sqlite":
        pytest.skip("SQLite: PostgreSQL plans a plain index from its columns' statistics")
    from tests.test_store_migrations import alembic_config

    _fill(store)
    config = alembic_config()
    with store._db.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0021")
        conn.exec_driver_sql("DELETE FROM sqlite_stat1")
        command.upgrade(config, "head")
        rows = conn.exec_driver_sql("SELECT idx FROM sqlite_stat1 WHERE tbl = 'episodes'")
        assert "ix_episodes_show_id_raw_hash" in set(rows.scalars())
