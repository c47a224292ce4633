"""What the bot keeps on disk is its own: the SQLite database and its
-wal/-shm files are 0600, created so and narrowed when an older digestbot left them 0644."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from digests.store import Store


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def shared_umask() -> Iterator[None]:
    # What a process started from a login shell has: files readable by everyone.
    old = os.umask(0o022)
    yield
    os.umask(old)


def _written(path: Path) -> None:
    store = Store.open(f"sqlite:///{path}")
    try:
        store.migrate()
        store.ensure_show("S", "", "o/r")
        store.save_fetch_state("S", store.fetch_state("S"))
        assert Path(f"{path}-wal").exists() and Path(f"{path}-shm").exists()
        for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            assert _mode(name) == 0o600, (name, oct(_mode(name)))
    finally:
        store.close()


def test_a_new_database_and_its_wal_and_shm_are_0600(tmp_path: Path, shared_umask: None) -> None:
    _written(tmp_path / "digestbot.sqlite3")


def test_a_database_left_0644_is_narrowed(tmp_path: Path, shared_umask: None) -> None:
    path = tmp_path / "digestbot.sqlite3"
    store = Store.open(f"sqlite:///{path}")
    store.migrate()
    store.close()
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if name.exists():
            name.chmod(0o644)
    _written(path)
