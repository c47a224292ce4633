"""The GitHub edge: pull-request details over HTTP, within GitHub's rate limits.

With a token, GraphQL batches (≤ 100 PRs a query, across repositories); without one, REST
``GET /repos/{owner}/{repo}/pulls/{n}`` with ``If-None-Match`` (a 304 costs no rate limit).
Calls are made one at a time — concurrent calls trip GitHub's secondary limits — and a
client never raises for GitHub's sake: :meth:`GitHubClient.fetch` returns what it learnt and,
when it had to stop (rate limited, GitHub down), why. What it did not get is asked for again
on a later poll; a rate limit's reset time is kept, so no call is made before it.

Plain httpx rather than githubkit or gidgethub: two endpoints, and what matters here —
ETags kept in our store, 304s and 404s remembered, a stop instead of a long wait — is
policy either library would have to be bent to; httpx is already the project's client.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

from digests.enrich import wire
from digests.types import PrDetails, PrKey

USER_AGENT = "digestbot/0.1 (+https://github.com/digestbot/digestbot)"
API_VERSION = "2022-11-28"
# GitHub's advice for a secondary limit that names no Retry-After: wait at least a minute.
SECONDARY_WAIT = 60.0
_RETRY_STATUSES = frozenset({500, 502, 503, 504})

Sleep = Callable[[float], Awaitable[None]]


@dataclass
class FetchReport:
    """One :meth:`GitHubClient.fetch`: details learnt (fresh, 304-confirmed or missing), the
    HTTP calls made, and why it stopped early (None: it asked about everything)."""

    details: list[PrDetails] = field(default_factory=list)
    calls: int = 0
    not_modified: int = 0
    stopped: str | None = None


class _Stop(Exception):
    """This run cannot go on (rate limited past ``max_wait``, GitHub failing)."""


def _seconds(value: str | None) -> float | None:
    if value is None or not value.strip():
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


def _header_int(response: httpx.Response, name: str) -> int | None:
    try:
        return int(response.headers[name])
    except (KeyError, ValueError):
        return None


class GitHubClient:
    """PR details from ``api_url`` (``GITHUB_API_URL``); GraphQL when ``token`` is set.

    ``max_wait``: the longest a fetch sleeps for a rate limit before giving up for now;
    ``attempts``/``backoff``: retries of 5xx answers and timeouts (``backoff``·2ⁿ seconds).
    """

    def __init__(
        self,
        http: httpx.AsyncClient,
        api_url: str,
        token: str | None = None,
        *,
        batch_size: int = wire.MAX_BATCH,
        attempts: int = 3,
        backoff: float = 0.5,
        max_wait: float = 60.0,
        sleep: Sleep = asyncio.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._http = http
        self.api_url = api_url.rstrip("/")
        self._token = token or None
        self.batch_size = batch_size
        self.attempts = max(1, attempts)
        self.backoff = backoff
        self.max_wait = max_wait
        self._sleep = sleep
        self._clock = clock
        self._blocked_until = 0.0  # epoch seconds: a rate limit's reset
        self._lock = asyncio.Lock()  # one fetch at a time per client: no bursts

    @property
    def uses_graphql(self) -> bool:
        return self._token is not None

    @property
    def blocked_until(self) -> float:
        return self._blocked_until

    def _headers(self) -> dict[str, str]:
        headers = {
            "Accept": "application/vnd.github+json",
            "User-Agent": USER_AGENT,
            "X-GitHub-Api-Version": API_VERSION,
        }
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        return headers

    async def fetch(
        self, wanted: Sequence[PrKey], known: Mapping[PrKey, PrDetails], now: datetime
    ) -> FetchReport:
        """Ask about ``wanted`` (in that order: put the most urgent first); ``known`` gives
        the ETags to revalidate with. Never raises for an HTTP failure."""
        report = FetchReport()
        keys = list(dict.fromkeys(wanted))
        if not keys:
            return report
        async with self._lock:
            try:
                if self.uses_graphql:
                    await self._graphql(keys, now, report)
                else:
                    await self._rest(keys, known, now, report)
            except _Stop as stop:
                report.stopped = str(stop)
        return report

    # -- GraphQL ----------------------------------------------------------------------------
    async def _graphql(self, keys: list[PrKey], now: datetime, report: FetchReport) -> None:
        url = wire.graphql_url(self.api_url)
        for batch in wire.batches(keys, self.batch_size):
            query, variables, paths = wire.batch_query(batch)
            response = await self._call(
                "POST", url, report, json={"query": query, "variables": variables}
            )
            body = wire.json_body(response.content)
            if wire.rate_limited(body):
                wait = self._block(response, default=SECONDARY_WAIT)
                self._blocked_until = max(self._blocked_until, self._clock() + wait)
                raise _Stop(self._blocked_reason())
            if response.status_code != 200:
                raise _Stop(f"GitHub GraphQL answered HTTP {response.status_code}")
            found, gone = wire.read_graphql(body, paths, now)
            report.details.extend(found)
            report.details.extend(wire.missing(key, now) for key in gone)

    # -- REST -------------------------------------------------------------------------------
    async def _rest(
        self,
        keys: list[PrKey],
        known: Mapping[PrKey, PrDetails],
        now: datetime,
        report: FetchReport,
    ) -> None:
        for key in keys:
            before = known.get(key)
            headers = {}
            if before is not None and before.etag and not before.missing:
                headers["If-None-Match"] = before.etag
            url = f"{self.api_url}/repos/{key[0]}/pulls/{key[1]}"
            response = await self._call("GET", url, report, headers=headers)
            status = response.status_code
            if status == 304 and before is not None:
                report.not_modified += 1
                report.details.append(replace(before, fetched_at=now))
            elif status == 200:
                body = wire.json_body(response.content)
                report.details.append(wire.from_rest(key, body, now, response.headers.get("etag")))
            elif status in (404, 410):
                report.details.append(wire.missing(key, now))
            elif status in (401, 403):
                raise _Stop(f"GitHub refused access (HTTP {status})")
            # Anything else (422 for a bad number…) is left for a later poll.

    # -- one call, with limits and retries ----------------------------------------------------
    async def _call(
        self,
        method: str,
        url: str,
        report: FetchReport,
        *,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
    ) -> httpx.Response:
        """The answer to one request once it is neither a rate limit nor a failure."""
        failure = "no answer"
        for attempt in range(self.attempts):
            if self._clock() < self._blocked_until:
                raise _Stop(self._blocked_reason())
            try:
                response = await self._http.request(
                    method, url, headers={**self._headers(), **(headers or {})}, json=json
                )
            except httpx.TimeoutException:
                report.calls += 1
                failure = "timed out"
            except httpx.TransportError as exc:
                report.calls += 1
                failure = f"unreachable ({type(exc).__name__})"
            else:
                report.calls += 1
                wait = self._rate_wait(response)
                if wait is not None:
                    if wait > self.max_wait:
                        raise _Stop(self._blocked_reason())
                    failure = "rate limited"
                    await self._sleep(wait)
                    continue
                if response.status_code not in _RETRY_STATUSES:
                    self._note_budget(response)
                    return response
                failure = f"HTTP {response.status_code}"
            if attempt + 1 < self.attempts:
                await self._sleep(self.backoff * 2**attempt)
        raise _Stop(f"GitHub unavailable: {failure}")

    def _rate_wait(self, response: httpx.Response) -> float | None:
        """Seconds to wait when ``response`` is a rate limit (primary or secondary), else None.
        A wait longer than ``max_wait`` is also remembered as a block."""
        if response.status_code not in (403, 429):
            return None
        retry_after = _seconds(response.headers.get("retry-after"))
        remaining = _header_int(response, "x-ratelimit-remaining")
        if retry_after is None and remaining != 0:
            text = response.text.lower() if response.status_code == 403 else "rate limit"
            if "rate limit" not in text:
                return None  # a plain "forbidden": not a limit
        return self._block(response, default=SECONDARY_WAIT)

    def _block(self, response: httpx.Response, *, default: float) -> float:
        now = self._clock()
        retry_after = _seconds(response.headers.get("retry-after"))
        reset = _header_int(response, "x-ratelimit-reset")
        if retry_after is not None:
            wait = retry_after
        elif _header_int(response, "x-ratelimit-remaining") == 0 and reset is not None:
            wait = max(0.0, reset - now)
        else:
            wait = default
        if wait > self.max_wait:
            self._blocked_until = max(self._blocked_until, now + wait)
        return wait

    def _note_budget(self, response: httpx.Response) -> None:
        # The last call of the budget succeeded; the next would be refused until the reset.
        if _header_int(response, "x-ratelimit-remaining") == 0:
            reset = _header_int(response, "x-ratelimit-reset")
            if reset is not None:
                self._blocked_until = max(self._blocked_until, float(reset))

    def _blocked_reason(self) -> str:
        wait = max(0.0, self._blocked_until - self._clock())
        return f"GitHub rate limit: next call in {wait:.0f} s"
