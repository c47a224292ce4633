"""Migrations from empty, schema agreement, and sharing one database between stores."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from digests.models import Episode, guid_key
from digests.store import Store, database
from digests.store.ledger import Ledger
from digests.store.schema import include_object, metadata
from tests.fixtures.store import SAMPLE_NOW, count_episodes

ROOT = Path(__file__).resolve().parent.parent
TABLES = {"shows", "episodes", "episode_prs", "subscriptions", "deliveries"}


def alembic_config() -> Config:
    config = Config()
    config.set_main_option(
        "script_location", str(resources.files("digests.store").joinpath("migrations"))
    )
    return config


def head() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def test_migrates_an_empty_database_to_head(db_url: str) -> None:
    store = Store.open(db_url)
    try:
        with store.engine.connect() as conn:
            tables = set(sa.inspect(conn).get_table_names())
            current = MigrationContext.configure(conn).get_current_revision()
            uniques = {
                tuple(u["column_names"])
                for u in sa.inspect(conn).get_unique_constraints("deliveries")
            }
        assert tables >= TABLES
        assert current == head() == "0031"
        assert ("team_id", "channel_id", "kind", "key") in uniques
    finally:
        store.close()


def test_the_head_from_file_names_is_alembics_head() -> None:
    assert database.head_revision() == head()


def test_a_current_database_opens_without_importing_alembic(db_url: str) -> None:
    Store.open(db_url).close()
    script = (
        "import sys; from digests.store import Store; "
        f"Store.open({db_url!r}).close(); print(sorted(m for m in sys.modules if 'alembic' in m))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stderr


def test_migration_matches_schema_module(store: Store) -> None:
    with store.engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"include_object": include_object, "compare_type": True}
        )
        diffs = compare_metadata(context, metadata)
    assert diffs == []


def test_migrate_again_keeps_data(db_url: str) -> None:
    first = Store.open(db_url)
    try:
        first.subscribe("T1", "C1", "PyTorch")
    finally:
        first.close()
    again = Store.open(db_url)
    try:
        again.migrate()
        assert [s.channel_id for s in again.subscriptions()] == ["C1"]
    finally:
        again.close()


def test_downgrade_to_base_and_up_again(store: Store) -> None:
    config = alembic_config()
    with store.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "base")
        assert not set(sa.inspect(conn).get_table_names()) & TABLES
    store.migrate()
    store.subscribe("T1", "C1", "PyTorch")
    assert len(store.subscriptions()) == 1


def test_upgrade_from_0001_fills_guid_keys_of_stored_episodes(db_url: str) -> None:
    """A database made before 0002 keeps its episodes, and buttons find them by hash."""
    store = Store(db_url)
    try:
        config = alembic_config()
        with store.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, "0001")
            key = conn.execute(
                sa.insert(metadata.tables["shows"]).values(name="PyTorch")
            ).inserted_primary_key
            assert key is not None
            show_id = key[0]
            # Only the columns 0001 has (an insert names just the values given).
            conn.execute(
                sa.insert(metadata.tables["episodes"]),
                [
                    {
                        "show_id": show_id,
                        "guid": f"pytorch-{n}-" + "x" * 2500,
                        "title": f"PyTorch: Before 0002 ({n})",
                        "published_at": SAMPLE_NOW,
                        "nearby": [],
                        "content_hash": "0" * 64,
                        "first_seen_at": SAMPLE_NOW,
                        "updated_at": SAMPLE_NOW,
                    }
                    for n in range(3)
                ],
            )
        store.migrate()
        for n in range(3):
            guid = f"pytorch-{n}-" + "x" * 2500
            found = store.episode_by_guid_key("PyTorch", guid_key(guid))
            assert found is not None and found == store.episode("PyTorch", guid), n
    finally:
        store.close()


def test_stores_opened_together_both_succeed(db_url: str) -> None:
    opened: list[Store] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            opened.append(Store.open(db_url))
        except BaseException as error:  # pragma: no cover - reported by the assert below
            errors.append(error)

    threads = [threading.Thread(target=open_one) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert errors == []
        assert len(opened) == 3
        opened[0].subscribe("T1", "C1", "PyTorch")
        assert len(opened[2].subscriptions()) == 1
    finally:
        for store in opened:
            store.close()


def test_new_sqlite_files_opened_together_never_report_locked(tmp_path: Path) -> None:
    # Switching a new file to WAL fails at once ("database is locked", no busy timeout)
    # while another connection has it open; a web and a clock process starting together
    # hit that. Many fresh files, so a race that loses one time in ten shows up here.
    for n in range(30):
        url = f"sqlite:///{tmp_path}/race-{n}.sqlite3"
        errors: list[BaseException] = []

        def open_one(url: str = url, errors: list[BaseException] = errors) -> None:
            try:
                Store.open(url).close()
            except BaseException as error:  # pragma: no cover - reported by the assert below
                errors.append(error)

        threads = [threading.Thread(target=open_one) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == [], n


def test_another_process_with_the_url_sees_the_same_data(
    store: Store, db_url: str, sample_episodes: list[Episode]
) -> None:
    store.upsert_episodes(sample_episodes, SAMPLE_NOW)
    script = (
        "import json, sys\n"
        "from digests.store import Store\n"
        "s = Store.open(sys.argv[1])\n"
        "print(json.dumps([e.guid for e in s.recent(2)]))\n"
        "s.close()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, db_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(done.stdout) == ["pytorch-2026-10-05", "rust-2026-10-04"]


def test_deliveries_table_enforces_one_row_per_key(store: Store) -> None:
    now = datetime(2026, 10, 5, tzinfo=UTC)
    row = {
        "team_id": "T1",
        "channel_id": "C1",
        "kind": "episode",
        "key": "PyTorch/g1",
        "updated_at": now,
        "created_at": now,
    }
    deliveries = metadata.tables["deliveries"]
    with store.engine.begin() as conn:
        conn.execute(sa.insert(deliveries).values(row))
    with pytest.raises(sa.exc.IntegrityError), store.engine.begin() as conn:
        conn.execute(sa.insert(deliveries).values(row))
    with store.engine.connect() as conn:
        state, attempts = conn.execute(sa.select(deliveries.c.state, deliveries.c.attempts)).one()
    assert (state, attempts) == ("pending", 0)


def test_concurrent_pollers_store_each_episode_once(db_url: str) -> None:
    """Several writers upserting the same feed at once: one row each, 'new' reported once."""
    stores = [Store.open(db_url) for _ in range(4)]
    batch = [
        Episode(
            guid=f"g{n}",
            show="PyTorch",
            title=f"PyTorch: E{n}",
            headline=f"E{n}",
            published_at=datetime(2026, 1, 1, n % 24, tzinfo=UTC),
        )
        for n in range(300)
    ]
    statuses: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(len(stores))

    def poll(store: Store) -> None:
        try:
            start.wait()
            statuses.extend(r.status for r in store.upsert_episodes(batch, SAMPLE_NOW))
        except BaseException as error:  # pragma: no cover - reported by the assert below
            errors.append(error)

    threads = [threading.Thread(target=poll, args=(store,)) for store in stores]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert statuses.count("new") == len(batch)
        assert statuses.count("unchanged") == len(batch) * (len(stores) - 1)
        assert count_episodes(stores[0]) == len(batch)
    finally:
        for store in stores:
            store.close()


def test_upgrade_from_0003_names_the_show_of_stored_episode_deliveries(db_url: str) -> None:
    """Rows from before 0004 get the longest show name their key starts with, else NULL."""
    store = Store(db_url)
    try:
        config = alembic_config()
        with store.engine.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, "0003")
            conn.execute(
                sa.insert(metadata.tables["shows"]),
                [{"name": "PyTorch"}, {"name": "PyTorch: Nightly"}],
            )
            # Only the columns 0003 has (an insert names just the values given).
            conn.execute(
                sa.insert(metadata.tables["deliveries"]).values(
                    team_id=sa.bindparam("t"),
                    channel_id="C1",
                    kind=sa.bindparam("kind"),
                    key=sa.bindparam("k"),
                    created_at=SAMPLE_NOW,
                    updated_at=SAMPLE_NOW,
                ),
                [
                    {"t": "T1", "kind": "episode", "k": "PyTorch:g1"},
                    {"t": "T2", "kind": "episode", "k": "PyTorch: Nightly:g2"},
                    {"t": "T3", "kind": "episode", "k": "Gone:g3"},
                    {"t": "T4", "kind": "notice", "k": "PyTorch:failing:1"},
                ],
            )
        store.migrate()
        shows = {row.team_id: row.show for row in Ledger.for_store(store).all_rows()}
        assert shows == {"T1": "PyTorch", "T2": "PyTorch: Nightly", "T3": None, "T4": None}
    finally:
        store.close()
