"""What is wrong with a show's feed when it is read leniently (``shows.read_note``): its
XML is not well-formed, and the parser repaired it (``digests.parse.lenient``). NULL: the
last read was of well-formed XML, as every row before this migration is taken to be.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("shows", sa.Column("read_note", sa.Text))


def downgrade() -> None:
    op.drop_column("shows", "read_note")
