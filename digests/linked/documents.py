"""What the transcript and chapters phases share: a document a feed links to is fetched
as a stranger's URL (``digests.sources.fetch.link_policy``), a few new fetches per show per poll,
and a failure stored so it is asked again only while trying again may mend it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from digests.errors import FeedHTTPError, FeedUnavailable, FetchError
from digests.sources.fetch import FetchResult, PrivatePolicy, fetch
from digests.types import StoredChapters, StoredTranscript

__all__ = ["CONCURRENCY", "MAX_ATTEMPTS", "PER_POLL", "TIMEOUT", "due", "fetch_link", "lasting"]

# New fetches per show per poll: a first poll of a long back catalogue spreads its
# transcripts over the following polls instead of fetching hundreds at once.
PER_POLL = 10
CONCURRENCY = 4
MAX_ATTEMPTS = 3
TIMEOUT = 60.0


def due(stored: StoredTranscript | StoredChapters | None, url: str) -> bool:
    """Whether a linked document is to be fetched: never fetched, its link changed, or a
    failure that may mend tried fewer than ``MAX_ATTEMPTS`` times."""
    if stored is None or stored.url != url:
        return True
    return stored.status == "failed" and stored.attempts < MAX_ATTEMPTS


def lasting(err: Exception) -> bool:
    """A failure trying again will not mend: a 4xx, the size cap, the address guard, a
    document with nothing readable. Timeouts, 5xx and 429s are tried again, a few times."""
    if isinstance(err, FeedUnavailable):
        return False
    if isinstance(err, FeedHTTPError):
        return 400 <= err.status < 500
    if isinstance(err, FetchError):
        reason = err.reason
        return any(
            s in reason
            for s in (
                "larger than", "private address", "local files", "invalid URL", "URL scheme",
            )
        )
    return True


async def fetch_link(
    client: httpx.AsyncClient, url: str, *, max_bytes: int, allow_private: PrivatePolicy
) -> FetchResult:
    """A document a feed links to, as a stranger's URL; raises ``FetchError``."""
    if urlsplit(url).scheme not in ("http", "https"):
        # fetch() reads paths and file: URLs for the operator's own feeds; a link in a feed
        # is a stranger's, so a file named there (/proc/self/environ) must never be read.
        raise FetchError(url, "not an http(s) link; local files are not allowed here")
    return await fetch(
        client, url, max_bytes=max_bytes, allow_private=allow_private, total_timeout=TIMEOUT
    )
