"""The transcript phase: an episode's ``<podcast:transcript>`` fetched once, stored, used.

Between extract and store in the poll. For every episode that links a transcript: the
stored one is used (its PRs and their whole sentences found in it, see
``digests.extract.episodes.with_transcript``); one not fetched yet is fetched — a few per poll,
newest first, with a cap of its own and as a stranger's URL whatever the feed's own policy
(``digests.sources.fetch.link_policy``: http(s) only, never a local file, a private address only at
the feed's own origin) — converted to text (``digests.parse.transcripts``) and
stored, failure included, so it is not fetched again. An episode whose transcript cannot
be had keeps the feed's excerpt. Never raises for the transcript's sake; the store's
errors are the store's.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import httpx

from digests.errors import FetchError
from digests.extract.episodes import with_transcript
from digests.extract.timings import pr_times
from digests.linked.chapters import attach_chapters
from digests.linked.documents import CONCURRENCY, MAX_ATTEMPTS, PER_POLL, due, fetch_link, lasting
from digests.models import Episode, PrTime, TranscriptLink, guid_key
from digests.parse.cues import transcript_cues
from digests.parse.text import MAX_TEXT
from digests.parse.transcripts import TRANSCRIPT_TYPES, transcript_text
from digests.sources.fetch import PrivatePolicy, link_policy
from digests.store import Store
from digests.store.transcripts import ChapterStore, TranscriptStore
from digests.types import MENTIONS, PrMode, StoredTranscript

log = logging.getLogger(__name__)

__all__ = [
    "MAX_TRANSCRIPT_BYTES",
    "TranscriptReport",
    "attach_transcripts",
    "choose_link",
    "decode_transcript",
    "linked_documents_phase",
]

# A two-hour episode's VTT is ~1.5 MB; anything much larger is not a transcript.
MAX_TRANSCRIPT_BYTES = 4 * 1024 * 1024
# Best first: cue formats and the namespace JSON are the transcript itself; HTML and plain
# text are sometimes a page about the episode.
_PREFERENCE = ("text/vtt", "application/x-subrip", "application/json", "text/html", "text/plain")
_CHARSET = re.compile(r"""charset\s*=\s*["']?([A-Za-z0-9_.:-]{1,40})""", re.I)
_NUL = re.compile("\x00")


@dataclass(frozen=True)
class TranscriptReport:
    """One show's pass: how many episodes link a transcript, how many got one (stored or
    fetched now), how many were fetched, and how many of those failed."""

    linked: int = 0
    used: int = 0
    fetched: int = 0
    failed: int = 0


def choose_link(links: Sequence[TranscriptLink]) -> TranscriptLink | None:
    """The link to fetch: the best known type, else the first link."""
    if not links:
        return None
    rank = {kind: i for i, kind in enumerate(_PREFERENCE)}

    def order(link: TranscriptLink) -> int:
        form = TRANSCRIPT_TYPES.get(link.type)
        canonical = next((k for k in _PREFERENCE if TRANSCRIPT_TYPES[k] == form), None)
        return rank[canonical] if canonical is not None else len(rank)

    return min(links, key=order)


def decode_transcript(content: bytes, content_type: str | None) -> str:
    """Bytes → text: BOM, then the server's charset, then UTF-8 (bad bytes replaced)."""
    for bom, name in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
                      (codecs.BOM_UTF16_BE, "utf-16")):  # fmt: skip
        if content.startswith(bom):
            return content.decode(name, "replace")
    m = _CHARSET.search(content_type or "")
    if m:
        try:
            return content.decode(m.group(1), "replace")
        except LookupError:
            pass
    return content.decode("utf-8", "replace")


def _read(body: str, kind: str, repo: str) -> tuple[str, tuple[PrTime, ...]]:
    """What was said, and where each PR is first named when the transcript is timed."""
    return transcript_text(body, kind), pr_times(transcript_cues(body, kind), repo)


async def _fetch_one(
    client: httpx.AsyncClient,
    link: TranscriptLink,
    *,
    repo: str,
    max_bytes: int,
    allow_private: PrivatePolicy,
) -> tuple[str, tuple[PrTime, ...]]:
    """The transcript's text and PR times; raises ``FetchError`` or ``ValueError`` (nothing
    readable)."""
    got = await fetch_link(client, link.url, max_bytes=max_bytes, allow_private=allow_private)
    body = decode_transcript(got.content or b"", got.content_type)
    kind = link.type or (got.content_type or "")
    # Conversion is CPU work on up to max_bytes: off the event loop.
    text, times = await asyncio.to_thread(_read, body, kind, repo)
    text = _NUL.sub("", text)[:MAX_TEXT]  # PostgreSQL text takes no NUL
    if not text.strip():
        raise ValueError("the transcript has no text")
    return text, times


