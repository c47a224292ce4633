"""Slack token columns TEXT: a token sealed with DIGESTBOT_SECRET_KEY (Fernet, base64) is
about twice as long as the token, past slack_sdk's VARCHAR(200).

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS = {
    "slack_installations": ("bot_token", "bot_refresh_token", "user_token", "user_refresh_token"),
    "slack_bots": ("bot_token", "bot_refresh_token"),
}


def _retype(old: sa.types.TypeEngine[str], new: sa.types.TypeEngine[str]) -> None:
    for table, columns in _COLUMNS.items():
        with op.batch_alter_table(table) as batch:
            for column in columns:
                batch.alter_column(column, type_=new, existing_type=old)


def upgrade() -> None:
    _retype(sa.String(200), sa.Text())


def downgrade() -> None:
    _retype(sa.Text(), sa.String(200))
