"""The job queue's table keeps fresh statistics (PostgreSQL only): autovacuum analyses and
vacuums ``procrastinate_jobs`` after a small share of it changed, not PostgreSQL's default
fifth. A round of polls defers a job per show within a minute into a table whose
statistics still describe it nearly empty; the plan chosen for a worker's fetch of its
next job from those statistics checks every waiting job against every other. The dispatch
task analyses the table itself after a large batch (``digests.store.jobs``); this keeps
the steady state fresh between batches.

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0031"
down_revision: str | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OPTIONS = (
    "autovacuum_analyze_scale_factor = 0.02, autovacuum_analyze_threshold = 200, "
    "autovacuum_vacuum_scale_factor = 0.05, autovacuum_vacuum_threshold = 500"
)


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(f"ALTER TABLE procrastinate_jobs SET ({_OPTIONS})")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    names = ", ".join(part.split("=")[0].strip() for part in _OPTIONS.split(","))
    op.execute(f"ALTER TABLE procrastinate_jobs RESET ({names})")
