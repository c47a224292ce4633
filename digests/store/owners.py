"""Who is alive to finish a ledger row: the owner a ``pending`` or ``posting`` row names.

- ``job:<id>``: a job of ``digestbot worker``'s queue (PostgreSQL). Alive while the job is
  to do or doing; a job whose worker died stays ``doing`` until the stalled-job recovery
  runs it again under the same id, so its retry finds its own rows (``bot.jobs.tasks``).
- ``passed:<id>``: rows that job found no longer wanted (a channel paused or unsubscribed
  since they were planned): never alive, but no orphans either — left alone until a plan
  offers them again.
- anything else, ``host:pid:tag`` (``digestbot run`` and ``run --once``): alive while this
  process holds it open (:class:`~digests.store.database.LiveOwners`) or, on this host,
  while that pid runs. One process polls and delivers there; several on one PostgreSQL
  database are ``digestbot worker``'s to do.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable

import sqlalchemy as sa

JOB = "job:"
PASSED = "passed:"

# The queue's table (migration 0029; procrastinate's schema), read by job id only.
_LIVE_JOBS = sa.text(
    "SELECT id FROM procrastinate_jobs"
    " WHERE id = ANY(CAST(:ids AS bigint[])) AND status IN ('todo', 'doing')"
)


def job_owner(job_id: int) -> str:
    return f"{JOB}{job_id}"


def job_id_of(owner: str) -> int | None:
    if not owner.startswith(JOB) or not owner[len(JOB) :].isdigit():
        return None
    return int(owner[len(JOB) :])


def process_alive(owner: str) -> bool:
    """An owner named ``host:pid:tag`` is alive while that process runs on this host.

    A pid reused by an unrelated process only makes us wait (alive), never double a post.
    """
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or parts[0] != socket.gethostname():
        return False
    try:
        os.kill(int(parts[1]), 0)
    except PermissionError:  # someone else's process, but a process
        return True
    except (OSError, OverflowError):
        return False
    return True


def live_jobs(conn: sa.Connection, owners: Iterable[str]) -> set[str]:
    """The ``job:<id>`` owners among ``owners`` whose job is to do or doing."""
    ids = sorted({i for o in owners if (i := job_id_of(o)) is not None})
    if not ids or conn.dialect.name != "postgresql":
        return set()
    return {job_owner(int(i)) for i in conn.execute(_LIVE_JOBS, {"ids": ids}).scalars()}
