"""Slack OAuth: slack_sdk's installation, bot and OAuth-state tables, as slack_sdk builds them.

The tables come from slack_sdk's own ``build_*_table`` classmethods so the async stores
(``AsyncSQLAlchemyInstallationStore``, ``AsyncSQLAlchemyOAuthStateStore``) find exactly the
columns and indexes they expect, on SQLite and PostgreSQL alike.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from digests.store.installations import oauth_tables

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    for table in oauth_tables(sa.MetaData(), as_in_0010=True):
        table.create(op.get_bind())


def downgrade() -> None:
    for table in reversed(oauth_tables(sa.MetaData(), as_in_0010=True)):
        table.drop(op.get_bind())
