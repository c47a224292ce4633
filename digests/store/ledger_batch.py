"""Many claims, or many finished deliveries, in one statement (PostgreSQL): what the
ledger's writer (:mod:`digests.store.ledger_writer`) queued while its last transaction
ran. A fan-out claims a row for every channel it holds at once, and records a finished
post for each as the answers come; a statement each was most of a worker's time a post.
SQLite (one process, no round trips) takes them one by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from digests.store.database import aware
from digests.store.ledger import Ledger, LedgerRow, claimed_at_of
from digests.types import Ident, LedgerState

# Each row taken as it was read (compare and set), as Ledger.claim does one.
_CLAIM_MANY = sa.text(
    "UPDATE deliveries AS d SET state = 'posting', owner = v.owner, claimed_at = v.claimed_at,"
    " attempts = d.attempts + 1, updated_at = v.now FROM unnest(CAST(:ids AS integer[]),"
    " CAST(:states AS text[]), CAST(:attempts AS integer[]), CAST(:owners AS text[]),"
    " CAST(:claimed AS timestamptz[]), CAST(:nows AS timestamptz[]))"
    " AS v(id, state, attempts, owner, claimed_at, now)"
    " WHERE d.id = v.id AND d.state = v.state AND d.attempts = v.attempts RETURNING d.id"
)
# Each row its holder still owns, as Ledger.mark does one.
_FINISH_MANY = sa.text(
    "UPDATE deliveries AS d SET state = 'posted', ts = v.ts, thread_ts = v.thread_ts,"
    " content_hash = v.content_hash, error = v.error, updated_at = v.now"
    " FROM unnest(CAST(:ids AS integer[]), CAST(:owners AS text[]), CAST(:ts AS text[]),"
    " CAST(:thread_ts AS text[]), CAST(:hashes AS text[]), CAST(:errors AS text[]),"
    " CAST(:nows AS timestamptz[])) AS v(id, owner, ts, thread_ts, content_hash, error, now)"
    " WHERE d.id = v.id AND d.owner = v.owner RETURNING d.id"
)

# Rows handed to their owners, each (team, channel, kind, key) to its own (unfinished only).
_HAND_OVER = sa.text(
    "UPDATE deliveries AS d SET owner = v.owner, updated_at = :now FROM unnest("
    " CAST(:teams AS text[]), CAST(:channels AS text[]), CAST(:kinds AS text[]),"
    " CAST(:keys AS text[]), CAST(:owners AS text[])) AS v(team, channel, kind, key, owner)"
    " WHERE d.team_id = v.team AND d.channel_id = v.channel AND d.kind = v.kind"
    " AND d.key = v.key AND d.state IN ('pending', 'posting')"
)


@dataclass(frozen=True)
class Claim:
    """A deliverer (``owner``) about to take ``row`` as it read it (:meth:`Ledger.claim`)."""

    row: LedgerRow
    owner: str
    now: datetime


@dataclass(frozen=True)
class Finish:
    """A delivery posted: its row ``posted`` with its ``ts`` (:meth:`Ledger.mark`)."""

    row_id: int
    owner: str
    now: datetime
    ts: str
    thread_ts: str | None
    content_hash: str | None
    error: str | None


def claim_many(ledger: Ledger, conn: sa.Connection, claims: Sequence[Claim]) -> list[bool]:
    """:meth:`Ledger.claim` of each; of two claims of one row only the first can win, as
    one after the other."""
    if not ledger.is_postgres:
        return [ledger.claim(conn, c.row, c.owner, c.now) for c in claims]
    first = list({c.row.id: c for c in reversed(claims)}.values())
    params: dict[str, list[Any]] = {
        "ids": [c.row.id for c in first], "states": [c.row.state for c in first],
        "attempts": [c.row.attempts for c in first], "owners": [c.owner for c in first],
        "claimed": [claimed_at_of(c.row, c.now) for c in first],
        "nows": [aware(c.now, "now") for c in first],
    }  # fmt: skip
    taken = _ids(ledger, conn, _CLAIM_MANY, params, "claiming deliveries") if first else set()
    winners = {id(c) for c in first if c.row.id in taken}
    return [id(c) in winners for c in claims]


def finish_many(ledger: Ledger, conn: sa.Connection, finishes: Sequence[Finish]) -> list[bool]:
    """:meth:`Ledger.mark` of each as ``posted``; False where another took the row over."""
    if not ledger.is_postgres:
        return [_finish(ledger, conn, f) for f in finishes]
    params: dict[str, list[Any]] = {
        "ids": [f.row_id for f in finishes], "owners": [f.owner for f in finishes],
        "ts": [f.ts for f in finishes], "thread_ts": [f.thread_ts for f in finishes],
        "hashes": [f.content_hash for f in finishes], "errors": [f.error for f in finishes],
        "nows": [aware(f.now, "now") for f in finishes],
    }  # fmt: skip
    done = _ids(ledger, conn, _FINISH_MANY, params, "recording deliveries")
    return [f.row_id in done for f in finishes]


def hand_over(
    ledger: Ledger, conn: sa.Connection, owners: Sequence[tuple[Ident, str]], now: datetime
) -> None:
    """:meth:`Ledger.adopt` of each row by its own new owner (a fan-out's rows, each to the
    job that delivers it), in one statement."""
    if not ledger.is_postgres:
        for ident, owner in owners:
            ledger.adopt(conn, [ident], owner, now)
        return
    params: dict[str, Any] = {
        "teams": [i[0] for i, _ in owners], "channels": [i[1] for i, _ in owners],
        "kinds": [i[2] for i, _ in owners], "keys": [i[3] for i, _ in owners],
        "owners": [o for _, o in owners], "now": aware(now, "now"),
    }  # fmt: skip
    with ledger.errors("handing deliveries over"):
        conn.execute(_HAND_OVER, params)


def _finish(ledger: Ledger, conn: sa.Connection, f: Finish) -> bool:
    values = {"ts": f.ts, "thread_ts": f.thread_ts, "content_hash": f.content_hash}
    return ledger.mark(
        conn, f.row_id, f.owner, f.now, state=LedgerState.POSTED, error=f.error, **values
    )


def _ids(
    ledger: Ledger, conn: sa.Connection, stmt: sa.TextClause, params: dict[str, Any], doing: str
) -> set[int]:
    with ledger.errors(doing):
        return set(conn.execute(stmt, params).scalars())
