"""The job queue of ``digestbot worker`` (PostgreSQL only): procrastinate's tables, types and
functions, created in the schema the database URL's ``search_path`` names (beside ours).
On SQLite nothing: the embedded default runs its schedule in one process (APScheduler).

procrastinate's own schema file is applied as the installed version ships it; a later
version's schema changes come as a later migration of ours (its ``sql/migrations``).

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_DROP = """
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT p.oid::regprocedure AS f FROM pg_proc p
           WHERE p.pronamespace = current_schema()::regnamespace
             AND p.proname LIKE 'procrastinate%' LOOP
    EXECUTE 'DROP FUNCTION IF EXISTS ' || r.f || ' CASCADE';
  END LOOP;
  FOR r IN SELECT c.relname FROM pg_class c
           WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
             AND c.relname LIKE 'procrastinate%' LOOP
    EXECUTE format('DROP TABLE IF EXISTS %I CASCADE', r.relname);
  END LOOP;
  FOR r IN SELECT t.typname FROM pg_type t
           LEFT JOIN pg_class c ON c.oid = t.typrelid
           WHERE t.typnamespace = current_schema()::regnamespace
             AND (t.typtype = 'e' OR c.relkind = 'c')
             AND t.typname LIKE 'procrastinate%' LOOP
    EXECUTE format('DROP TYPE IF EXISTS %I CASCADE', r.typname);
  END LOOP;
END $$;
"""


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    from procrastinate.schema import SchemaManager

    # Its statements name no schema: they land in the first of the connection's search_path.
    _script(SchemaManager.get_schema())


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    _script(_DROP)


def _script(sql: str) -> None:
    """A script of many statements, on the migration's connection and transaction: as the
    driver's own execute with no parameters, so its ``%`` are not read as placeholders."""
    raw = op.get_bind().connection.dbapi_connection
    assert raw is not None
    cursor = raw.cursor()
    try:
        cursor.execute(sql)
    finally:
        cursor.close()
