"""What the web processes share about answers: those shown with a Share button, and the
version of the subscriptions that answers about a channel's shows were made under."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from digests.store.database import Database, aware
from digests.store.schema import answers_version, shared_answers

# An ephemeral reply stays on screen until the person dismisses it or reloads Slack; a day
# covers reading one and deciding to share it (after that, the command runs again).
KEEP_SHARED = timedelta(days=1)

_VERSION = sa.select(answers_version.c.version).where(answers_version.c.id == 1)


class AnswersMixin:
    _db: Database

    def answers_version(self) -> int:
        """Grows with every write to the subscriptions, by any process (one indexed read)."""
        action = "reading the answers' version"
        if self._db.dialect != "postgresql":
            with self._db.transaction(action, write=False) as conn:
                return int(conn.execute(_VERSION).scalar() or 0)
        # Asked for on every command about a channel's shows: in autocommit, one round trip
        # after the pool's ping, where a transaction adds BEGIN and COMMIT.
        with self._db.errors(action), self._db.engine.connect() as conn:
            read = conn.execution_options(isolation_level="AUTOCOMMIT").execute(_VERSION)
            return int(read.scalar() or 0)

    def keep_answer(self, token: str, message: dict[str, Any], now: datetime) -> None:
        """Remember the answer a Share button names (``token``: its content's hash, so the
        same answer shown again is one row, its time renewed): one upsert. Older ones than
        ``KEEP_SHARED`` are forgotten in the same transaction, by one call in sixteen (the
        tokens' last hex digit): a day's answers cost one delete, not one each."""
        now = aware(now, "now")
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        insert = pg_insert if self._db.dialect == "postgresql" else sqlite_insert
        stmt = insert(shared_answers).values(token=token[:64], message=data, shown_at=now)
        upsert = stmt.on_conflict_do_update(
            index_elements=["token"], set_={"shown_at": stmt.excluded.shown_at}
        )
        with self._db.transaction("keeping a shared answer") as conn:
            if token.endswith("0"):
                old = shared_answers.c.shown_at < now - KEEP_SHARED
                conn.execute(sa.delete(shared_answers).where(old))
            conn.execute(upsert)

    def shared_answer(self, token: str) -> dict[str, Any] | None:
        """The answer kept under ``token``, or None (never kept, or forgotten)."""
        with self._db.transaction("reading a shared answer", write=False) as conn:
            data = conn.execute(
                sa.select(shared_answers.c.message).where(shared_answers.c.token == token[:64])
            ).scalar()
        try:
            value = json.loads(data) if data is not None else None
        except ValueError:  # not what keep_answer wrote: as good as forgotten
            return None
        return value if isinstance(value, dict) else None
