"""The pipeline's first three phases: fetch → parse → extract, a feed's bytes to episodes.

Shared by the poll (``bot.pipeline``) and the CLI's ``parse`` / ``render``; nothing here
touches the store or Slack. Parsing a feed near the size cap takes seconds of CPU, so
``read_feed`` runs parse + extract in a worker thread: the event loop (slash commands,
other shows' fetches) keeps going meanwhile. Each parse's input is bounded by the fetch's
``max_bytes``, and the parses at once by a ``parse_limit()`` gate: CPU-bound work beyond
the cores only queues, and the thread pool stays free for the store's calls and the slash
commands' answers.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

import httpx

from digests.extract import build_episodes
from digests.fetch import FetchResult, PrivatePolicy, fetch
from digests.models import Episode, ParsedSource
from digests.parse import parse_bytes


def parse_concurrency() -> int:
    """How many feeds may be parsed at once: a core each, at most four, so the default thread
    pool (``min(32, cores + 4)`` workers) always has workers left for everything else."""
    return min(os.cpu_count() or 1, 4)


def parse_limit() -> asyncio.Semaphore:
    return asyncio.Semaphore(parse_concurrency())


@dataclass(frozen=True)
class FeedRequest:
    """What to fetch: where, the validators from the last poll, the size cap, and whether
    the location (and every redirect hop) may be a local file or a non-public address."""

    location: str
    max_bytes: int
    etag: str | None = None
    last_modified: str | None = None
    allow_private: PrivatePolicy = True  # see digests.fetch.private_policy


@dataclass(frozen=True)
class FeedRead:
    """One fetched feed read into episodes (none when it was not modified)."""

    fetched: FetchResult
    episodes: tuple[Episode, ...] = ()


async def fetch_feed(client: httpx.AsyncClient, request: FeedRequest) -> FetchResult:
    """Phase 1: the feed's bytes (or "not modified"); raises ``DigestError`` for a bad feed."""
    return await fetch(
        client,
        request.location,
        etag=request.etag,
        last_modified=request.last_modified,
        max_bytes=request.max_bytes,
        allow_private=request.allow_private,
    )


def parse_feed(content: bytes, location: str, content_type: str | None = None) -> ParsedSource:
    """Phase 2: a feed or an episode page, parsed into raw entries (pure, CPU-bound)."""
    return parse_bytes(content, location, content_type)


def extract_episodes(parsed: ParsedSource, show: str, repo: str) -> tuple[Episode, ...]:
    """Phase 3: raw entries → episodes of ``show``, PR numbers pointing into ``repo``."""
    return tuple(build_episodes(parsed, show, repo))


def _parse_and_extract(fetched: FetchResult, location: str, show: str, repo: str) -> FeedRead:
    parsed = parse_feed(fetched.content or b"", location, fetched.content_type)
    return FeedRead(fetched, extract_episodes(parsed, show, repo))


async def read_feed(
    client: httpx.AsyncClient,
    request: FeedRequest,
    *,
    show: str,
    repo: str,
    parse_gate: asyncio.Semaphore | None = None,
) -> FeedRead:
    """Fetch, then parse and extract off the event loop, within ``parse_gate`` (see the
    module docstring)."""
    fetched = await fetch_feed(client, request)
    if fetched.status != "ok":
        return FeedRead(fetched)
    async with parse_gate or parse_limit():
        return await asyncio.to_thread(_parse_and_extract, fetched, request.location, show, repo)
