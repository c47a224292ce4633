"""The chapters phase: an episode's ``<podcast:chapters>`` document fetched once, stored,
used — beside the transcript phase, with the same rules (``digests.linked.documents``): a few
new fetches per poll, newest first, a cap of its own, as a stranger's URL, failures stored
so they are not asked again. Never raises for the chapters' sake.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime

import httpx

from digests.errors import FetchError
from digests.linked.documents import CONCURRENCY, MAX_ATTEMPTS, PER_POLL, due, fetch_link, lasting
from digests.models import Chapter, Episode, guid_key
from digests.parse.chapters import json_chapters
from digests.sources.fetch import PrivatePolicy
from digests.store.transcripts import ChapterStore
from digests.types import StoredChapters

log = logging.getLogger(__name__)

__all__ = ["MAX_CHAPTERS_BYTES", "attach_chapters"]

# Chapters documents are a few KB; a hundred chapters with long titles stay far below this.
MAX_CHAPTERS_BYTES = 512 * 1024


async def _read_one(
    client: httpx.AsyncClient, url: str, *, max_bytes: int, allow_private: PrivatePolicy
) -> tuple[Chapter, ...]:
    got = await fetch_link(client, url, max_bytes=max_bytes, allow_private=allow_private)
    body = (got.content or b"").decode("utf-8", "replace")
    chapters = await asyncio.to_thread(json_chapters, body)
    if not chapters:
        raise ValueError("no chapters in the document")
    return chapters


async def _fetch_all(
    client: httpx.AsyncClient,
    show: str,
    wanted: Sequence[tuple[str, str, StoredChapters | None]],
    *,
    now: datetime,
    max_bytes: int,
    allow_private: PrivatePolicy,
) -> list[StoredChapters]:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(key: str, url: str, before: StoredChapters | None) -> StoredChapters:
        tries = (before.attempts if before is not None and before.url == url else 0) + 1
        async with gate:
            try:
                chapters = await _read_one(
                    client, url, max_bytes=max_bytes, allow_private=allow_private
                )
            except (FetchError, ValueError) as err:
                reason = err.reason if isinstance(err, FetchError) else str(err)
                log.info("chapters of %s %s unavailable: %s", show, key[:12], reason)
                attempts = MAX_ATTEMPTS if lasting(err) else tries
                return StoredChapters(show, key, url, "failed", now, (), reason, attempts)
        return StoredChapters(show, key, url, "ok", now, chapters, None, tries)

    return list(await asyncio.gather(*(one(k, url, b) for k, url, b in wanted)))


async def attach_chapters(
    episodes: Sequence[Episode],
    *,
    show: str,
    client: httpx.AsyncClient,
    chapters: ChapterStore,
    now: datetime,
    allow_private: PrivatePolicy = False,
    max_bytes: int = MAX_CHAPTERS_BYTES,
    per_poll: int = PER_POLL,
) -> tuple[Episode, ...]:
    """``episodes`` with the chapters they link (stored, or fetched now), in order."""
    linked = [(i, ep, ep.chapters_url) for i, ep in enumerate(episodes) if ep.chapters_url]
    if not linked:
        return tuple(episodes)
    keys = {i: guid_key(ep.guid) for i, ep, _ in linked}
    stored = await asyncio.to_thread(chapters.get, show, keys.values())
    newest = sorted(linked, key=lambda item: item[1].published_at, reverse=True)
    wanted = [
        (keys[i], url, stored.get(keys[i])) for i, _, url in newest if due(stored.get(keys[i]), url)
    ][:per_poll]
    fresh = await _fetch_all(
        client, show, wanted, now=now, max_bytes=max_bytes, allow_private=allow_private
    )
    if fresh:
        await asyncio.to_thread(chapters.save, fresh)
        stored.update({c.guid_key: c for c in fresh})
    out = list(episodes)
    for i, ep, url in linked:
        got = stored.get(keys[i])
        if got is not None and got.status == "ok" and got.url == url and got.chapters:
            out[i] = ep.model_copy(update={"chapters": got.chapters})
    return tuple(out)
