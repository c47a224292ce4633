"""``held_alone``: one holder at a time across processes, and a holder that dies drops it
(what keeps two workers' ``recover`` from retrying one stalled job twice)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from digests.store.jobs import held_alone

NAME = "digestbot:test-lock"


def test_one_holder_at_a_time_and_a_holder_gone_drops_it(db_url: str) -> None:
    first, second = (sa.create_engine(db_url, poolclass=NullPool) for _ in range(2))
    try:
        if first.dialect.name != "postgresql":
            with held_alone(first, NAME) as a, held_alone(second, NAME) as b:
                assert a and b  # SQLite: one process, nothing to share
            return
        with held_alone(first, NAME) as a:
            assert a
            with held_alone(second, NAME) as b:
                assert not b  # another process holds it
        with held_alone(second, NAME) as b:
            assert b  # released at the end of the first's block
        # A holder that dies without unlocking: its connection closes, the lock goes.
        with first.connect() as conn:
            locked = conn.execute(sa.select(sa.func.pg_try_advisory_lock(sa.func.hashtext(NAME))))
            assert locked.scalar() is True
            with held_alone(second, NAME) as b:
                assert not b
        with held_alone(second, NAME) as b:
            assert b
    finally:
        first.dispose()
        second.dispose()
