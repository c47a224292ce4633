"""Deliveries name their show: ``show``, nullable, filled for the episode rows already there.

The recovery sweep re-plans an orphaned episode delivery for its show; reading the show back
out of the key (``<show>:<guid>``) is ambiguous when one show's name is a prefix of
another's. Rows written from now on carry it; existing episode rows get the longest known
show name their key starts with (``<name>:``), and stay NULL when none fits.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BATCH = 500


def _show_of(key: str, names: Sequence[str]) -> str | None:
    # Frozen copy of the sweeper's rule: the longest name that prefixes the key with ":".
    fits = [name for name in names if key.startswith(f"{name}:")]
    return max(fits, key=len) if fits else None


def upgrade() -> None:
    # Nullable, no default: a plain ADD COLUMN on both backends.
    op.add_column("deliveries", sa.Column("show", sa.String(200)))
    bind = op.get_bind()
    shows = sa.table("shows", sa.column("name", sa.String))
    deliveries = sa.table(
        "deliveries",
        sa.column("id", sa.Integer),
        sa.column("kind", sa.String),
        sa.column("key", sa.String),
        sa.column("show", sa.String),
    )
    names = list(bind.execute(sa.select(shows.c.name)).scalars())
    if not names:
        return
    rows = bind.execute(
        sa.select(deliveries.c.id, deliveries.c.key).where(deliveries.c.kind == "episode")
    ).all()
    found = [(row.id, _show_of(row.key, names)) for row in rows]
    updates = [{"row_id": row_id, "name": show} for row_id, show in found if show is not None]
    update = (
        sa.update(deliveries)
        .where(deliveries.c.id == sa.bindparam("row_id"))
        .values(show=sa.bindparam("name"))
    )
    for start in range(0, len(updates), _BATCH):
        bind.execute(update, updates[start : start + _BATCH])


def downgrade() -> None:
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_column("show")
