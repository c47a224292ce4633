"""What a show's plan reads, versioned: an unchanged feed skips planning while nothing it
decides over has changed since a plan that found nothing due (``bot.jobs.poll_state``).

- ``shows.subscriptions_version`` grows with every write to the show's subscriptions, and
  ``episode_versions.version`` with every statement writing its episodes (triggers, so
  every writer counts: the app, another process, a fix by hand). Two rows, so a user's
  subscribe never waits on the show's first read of a large archive, nor the reverse;
- ``shows.quiet_plan`` is the key of the plan inputs under which the last plan found
  nothing due (NULL: plan next time);
- ``ix_deliveries_show_id`` (show, id): the newest ledger row of a show, one index probe.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SUBS = "UPDATE shows SET subscriptions_version = subscriptions_version + 1"
_EPS = "UPDATE episode_versions SET version = version + 1"
_NEW_EPS = "INSERT OR IGNORE INTO episode_versions (show_id, version) VALUES (new.show_id, 0)"

_SQLITE_TRIGGERS = {
    "subscriptions_plan_ai": f"AFTER INSERT ON subscriptions BEGIN {_SUBS} WHERE name = new.show;",
    "subscriptions_plan_au": (
        f"AFTER UPDATE ON subscriptions BEGIN {_SUBS} WHERE name IN (old.show, new.show);"
    ),
    "subscriptions_plan_ad": f"AFTER DELETE ON subscriptions BEGIN {_SUBS} WHERE name = old.show;",
    "episodes_plan_ai": (
        f"AFTER INSERT ON episodes BEGIN {_NEW_EPS}; {_EPS} WHERE show_id = new.show_id;"
    ),
    "episodes_plan_au": (
        f"AFTER UPDATE ON episodes BEGIN {_NEW_EPS}; {_EPS} WHERE show_id = new.show_id;"
    ),
    "episodes_plan_ad": f"AFTER DELETE ON episodes BEGIN {_EPS} WHERE show_id = old.show_id;",
}

# PostgreSQL: subscriptions row by row (a few at a time); episodes once per statement, over
# its transition table (a first read of an archive writes thousands in one statement).
_PG_FUNCTIONS = [
    f"""
    CREATE FUNCTION subscriptions_plan_changed() RETURNS trigger AS $$
    BEGIN
        IF TG_OP <> 'INSERT' THEN {_SUBS} WHERE name = OLD.show; END IF;
        IF TG_OP <> 'DELETE' THEN {_SUBS} WHERE name = NEW.show; END IF;
        RETURN NULL;
    END $$ LANGUAGE plpgsql
    """,
    f"""
    CREATE FUNCTION episodes_plan_changed() RETURNS trigger AS $$
    BEGIN
        IF TG_OP = 'DELETE' THEN
            {_EPS} WHERE show_id IN (SELECT show_id FROM changed_rows);
        ELSE
            INSERT INTO episode_versions (show_id, version)
            SELECT DISTINCT show_id, 1 FROM changed_rows
            ON CONFLICT (show_id) DO UPDATE SET version = episode_versions.version + 1;
        END IF;
        RETURN NULL;
    END $$ LANGUAGE plpgsql
    """,
]
_PG_TRIGGERS = {
    "subscriptions_plan": "AFTER INSERT OR UPDATE OR DELETE ON subscriptions FOR EACH ROW "
    "EXECUTE FUNCTION subscriptions_plan_changed()",
    "episodes_plan_ai": "AFTER INSERT ON episodes REFERENCING NEW TABLE AS changed_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION episodes_plan_changed()",
    "episodes_plan_au": "AFTER UPDATE ON episodes REFERENCING NEW TABLE AS changed_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION episodes_plan_changed()",
    "episodes_plan_ad": "AFTER DELETE ON episodes REFERENCING OLD TABLE AS changed_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION episodes_plan_changed()",
}


def upgrade() -> None:
    with op.batch_alter_table("shows") as batch:
        batch.add_column(
            sa.Column("subscriptions_version", sa.Integer, nullable=False, server_default="0")
        )
        batch.add_column(sa.Column("quiet_plan", sa.Text))
    op.create_table(
        "episode_versions",
        sa.Column("show_id", sa.Integer, nullable=False),
        sa.Column("version", sa.Integer, nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("show_id", name="pk_episode_versions"),
        sa.ForeignKeyConstraint(
            ["show_id"],
            ["shows.id"],
            name="fk_episode_versions_show_id_shows",
            ondelete="CASCADE",
        ),
    )
    op.create_index("ix_deliveries_show_id", "deliveries", ["show", "id"])
    if op.get_context().dialect.name == "postgresql":
        for function in _PG_FUNCTIONS:
            op.execute(function)
        for name, body in _PG_TRIGGERS.items():
            op.execute(f"CREATE TRIGGER {name} {body}")
    else:
        for name, body in _SQLITE_TRIGGERS.items():
            op.execute(f"CREATE TRIGGER {name} {body} END")


def downgrade() -> None:
    if op.get_context().dialect.name == "postgresql":
        for name in _PG_TRIGGERS:
            table = "subscriptions" if name.startswith("subscriptions") else "episodes"
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
        op.execute("DROP FUNCTION IF EXISTS episodes_plan_changed()")
        op.execute("DROP FUNCTION IF EXISTS subscriptions_plan_changed()")
    else:
        for name in _SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.drop_index("ix_deliveries_show_id", table_name="deliveries")
    op.drop_table("episode_versions")
    # ALTER TABLE … DROP COLUMN (SQLite 3.35+), not a batch copy of shows: on SQLite,
    # dropping the old shows table would cascade into every episode.
    op.drop_column("shows", "quiet_plan")
    op.drop_column("shows", "subscriptions_version")
