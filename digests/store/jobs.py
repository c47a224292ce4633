"""What ``digestbot worker``'s queue holds (PostgreSQL; procrastinate's tables, migration
0029), for ``digestbot jobs`` and the metrics: jobs per queue and state, the oldest job
waiting, and the shows whose poll is due; what the dispatch task reads and refreshes."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from digests.store.database import safe_url, wrap_exceptions

# A job waits from when it may run: its schedule, else when it was deferred.
_COUNTS = sa.text(
    """
    SELECT j.queue_name, j.status::text AS status, count(*) AS jobs,
           max(CASE WHEN j.status = 'todo' THEN extract(epoch FROM now() - coalesce(
               j.scheduled_at,
               (SELECT min(e.at) FROM procrastinate_events e WHERE e.job_id = j.id)))
           END) AS oldest
      FROM procrastinate_jobs j
     WHERE j.status IN ('todo', 'doing', 'failed')
       AND (j.status <> 'todo' OR j.scheduled_at IS NULL OR j.scheduled_at <= now())
     GROUP BY j.queue_name, j.status
     ORDER BY j.queue_name, j.status
    """
)
_WORKERS = sa.text("SELECT count(*) FROM procrastinate_workers")
_WAITING = sa.text(
    "SELECT DISTINCT args ->> :arg FROM procrastinate_jobs"
    " WHERE task_name = :task AND status IN ('todo', 'doing') AND args ->> :arg IN :values"
).bindparams(sa.bindparam("values", expanding=True))

# The per-workspace deliver jobs (bot.jobs.fanout.plan_per_team: task ``deliver``, args
# team, show and the poll's news as ``guids``) to do or doing.
_PLANNED = sa.text(
    "SELECT DISTINCT jsonb_array_elements_text(args -> 'guids') FROM procrastinate_jobs"
    " WHERE task_name = 'deliver' AND status IN ('todo', 'doing')"
    " AND args ->> 'team' = :team AND args ->> 'show' = :show"
    " AND jsonb_typeof(args -> 'guids') = 'array'"
)


@dataclass(frozen=True)
class QueueCount:
    queue: str
    status: str  # todo (ready to run), doing, failed
    jobs: int
    oldest_seconds: float | None  # todo: how long the oldest has waited


def queue_counts(engine: sa.Engine) -> list[QueueCount]:
    """Jobs per queue and state (scheduled ones not yet due are not counted as waiting)."""
    if engine.dialect.name != "postgresql":
        return []
    with wrap_exceptions("reading the job queue", safe_url(engine)), engine.connect() as conn:
        rows = conn.execute(_COUNTS).all()
    return [
        QueueCount(r.queue_name, r.status, int(r.jobs), _seconds(r.oldest)) for r in rows
    ]


def _seconds(value: object) -> float | None:
    return None if value is None else max(0.0, float(str(value)))


def worker_count(engine: sa.Engine) -> int:
    """Workers with a heartbeat row (a stopped one removes its own; a killed one's stays
    until a worker starting prunes it)."""
    if engine.dialect.name != "postgresql":
        return 0
    with wrap_exceptions("reading the job queue", safe_url(engine)), engine.connect() as conn:
        return int(conn.execute(_WORKERS).scalar_one())


def waiting_jobs(engine: sa.Engine, task: str, arg: str, values: Sequence[str]) -> set[str]:
    """Those of ``values`` that are the ``arg`` of a ``task`` job waiting or running (of
    shows, those whose poll waits or runs)."""
    if not values:
        return set()
    params = {"task": task, "arg": arg, "values": list(values)}
    with wrap_exceptions("reading the job queue", safe_url(engine)), engine.connect() as conn:
        return set(conn.execute(_WAITING, params).scalars())


def planned_guids(engine: sa.Engine, team: str, show: str) -> set[str]:
    """The episodes of ``show`` a workspace's deliver job still to do or doing will plan
    (a poll's news, before the job has recorded any ledger row). Empty on SQLite."""
    if engine.dialect.name != "postgresql":
        return set()
    params = {"team": team, "show": show}
    with wrap_exceptions("reading the job queue", safe_url(engine)), engine.connect() as conn:
        return set(conn.execute(_PLANNED, params).scalars())


def refresh_statistics(engine: sa.Engine) -> None:
    """The queue table's statistics made afresh (``ANALYZE``): after a batch that changed
    much of it, before autovacuum gets to it (see migration 0031)."""
    with wrap_exceptions("analysing the job queue", safe_url(engine)), engine.begin() as conn:
        conn.execute(sa.text("ANALYZE procrastinate_jobs"))


@contextlib.contextmanager
def held_alone(engine: sa.Engine, name: str) -> Iterator[bool]:
    """For the block: whether this process holds the lock ``name`` (a PostgreSQL session
    advisory lock), one holder at a time across processes. A holder killed mid-way drops
    it with its connection, so no lock outlives its process. Always held on SQLite (one
    process)."""
    if engine.dialect.name != "postgresql":
        yield True
        return
    key = sa.func.hashtext(name)
    with wrap_exceptions("locking the job queue", safe_url(engine)), engine.connect() as conn:
        held = bool(conn.execute(sa.select(sa.func.pg_try_advisory_lock(key))).scalar())
        conn.commit()  # the lock is the session's: no transaction left open while held
        try:
            yield held
        finally:
            if held:
                conn.execute(sa.select(sa.func.pg_advisory_unlock(key)))
                conn.commit()
