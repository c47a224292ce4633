"""``/readyz``: whether this process can do its job now, check by check.

``/healthz`` is liveness (the store answers); readiness asks more: the database answers
and is migrated to the newest revision, Slack accepted the credentials once, and (a clock)
the scheduler is running. The answer is JSON, one line per check, 200 or 503.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from digests.store import Store
from digests.store.database import head_revision

# A check that takes longer than this is not ready (a load balancer's probe times out).
CHECK_TIMEOUT = 2.0


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


Probe = Callable[[], Awaitable[tuple[bool, str]]]


def _revision(store: Store) -> str | None:
    with store.engine.connect() as conn:
        if not sa.inspect(conn).has_table("alembic_version"):
            return None
        rows = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all()
        return str(rows[0]) if len(rows) == 1 else None


def database_probe(store: Store) -> Probe:
    async def probe() -> tuple[bool, str]:
        try:
            found = await asyncio.to_thread(_revision, store)
        except sa.exc.SQLAlchemyError as exc:
            return (False, f"no answer: {type(exc).__name__}")
        head = head_revision()
        if found != head:
            return (False, f"at revision {found or 'none'}, head is {head}")
        return (True, f"migrated to {head}")

    return probe


class SlackProbe:
    """Slack accepted the credentials once (``auth.test``); asked again on each probe until
    it has, never after. ``call`` None: nothing to check (no bot token)."""

    def __init__(self, call: Callable[[], Awaitable[Any]] | None) -> None:
        self.call = call
        self.accepted = call is None
        self.detail = "no bot token" if call is None else "credentials accepted"

    def accept(self) -> None:
        """Someone else saw Slack accept the token (the clock's start-up auth.test)."""
        self.accepted = True
        self.detail = "credentials accepted"

    async def __call__(self) -> tuple[bool, str]:
        if self.accepted:
            return True, self.detail
        assert self.call is not None
        try:
            await self.call()
        except Exception as exc:  # slack_sdk raises several types; only the kind is shown
            error = getattr(getattr(exc, "response", None), "data", None)
            why = error.get("error") if isinstance(error, dict) else type(exc).__name__
            return False, f"auth.test not accepted: {why}"
        self.accepted = True
        return True, "credentials accepted"


def flag_probe(up: Callable[[], bool], yes: str, no: str) -> Probe:
    async def probe() -> tuple[bool, str]:
        ok = up()
        return ok, yes if ok else no

    return probe


async def run_checks(probes: Mapping[str, Probe]) -> list[Check]:
    async def one(name: str, probe: Probe) -> Check:
        try:
            ok, detail = await asyncio.wait_for(probe(), CHECK_TIMEOUT)
        except TimeoutError:
            ok, detail = False, f"no answer in {CHECK_TIMEOUT:.0f} s"
        return Check(name, ok, detail)

    return list(await asyncio.gather(*(one(n, p) for n, p in probes.items())))


def render(checks: Sequence[Check]) -> tuple[bytes, int]:
    """One JSON document, a line per check: ``{"ready": …, "checks": [ …, … ]}``."""
    ready = all(c.ok for c in checks)
    lines = [json.dumps({"check": c.name, "ok": c.ok, "detail": c.detail}) for c in checks]
    body = f'{{"ready": {json.dumps(ready)}, "checks": [\n' + ",\n".join(lines) + "\n]}\n"
    return body.encode(), 200 if ready else 503
