"""Subscription filters stored structured: ``subscriptions.filter`` {"any", "all", "none"}
(each a list of words and phrases) replaces the ``keywords`` list of strings.

Every stored keyword is read as the code before this revision read it when matching: a
plain word or phrase is an "any" term, ``+x`` an "all" term, ``-x`` a "none" term, quotes
and punctuation around a term go, repeats (any case) go. A sign on nothing (``+``) asked
for nothing and is dropped. Downgrade writes the terms back (``x``, ``+x``, ``-x``), which
the previous revision reads to the same filter.

Not a batch (table copy) on SQLite, which would drop the table's CHECK constraint: the
column is added with a default and the old one dropped in place (SQLite 3.35+).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_KINDS = {"": "any", "+": "all", "-": "none"}
# What digests.filters strips around a term (as of this revision; kept here so the
# migration reads today's rows the same way whatever the module becomes).
_PUNCTUATION = " \t\"'“”‘’.,;:!?()[]{}"

_subscriptions = sa.table(
    "subscriptions",
    sa.column("id", sa.Integer),
    sa.column("keywords", sa.JSON),
    sa.column("filter", sa.JSON),
)


def structured(keywords: Iterable[str]) -> dict[str, list[str]]:
    """A stored keyword list as the filter it meant."""
    out: dict[str, list[str]] = {"any": [], "all": [], "none": []}
    seen: dict[str, set[str]] = {kind: set() for kind in out}
    for raw in keywords:
        term = " ".join(str(raw).replace("\x00", "").split())
        sign = term[:1] if term[:1] in ("+", "-") else ""
        word = term[len(sign) :].strip(_PUNCTUATION)
        if not sign and word[:1] in ("+", "-"):
            sign, word = word[0], word[1:].strip(_PUNCTUATION)
        kind = _KINDS[sign]
        if word and word.casefold() not in seen[kind]:
            seen[kind].add(word.casefold())
            out[kind].append(word)
    return out


def flat(stored: Any) -> list[str]:
    """A structured filter as the keyword list the previous revision reads."""
    value = stored if isinstance(stored, dict) else {}
    return [
        *value.get("any", []),
        *(f"+{t}" for t in value.get("all", [])),
        *(f"-{t}" for t in value.get("none", [])),
    ]


def _rewrite(column: str, rows: list[dict[str, Any]]) -> None:
    if rows:
        op.get_bind().execute(
            sa.update(_subscriptions)
            .where(_subscriptions.c.id == sa.bindparam("row_id"))
            .values({column: sa.bindparam("value", type_=sa.JSON)}),
            rows,
        )


def upgrade() -> None:
    op.add_column(
        "subscriptions",
        sa.Column("filter", sa.JSON, nullable=False, server_default=sa.text("'{}'")),
    )
    stored = op.get_bind().execute(sa.select(_subscriptions.c.id, _subscriptions.c.keywords))
    _rewrite(
        "filter", [{"row_id": r.id, "value": structured(r.keywords or ())} for r in stored]
    )
    op.drop_column("subscriptions", "keywords")


def downgrade() -> None:
    # The default only lets SQLite add a NOT NULL column in place; every row gets its list.
    op.add_column(
        "subscriptions",
        sa.Column("keywords", sa.JSON, nullable=False, server_default=sa.text("'[]'")),
    )
    stored = op.get_bind().execute(sa.select(_subscriptions.c.id, _subscriptions.c.filter))
    _rewrite("keywords", [{"row_id": r.id, "value": flat(r.filter)} for r in stored])
    op.drop_column("subscriptions", "filter")