async def _fetch_all(
    client: httpx.AsyncClient,
    show: str,
    repo: str,
    wanted: Sequence[tuple[str, TranscriptLink, StoredTranscript | None]],
    *,
    now: datetime,
    max_bytes: int,
    allow_private: PrivatePolicy,
) -> list[StoredTranscript]:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(
        key: str, link: TranscriptLink, before: StoredTranscript | None
    ) -> StoredTranscript:
        tries = (before.attempts if before is not None and before.url == link.url else 0) + 1
        async with gate:
            try:
                text, times = await _fetch_one(
                    client, link, repo=repo, max_bytes=max_bytes, allow_private=allow_private
                )
            except (FetchError, ValueError) as err:
                reason = err.reason if isinstance(err, FetchError) else str(err)
                log.info("transcript of %s %s unavailable: %s", show, key[:12], reason)
                attempts = MAX_ATTEMPTS if lasting(err) else tries
                return StoredTranscript(show, key, link.url, "failed", now, "", reason, attempts)
            except Exception as err:  # a bug of ours must not cost the show its poll
                log.exception("transcript of %s %s: conversion failed", show, key[:12])
                reason = f"unreadable transcript ({type(err).__name__})"
                return StoredTranscript(
                    show, key, link.url, "failed", now, "", reason, MAX_ATTEMPTS
                )
        return StoredTranscript(show, key, link.url, "ok", now, text, None, tries, times)

    return list(await asyncio.gather(*(one(k, link, b) for k, link, b in wanted)))


async def attach_transcripts(
    episodes: Sequence[Episode],
    *,
    show: str,
    repo: str,
    prs: PrMode = MENTIONS,
    client: httpx.AsyncClient,
    transcripts: TranscriptStore,
    now: datetime,
    allow_private: PrivatePolicy = False,
    max_bytes: int = MAX_TRANSCRIPT_BYTES,
    per_poll: int = PER_POLL,
) -> tuple[tuple[Episode, ...], TranscriptReport]:
    """``episodes`` with the transcripts they link (stored, or fetched now), in order."""
    linked = [
        (i, ep, link) for i, ep in enumerate(episodes) if (link := choose_link(ep.transcript_links))
    ]
    if not linked:
        return tuple(episodes), TranscriptReport()
    keys = {i: guid_key(ep.guid) for i, ep, _ in linked}
    stored = await asyncio.to_thread(transcripts.get, show, keys.values())
    newest = sorted(linked, key=lambda item: item[1].published_at, reverse=True)
    wanted = [
        (keys[i], link, stored.get(keys[i]))
        for i, _, link in newest
        if due(stored.get(keys[i]), link.url)
    ][:per_poll]
    fresh = await _fetch_all(
        client, show, repo, wanted, now=now, max_bytes=max_bytes, allow_private=allow_private
    )
    if fresh:
        await asyncio.to_thread(transcripts.save, fresh)
        stored.update({t.guid_key: t for t in fresh})

    def apply() -> tuple[list[Episode], int]:
        out = list(episodes)
        used = 0
        for i, ep, link in linked:
            got = stored.get(keys[i])
            if got is not None and got.status == "ok" and got.url == link.url:
                out[i] = with_transcript(ep, got.text, repo, prs)
                if got.pr_times:
                    out[i] = out[i].model_copy(update={"pr_times": got.pr_times})
                used += 1
        return out, used

    # PR extraction over whole transcripts is CPU work: off the event loop too.
    out, used = await asyncio.to_thread(apply)
    report = TranscriptReport(
        linked=len(linked),
        used=used,
        fetched=len(fresh),
        failed=sum(1 for t in fresh if t.status == "failed"),
    )
    return tuple(out), report


async def linked_documents_phase(
    store: Store,
    client: httpx.AsyncClient,
    episodes: Sequence[Episode],
    *,
    show: str,
    repo: str,
    prs: PrMode = MENTIONS,
    now: datetime,
    feed_location: str,
    feed_policy: PrivatePolicy,
) -> tuple[Episode, ...]:
    """The pipeline's call: the transcripts, then the chapters, the episodes link, over the
    store, the pass logged. Links are fetched by ``link_policy`` of the feed's location and
    policy, never the feed's own."""
    links = link_policy(feed_location, feed_policy)
    out, report = await attach_transcripts(
        episodes,
        show=show,
        repo=repo,
        prs=prs,
        client=client,
        transcripts=TranscriptStore(store),
        now=now,
        allow_private=links,
    )
    if report.fetched:
        log.info(
            "transcripts of %s: %d fetched (%d failed), %d of %d linked in use",
            show, report.fetched, report.failed, report.used, report.linked,
        )  # fmt: skip
    return await attach_chapters(
        out, show=show, client=client, chapters=ChapterStore(store), now=now, allow_private=links
    )
