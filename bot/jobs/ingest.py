"""The pipeline's first three phases: fetch → parse → extract, a feed's bytes to episodes.

Shared by the poll (``bot.jobs.pipeline``) and the CLI's ``parse`` / ``render``; nothing here
touches the store or Slack. Parsing a feed near the size cap takes seconds of CPU, so
``read_feed`` runs parse + extract in a worker thread: the event loop (slash commands,
other shows' fetches) keeps going meanwhile. Each parse's input is bounded by the fetch's
``max_bytes``, and the parses at once by a ``parse_limit()`` gate: CPU-bound work beyond
the cores only queues, and the thread pool stays free for the store's calls and the slash
commands' answers.

A poll passes ``known``, the show's stored item hashes (asked only once the feed has
answered 200): an item whose bytes hash as one of them is skipped before any text work
(``digests.parse.item_hashes``); ``FeedRead.skipped`` counts those.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass

import httpx

from digests.decide.update import unstorable
from digests.extract.episodes import build_episodes
from digests.models import Episode, ParsedSource
from digests.parse import parse_bytes
from digests.parse.item_hashes import ItemHashes
from digests.sources.fetch import FetchResult, PrivatePolicy, fetch
from digests.types import MENTIONS, PrMode

log = logging.getLogger(__name__)


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
    allow_private: PrivatePolicy = True  # see digests.sources.fetch.private_policy


@dataclass(frozen=True)
class FeedRead:
    """One fetched feed read into episodes (none when it was not modified); ``skipped``: its
    items not read again because their bytes hash as stored ones (they are unchanged)."""

    fetched: FetchResult
    episodes: tuple[Episode, ...] = ()
    skipped: int = 0
    lenient: tuple[str, ...] = ()  # not well-formed, read leniently: what was wrong
    unstorable: int = 0  # items read but left out: no column could take them (logged)


def item_salt(show: str, repo: str, prs: PrMode = MENTIONS) -> str:
    """What an item's episode depends on besides the feed: the show it is filed under, the
    repo its PR numbers point into and which PRs count (a change reads every item again)."""
    return f"{show}\x00{repo}" if prs == MENTIONS else f"{show}\x00{repo}\x00{prs}"


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


# The item hashes of the poll whose parse runs in this context: parse_feed's default, so
# the phase keeps its (content, location, content_type) call, which the CLI and anything
# wrapping the phase (a gate, a probe) use as it is.
_POLL_ITEMS: ContextVar[ItemHashes | None] = ContextVar("poll_item_hashes", default=None)


def parse_feed(
    content: bytes,
    location: str,
    content_type: str | None = None,
    items: ItemHashes | None = None,
) -> ParsedSource:
    """Phase 2: a feed or an episode page, parsed into raw entries (pure, CPU-bound);
    with ``items`` (by default the poll's), each item hashed and the known ones skipped."""
    chosen = items if items is not None else _POLL_ITEMS.get()
    return parse_bytes(content, location, content_type, items=chosen)


def extract_episodes(
    parsed: ParsedSource, show: str, repo: str, prs: PrMode = MENTIONS
) -> tuple[Episode, ...]:
    """Phase 3: raw entries → episodes of ``show``, PR numbers pointing into ``repo`` (the
    PRs the show's ``prs`` setting counts)."""
    return tuple(build_episodes(parsed, show, repo, prs))


def _parse_and_extract(
    fetched: FetchResult,
    location: str,
    show: str,
    repo: str,
    items: ItemHashes | None,
    prs: PrMode = MENTIONS,
) -> FeedRead:
    token = _POLL_ITEMS.set(items)
    try:
        parsed = parse_feed(fetched.content or b"", location, fetched.content_type)
    finally:
        _POLL_ITEMS.reset(token)
    kept, refused = storable(show, extract_episodes(parsed, show, repo, prs))
    return FeedRead(fetched, kept, len(parsed.skipped), parsed.lenient, refused)


def storable(show: str, episodes: Iterable[Episode]) -> tuple[tuple[Episode, ...], int]:
    """The episodes the store can take, and how many it cannot (one line says which and
    why): one bad item is left out, the rest of the feed goes on."""
    kept: list[Episode] = []
    refused: list[str] = []
    for episode in episodes:
        reason = unstorable(episode)
        if reason is None:
            kept.append(episode)
        else:
            refused.append(f"{episode.guid!r}: {reason}")
    if refused:
        log.warning(
            "feed %s: %d item%s not stored: %s",
            show, len(refused), "" if len(refused) == 1 else "s", "; ".join(refused[:3]),
        )  # fmt: skip
    return tuple(kept), len(refused)


async def read_feed(
    client: httpx.AsyncClient,
    request: FeedRequest,
    *,
    show: str,
    repo: str,
    prs: PrMode = MENTIONS,
    parse_gate: asyncio.Semaphore | None = None,
    known: Callable[[], Awaitable[Mapping[str, str]]] | None = None,
) -> FeedRead:
    """Fetch, then parse and extract off the event loop, within ``parse_gate`` (see the
    module docstring); ``known``, asked after a 200, gives the stored item hashes."""
    fetched = await fetch_feed(client, request)
    if fetched.status != "ok":
        return FeedRead(fetched)
    items = ItemHashes(item_salt(show, repo, prs), await known()) if known is not None else None
    async with parse_gate or parse_limit():
        return await asyncio.to_thread(
            _parse_and_extract, fetched, request.location, show, repo, items, prs
        )
