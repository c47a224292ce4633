"""The enrich phase: PR details for stored episodes, asked of GitHub only when due.

Reads what is stored, asks the client for what the refresh policy says is due
(``digests.pulls``), stores the answers and reports which PRs now read differently — the
caller re-renders the digests naming them (their content hash changes, so the ledger's edit
path updates the posted messages). Never raises for GitHub's sake.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from digests.enrich.client import GitHubClient
from digests.models import Episode
from digests.pulls import due_for_refresh, named_prs, shown_fields
from digests.store.pr_details import PrDetailsStore
from digests.types import PrKey


@dataclass(frozen=True)
class EnrichReport:
    named: int = 0
    asked: int = 0
    learnt: int = 0
    calls: int = 0
    not_modified: int = 0
    changed: frozenset[PrKey] = frozenset()
    stopped: str | None = None


async def enrich(
    client: GitHubClient,
    prs: PrDetailsStore,
    episodes: Iterable[tuple[Episode, str]],
    now: datetime,
) -> EnrichReport:
    """``episodes``: (episode, its show's repo). Details of the PRs they name, refreshed."""
    named = named_prs(episodes)
    if not named:
        return EnrichReport()
    stored = await asyncio.to_thread(prs.get, named)
    wanted = due_for_refresh(named, stored, now)
    if not wanted:
        return EnrichReport(named=len(named))
    fetched = await client.fetch(wanted, stored, now)
    if fetched.details:
        await asyncio.to_thread(prs.save, fetched.details)
    changed = frozenset(
        d.key for d in fetched.details if shown_fields(d) != shown_fields(stored.get(d.key))
    )
    return EnrichReport(
        named=len(named),
        asked=len(wanted),
        learnt=len(fetched.details),
        calls=fetched.calls,
        not_modified=fetched.not_modified,
        changed=changed,
        stopped=fetched.stopped,
    )
