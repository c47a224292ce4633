"""Migration 0014 (SQLite and PostgreSQL): rows the previous head wrote as a keyword list
come out as the structured filter they meant, and a downgrade gives the previous head a
list it reads to the same filter."""

from __future__ import annotations

import importlib
import json

import pytest
import sqlalchemy as sa
from alembic import command

from digests.filters import Filter
from digests.store import Store
from digests.store.subscriptions import filter_from_json, filter_to_json
from tests.fixtures.store import SAMPLE_NOW
from tests.test_store_migrations import alembic_config

migration = importlib.import_module("digests.store.migrations.versions.0014_subscription_filters")

# What the previous head stored: the subscribe command's terms, the config file's keywords
# as typed there, and lists from before filters had signs.
STORED: dict[str, list[str]] = {
    "C_PLAIN": ["fsdp", "dtensor"],
    "C_MIXED": ["inductor", "flex attention", "+cuda", "-rocm"],
    "C_TYPED": ['"graph breaks"', "(dtensor),", "FSDP", "fsdp", " -hip ", "+ graphs"],
    "C_EXCLUDES": ["-rocm", "-hip"],
    "C_SIGNS": ["+", "-", "mps", "(-xla)"],
    "C_EVERY": [],
}
EXPECTED = {
    "C_PLAIN": Filter(any_of=("fsdp", "dtensor")),
    "C_MIXED": Filter(("inductor", "flex attention"), ("cuda",), ("rocm",)),
    "C_TYPED": Filter(("graph breaks", "dtensor", "FSDP"), ("graphs",), ("hip",)),
    "C_EXCLUDES": Filter(none_of=("rocm", "hip")),
    "C_SIGNS": Filter(any_of=("mps",), none_of=("xla",)),
    "C_EVERY": Filter(),
}


def _insert_at_0013(conn: sa.Connection) -> None:
    """Rows as the previous head's schema has them (its own columns, its own values)."""
    table = sa.Table("subscriptions", sa.MetaData(), autoload_with=conn)
    assert "keywords" in table.c and "filter" not in table.c
    conn.execute(
        sa.insert(table),
        [
            {
                "team_id": "T1",
                "channel_id": channel,
                "show": "PyTorch",
                "keywords": keywords,
                "recap": channel != "C_PLAIN",
                "source": "config" if channel == "C_TYPED" else "slash",
                "created_at": SAMPLE_NOW,
                "held_at": SAMPLE_NOW if channel == "C_MIXED" else None,
            }
            for channel, keywords in STORED.items()
        ],
    )


def _keywords_at_0013(conn: sa.Connection) -> dict[str, list[str]]:
    table = sa.Table("subscriptions", sa.MetaData(), autoload_with=conn)
    assert "filter" not in table.c
    return {r.channel_id: r.keywords for r in conn.execute(sa.select(table))}


def _filters(store: Store) -> dict[str, Filter]:
    return {s.channel_id: s.filter for s in store.subscriptions()}


def test_upgrade_reads_every_stored_keyword_list_into_its_filter(db_url: str) -> None:
    store = Store(db_url)
    try:
        config = alembic_config()
        with store.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, "0013")
            _insert_at_0013(conn)
        store.migrate()
        assert _filters(store) == EXPECTED
        subs = {s.channel_id: s for s in store.subscriptions()}
        # The rest of each row is as it was.
        assert [c for c, s in subs.items() if not s.recap] == ["C_PLAIN"]
        assert subs["C_TYPED"].source == "config"
        assert subs["C_MIXED"].held_at == SAMPLE_NOW
        assert subs["C_MIXED"].keywords == ("inductor", "flex attention", "+cuda", "-rocm")
        with store.engine.connect() as conn:
            raw = conn.execute(
                sa.text("SELECT filter FROM subscriptions WHERE channel_id = 'C_MIXED'")
            ).scalar_one()
        stored = raw if isinstance(raw, dict) else json.loads(raw)
        assert stored == {"any": ["inductor", "flex attention"], "all": ["cuda"], "none": ["rocm"]}
    finally:
        store.close()


def test_downgrade_gives_the_previous_head_the_same_filters(db_url: str) -> None:
    store = Store.open(db_url)
    try:
        for channel, expected in EXPECTED.items():
            store.subscribe("T1", channel, "PyTorch", filter=expected)
        config = alembic_config()
        with store.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.downgrade(config, "0013")
            old = _keywords_at_0013(conn)
        # The previous head matched with Filter.from_terms over the list: the same filters.
        assert {c: Filter.from_terms(k) for c, k in old.items()} == EXPECTED
        assert old["C_MIXED"] == ["inductor", "flex attention", "+cuda", "-rocm"]
        store.migrate()  # and up again: nothing lost on the round trip
        assert _filters(store) == EXPECTED
    finally:
        store.close()


def test_a_subscription_written_without_a_filter_matches_every_episode(db_url: str) -> None:
    """The column's default ({}) is no terms; an insert that names no filter gets it."""
    store = Store.open(db_url)
    try:
        with store.engine.begin() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO subscriptions (team_id, channel_id, show, created_at) "
                    "VALUES ('T1', 'C1', 'PyTorch', :now)"
                ),
                {"now": SAMPLE_NOW},
            )
        (sub,) = store.subscriptions()
        assert sub.filter == Filter() and sub.keywords == ()
    finally:
        store.close()


@pytest.mark.parametrize("keywords", [*STORED.values(), ["+x", "+X", "x", "-x"], ['"a b" c']])
def test_the_migration_reads_keywords_as_the_filter_module_does(keywords: list[str]) -> None:
    """The migration keeps its own copy of the reading; the two agree on today's rows."""
    read = Filter.from_terms(keywords, strict=False)
    assert filter_from_json(migration.structured(keywords)) == read
    assert filter_to_json(read) == migration.structured(keywords)
    assert Filter.from_terms(migration.flat(filter_to_json(read))) == read
