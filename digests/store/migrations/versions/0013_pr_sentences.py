"""PR sentences stored once: episode_sentences holds each sentence that names PRs once per
episode, and episode_prs rows point at theirs (``sentence``) instead of each carrying a copy.

Existing rows keep their text: every distinct (episode, context) becomes a sentence, the
PR rows get its position and an empty ``context``; downgrade copies the text back.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "episode_sentences",
        sa.Column("episode_id", sa.Integer, nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("episode_id", "position", name="pk_episode_sentences"),
        sa.ForeignKeyConstraint(
            ["episode_id"],
            ["episodes.id"],
            name="fk_episode_sentences_episode_id_episodes",
            ondelete="CASCADE",
        ),
    )
    op.add_column("episode_prs", sa.Column("sentence", sa.Integer, nullable=True))
    # A sentence's position is that of the first PR naming it: unique within the episode.
    op.execute(
        "INSERT INTO episode_sentences (episode_id, position, text) "
        "SELECT episode_id, MIN(position), context FROM episode_prs "
        "WHERE context <> '' GROUP BY episode_id, context"
    )
    op.execute(
        "UPDATE episode_prs SET sentence = (SELECT s.position FROM episode_sentences s "
        "WHERE s.episode_id = episode_prs.episode_id AND s.text = episode_prs.context) "
        "WHERE context <> ''"
    )
    op.execute("UPDATE episode_prs SET context = '' WHERE sentence IS NOT NULL")


def downgrade() -> None:
    op.execute(
        "UPDATE episode_prs SET context = (SELECT s.text FROM episode_sentences s "
        "WHERE s.episode_id = episode_prs.episode_id AND s.position = episode_prs.sentence) "
        "WHERE sentence IS NOT NULL"
    )
    with op.batch_alter_table("episode_prs") as batch:
        batch.drop_column("sentence")
    op.drop_table("episode_sentences")
