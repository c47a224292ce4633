"""Alembic environment for digestbot's store.

``Store.migrate()`` hands over an open connection in ``config.attributes["connection"]`` (so
an in-memory SQLite database or a caller's transaction is migrated in place); without one,
``DATABASE_URL`` or ``sqlalchemy.url`` is used, which keeps the plain ``alembic`` CLI
working (``alembic -c digests/store/alembic.ini …``).
"""

from __future__ import annotations

import os

import sqlalchemy as sa
from alembic import context

from digests.store.schema import include_object, metadata

config = context.config


def _run(connection: sa.Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        # SQLite cannot ALTER most things; batch mode rebuilds tables in later migrations.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_object=include_object,
    )
    with context.begin_transaction():
        context.run_migrations()


def _url() -> str:
    return os.environ.get("DATABASE_URL") or config.get_main_option("sqlalchemy.url") or ""


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = sa.create_engine(_url())
    try:
        with engine.begin() as conn:
            _run(conn)
    finally:
        engine.dispose()


def run_migrations_offline() -> None:
    context.configure(
        url=_url(),
        target_metadata=metadata,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
