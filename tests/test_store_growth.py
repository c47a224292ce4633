"""Reads that stay flat as the archive grows (issue 11): the shapes the store relies on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from digests.models import Episode
from digests.store import Store, search
from digests.store.episodes import ANALYZE_AFTER

START = datetime(2026, 1, 5, 13, 0, tzinfo=UTC)


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
        store.upsert_episodes([_episode(show, d, transcript="gather") for d in range(count)], START)


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
    store.upsert_episodes([_episode("PyTorch", -5, headline="gather gather gather")], START)
    _fill(store)
    assert store.search("gather", limit=10)[0].guid == "PyTorch--5"
    monkeypatch.setattr(search, "RANKED_CANDIDATES", 3)
    found = store.search("gather", limit=10)
    assert len(found) == 3
    assert "PyTorch--5" not in {e.guid for e in found}
    assert {e.show for e in store.search("gather", limit=10, shows=["Triton"])} == {"Triton"}


def test_a_large_upsert_refreshes_the_statistics(store: Store) -> None:
    store.upsert_episodes([_episode("PyTorch", d) for d in range(ANALYZE_AFTER)], START)
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
        START,
    )
    found = lambda *words: [e.guid for e in store.by_title_words(list(words))]  # noqa: E731
    assert found("shard") == ["Triton-3", "PyTorch-1"]
    assert found("SHARD", "2500") == ["Triton-3"]
    assert found("pytorch", "guards") == ["PyTorch-2"]  # the show's name is in the title only
    assert found("of", "guards") == []  # a short word still has to be there
    assert found("fo", "guards") == ["PyTorch-2"]
    assert found('ha"rd') == []


def test_the_title_trigram_index_follows_updates_and_deletes(store: Store) -> None:
    store.upsert_episodes([_episode("PyTorch", 1, headline="Sharding the optimizer")], START)
    store.upsert_episodes([_episode("PyTorch", 1, headline="Fusion passes")], START)
    assert store.by_title_words(["sharding"]) == []
    assert [e.guid for e in store.by_title_words(["fusion"])] == ["PyTorch-1"]
    if store._db.dialect == "sqlite":
        with store._db.engine.connect() as conn:
            rows = conn.exec_driver_sql(
                "SELECT rowid FROM episodes_fts_titles WHERE episodes_fts_titles MATCH 'fusion'"
            ).all()
        assert len(rows) == 1
