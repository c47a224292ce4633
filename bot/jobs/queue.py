"""The job queue of ``digestbot worker``: a procrastinate ``App`` on the bot's PostgreSQL
database (its tables in the same schema, made by migration 0029), and the tasks it runs
(:mod:`bot.jobs.tasks`).

Nothing connects at import: :func:`make_app` builds the app from settings and the caller
opens it (``async with app.open_async()``). PostgreSQL only: the embedded default
(``digestbot run`` on SQLite) runs its schedule in one process with APScheduler and never
imports this module.

Around procrastinate's known edges: every periodic task is a frequent, idempotent check
(none runs once a week), so a period a restarted worker skips (#1495: a periodic defer row
left with no job) costs one period, not a week; they are few (#1464); the connection pool
is sized from ``WORKER_CONCURRENCY`` with room for the listener, the heartbeat and the
periodic deferrer (#1435).
"""

from __future__ import annotations

import logging
from typing import Any

import sqlalchemy as sa
from procrastinate import App, PsycopgConnector

from config.settings import Settings
from digests.errors import ConfigError

log = logging.getLogger(__name__)

# Queues, each a kind of work: a worker listens on all of them; an operator may start
# workers for some only (`digestbot worker --queue deliver`).
QUEUES = ("periodic", "poll", "deliver", "enrich")
# Connections beyond one per job: LISTEN, heartbeats, the periodic deferrer.
POOL_SPARE = 4
# How often a worker's heartbeat is written, as a share of the stalled interval.
HEARTBEATS_PER_STALL = 4


def conninfo(database_url: str) -> str:
    """libpq's URI for the bot's SQLAlchemy URL: the same host, database and options (a
    ``search_path`` in ``options`` puts the queue's tables in the bot's schema)."""
    url = sa.engine.make_url(database_url)
    if url.get_backend_name() != "postgresql":
        raise ConfigError(
            "digestbot worker needs PostgreSQL (DATABASE_URL=postgresql://…); "
            "on SQLite run `digestbot run`, one process"
        )
    from psycopg.conninfo import make_conninfo

    parts: dict[str, Any] = {
        "host": url.host, "port": url.port, "dbname": url.database,
        "user": url.username, "password": url.password,
    }  # fmt: skip
    for name, value in url.query.items():  # options=-csearch_path=…, sslmode, …
        parts[name] = value if isinstance(value, str) else value[-1]
    return make_conninfo(**{k: v for k, v in parts.items() if v is not None})


def is_postgres(settings: Settings) -> bool:
    return sa.engine.make_url(settings.database_url).get_backend_name() == "postgresql"


def make_app(settings: Settings) -> App:
    """The app with every task registered (:func:`bot.jobs.tasks.register`); not opened."""
    from bot.jobs import tasks

    pool: dict[str, Any] = {
        "conninfo": conninfo(settings.database_url),
        "min_size": 1,
        "max_size": settings.worker_concurrency + POOL_SPARE,
    }
    app = App(
        connector=PsycopgConnector(**pool),
        worker_defaults={
            "concurrency": settings.worker_concurrency,
            "update_heartbeat_interval": heartbeat_seconds(settings),
            "stalled_worker_timeout": settings.worker_stalled_seconds,
        },
        # A worker started after a period was due defers it within this long only.
        periodic_defaults={"max_delay": 120},
    )
    tasks.register(app, settings)
    return app


def heartbeat_seconds(settings: Settings) -> float:
    return max(0.5, settings.worker_stalled_seconds / HEARTBEATS_PER_STALL)
