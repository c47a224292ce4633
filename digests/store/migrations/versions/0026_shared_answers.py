"""What several web processes must agree on: the answers people were shown, and a version
of the subscriptions.

- ``shared_answers``: an `/episodes` answer with a "Share in channel" button, by the token
  the button carries, so a click that lands on another process posts the answer the person
  saw (not the command run again);
- ``answers_version``: one row whose ``version`` grows with every write to
  ``subscriptions`` (triggers, so every writer counts: another process, the clock, a fix
  by hand). A process caching answers about a channel's shows reads it to know that a
  subscribe made elsewhere changed them.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The row is made by the first write (none: version 0), so emptying the table is harmless.
# Not INSERT OR IGNORE: the ON CONFLICT of the statement that fires a trigger overrides its
# statements' (a subscribe's upsert would make the IGNORE an error).
_SQLITE_BUMP = (
    "INSERT INTO answers_version (id, version) SELECT 1, 0 "
    "WHERE NOT EXISTS (SELECT 1 FROM answers_version WHERE id = 1); "
    "UPDATE answers_version SET version = version + 1 WHERE id = 1"
)
_SQLITE_TRIGGERS = {
    f"subscriptions_answers_{suffix}": f"AFTER {event} ON subscriptions BEGIN {_SQLITE_BUMP}; END"
    for suffix, event in (("ai", "INSERT"), ("au", "UPDATE"), ("ad", "DELETE"))
}
# Row by row, as 0017's: a statement that changes no row changes no answer.
_PG_FUNCTION = """
CREATE FUNCTION subscriptions_answers_changed() RETURNS trigger AS $$
BEGIN
    INSERT INTO answers_version (id, version) VALUES (1, 1)
    ON CONFLICT (id) DO UPDATE SET version = answers_version.version + 1;
    RETURN NULL;
END $$ LANGUAGE plpgsql
"""
_PG_TRIGGER = (
    "CREATE TRIGGER subscriptions_answers AFTER INSERT OR UPDATE OR DELETE ON subscriptions "
    "FOR EACH ROW EXECUTE FUNCTION subscriptions_answers_changed()"
)


def upgrade() -> None:
    op.create_table(
        "shared_answers",
        sa.Column("token", sa.String(64), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("shown_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("token", name="pk_shared_answers"),
    )
    op.create_index("ix_shared_answers_shown_at", "shared_answers", ["shown_at"])
    op.create_table(
        "answers_version",
        sa.Column("id", sa.Integer, autoincrement=False, nullable=False),
        sa.Column("version", sa.Integer, nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("id", name="pk_answers_version"),
    )
    if op.get_context().dialect.name == "postgresql":
        op.execute(_PG_FUNCTION)
        op.execute(_PG_TRIGGER)
    else:
        for name, body in _SQLITE_TRIGGERS.items():
            op.execute(f"CREATE TRIGGER {name} {body}")


def downgrade() -> None:
    if op.get_context().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS subscriptions_answers ON subscriptions")
        op.execute("DROP FUNCTION IF EXISTS subscriptions_answers_changed()")
    else:
        for name in _SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.drop_table("answers_version")
    op.drop_index("ix_shared_answers_shown_at", table_name="shared_answers")
    op.drop_table("shared_answers")
