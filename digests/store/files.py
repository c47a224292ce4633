"""Files the store creates: readable and writable by their owner only."""

from __future__ import annotations

import contextlib
import os


def private_file(path: str) -> None:
    """The database file readable by its owner only (it holds OAuth tokens), created so
    when missing: SQLite gives its -wal and -shm files the database file's mode. A file
    an older digestbot left 0644 is narrowed, with its -wal and -shm."""
    with contextlib.suppress(OSError):  # no folder, not ours: SQLite says so on connect
        os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
    for name in (path, path + "-wal", path + "-shm"):
        with contextlib.suppress(OSError):
            if os.stat(name).st_mode & 0o077:
                os.chmod(name, 0o600)
