"""Fetching feeds and pages: HTTP(S) with conditional GET, or a local file.

Guards every feed needs, because feeds are added by users and served by strangers: a size
cap enforced while streaming, redirects followed by hand so each hop is re-checked (scheme,
and with ``allow_private=False`` no private/loopback/link-local/reserved addresses; see
:func:`private_policy` for feeds the operator configured), a bounded number of hops,
timeouts, a body decoded a bounded piece at a time (a gzip bomb stops at the cap, see
:mod:`digests.sources.decoding`), and one clear :class:`FetchError` line for each failure —
with the URL redacted (no credentials, no query), because that line is shown to people.
Credentials in a feed URL follow redirects to the same origin only.

The private-address check runs twice: before each hop (a clear error, with any client) and,
for clients made by :func:`make_http_client`, again inside the connection itself, which then
connects to the very address it checked — so a DNS answer that changes between the check and
the connect (rebinding) cannot smuggle a request to a private address.
"""

from __future__ import annotations

import asyncio
import functools
import mimetypes
import socket
import ssl
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path
from typing import Literal
from urllib.parse import SplitResult, unquote, urljoin, urlsplit, urlunsplit
from urllib.request import url2pathname

import httpcore
import httpx

from digests.errors import FeedHTTPError, FeedUnavailable, FetchError
from digests.redact import redact_url
from digests.sources.addresses import is_public_address, names_private_host
from digests.sources.decoding import BoundedDecoder, DecodingRefused

USER_AGENT = "digestbot/0.1 (+https://github.com/digestbot/digestbot)"
ACCEPT = (
    "application/rss+xml, application/atom+xml, application/xml;q=0.9, text/xml;q=0.9, "
    "text/html;q=0.8, text/plain;q=0.7, */*;q=0.5"
)
DEFAULT_MAX_BYTES = 20 * 1024 * 1024
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class FetchResult:
    """What a fetch got. On ``not_modified``, ``content`` is None and ``etag`` /
    ``last_modified`` are only what the 304 re-sent (often nothing): keep the ones you had.
    ``retry_after`` and ``max_age`` are seconds, from Retry-After and Cache-Control."""

    status: Literal["ok", "not_modified"]
    content: bytes | None
    url: str
    content_type: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    retry_after: float | None = None
    max_age: float | None = None


# pure helpers ------------------------------------------------------------------------------


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a Retry-After value (delta-seconds or HTTP-date), or None."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    if value.isdigit():
        return float(int(value))
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None  # RFC 9110 dates are always GMT; anything else is not a date we trust
    return max(0.0, when.timestamp() - now)


def parse_max_age(cache_control: str | None) -> float | None:
    """``max-age`` seconds from a Cache-Control value, or None (also for no-store/no-cache)."""
    if not cache_control:
        return None
    max_age: float | None = None
    for directive in cache_control.split(","):
        name, _, arg = directive.strip().partition("=")
        name = name.strip().lower()
        if name in ("no-store", "no-cache"):
            return None
        if name == "max-age":
            arg = arg.strip().strip('"')
            if arg.isdigit():
                max_age = float(int(arg))
    return max_age


def human_size(n: int) -> str:
    mb = 1024 * 1024
    if n >= mb and n % mb == 0:
        return f"{n // mb} MB"
    if n >= 1024 and n % 1024 == 0:
        return f"{n // 1024} KB"
    return f"{n} bytes"


# edges -------------------------------------------------------------------------------------


# Set while a fetch sends a hop that must reach a public address; read by the guard below.
_public_only: ContextVar[bool] = ContextVar("digestbot_fetch_public_only", default=False)


@contextmanager
def forbid_private_addresses(forbid: bool = True) -> Iterator[None]:
    """Inside this block, clients from :func:`make_http_client` connect to public addresses
    only (checked at connect time, on the address actually used)."""
    token = _public_only.set(forbid)
    try:
        yield
    finally:
        _public_only.reset(token)


class PrivateAddressRefused(Exception):
    """Raised inside the transport; :func:`fetch` turns it into a FetchError."""

    def __init__(self, host: str, address: str) -> None:
        super().__init__(f"refusing private address {address} for host {host!r}")
        self.host = host
        self.address = address


async def public_address(host: str, port: int) -> str:
    """Resolve ``host``; return an address to connect to if every address is public.

    All addresses are checked, not just the first, because the connection may use any.
    Raises :class:`PrivateAddressRefused` or ``socket.gaierror``.
    """
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses = [str(info[4][0]) for info in infos]
    for address in addresses:
        if not is_public_address(address):
            raise PrivateAddressRefused(host, address)
    return addresses[0]


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """Connects to the address it checked, when the running fetch forbids private ones."""

    def __init__(self) -> None:
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if _public_only.get():
            try:
                host = await public_address(host, port)
            except socket.gaierror as exc:
                # As httpcore reports it, so httpx maps it and fetch words it the same way.
                raise httpcore.ConnectError(f"cannot resolve host {host!r}") from exc
        return await self._inner.connect_tcp(
            host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        return await self._inner.connect_unix_socket(
            path, timeout=timeout, socket_options=socket_options
        )

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


@functools.cache
def tls_context(*, trust_env: bool = False) -> ssl.SSLContext:
    """One verifying TLS context per process (per ``trust_env``), shared by every client.

    Building one reads and parses the whole CA bundle; httpx uses a context it is given
    as it is, and a context is only read once configured, so clients share it safely."""
    return httpx.create_ssl_context(trust_env=trust_env)


class _GuardedTransport(httpx.AsyncHTTPTransport):
    def __init__(self) -> None:
        super().__init__(verify=tls_context(), trust_env=False)
        # httpx has no public hook for the network backend; its pool is the documented
        # httpcore one, so swap it for one with the guard (tests cover the guard end to end).
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=tls_context(),
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=_GuardedBackend(),
        )


# Seconds from a request's start to the end of its body, and the body's bytes as read.
Observer = Callable[[float, int], None]


class _ObservedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, started: float, observe: Observer) -> None:
        self._inner, self._started, self._observe = inner, started, observe
        self._size = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._size += len(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()
        self._observe(time.perf_counter() - self._started, self._size)


class _ObservedTransport(httpx.AsyncBaseTransport):
    """``inner`` with each request's duration and body size told to ``observe`` when the
    body is closed (read to the end or cut at the size cap)."""

    def __init__(self, inner: httpx.AsyncBaseTransport, observe: Observer) -> None:
        self._inner, self._observe = inner, observe

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        started = time.perf_counter()
        response = await self._inner.handle_async_request(request)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_ObservedStream(response.stream, started, self._observe),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def make_http_client(
    timeout: float = 10.0, *, observe: Observer | None = None
) -> httpx.AsyncClient:
    """The client :func:`fetch` expects: our User-Agent, no automatic redirects, no proxies
    from the environment (they would bypass the address check), and the connection guard;
    ``observe`` is told each request's seconds and bytes (metrics)."""
    transport: httpx.AsyncBaseTransport = _GuardedTransport()
    if observe is not None:
        transport = _ObservedTransport(transport, observe)
    return httpx.AsyncClient(
        timeout=httpx.Timeout(timeout),
        follow_redirects=False,
        headers={"User-Agent": USER_AGENT, "Accept": ACCEPT},
        trust_env=False,
        transport=transport,
    )


async def _check_host(url: str, host: str, port: int) -> None:
    try:
        await public_address(host, port)
    except socket.gaierror:
        # Nothing to refuse yet: the connection resolves again (and the guard checks what it
        # gets), or fails with "cannot resolve host"; a mock transport never resolves.
        return
    except PrivateAddressRefused as exc:
        raise FetchError(url, str(exc)) from exc


def _http_target(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise FetchError(url, f"unsupported URL scheme {parts.scheme!r} (only http and https)")
    if not parts.hostname:
        raise FetchError(url, "URL has no host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:
        raise FetchError(url, "URL has an invalid port") from exc
    return parts.hostname, port


def _origin(parts: SplitResult) -> tuple[str, str | None, int | None]:
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, parts.hostname, port


def redirect_target(url: str, location: str) -> str:
    """The URL a redirect from ``url`` to ``location`` leads to.

    Credentials in ``url`` follow a redirect to the same origin (scheme, host, port) only,
    as browsers and httpx do: a feed that moved to another host, or from https to http,
    never gets them. A target with credentials of its own keeps those.
    """
    target = urljoin(url, location)
    try:
        here, there = urlsplit(url), urlsplit(target)
        if (
            "@" in here.netloc
            and "@" not in there.netloc
            and there.hostname
            and _origin(here) == _origin(there)
        ):
            userinfo = here.netloc.rpartition("@")[0]
            return urlunsplit(there._replace(netloc=f"{userinfo}@{there.netloc}"))
    except ValueError:
        pass  # a bad port: the next hop reports it
    return target


def _local_path(location: str) -> Path | None:
    """The file a location names, or None if it is an http(s) URL."""
    parts = urlsplit(location)
    if parts.scheme in ("http", "https"):
        return None
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise FetchError(location, f"file URL on another host {parts.netloc!r}")
        return Path(url2pathname(unquote(parts.path)))
    if "://" in location:
        raise FetchError(location, f"unsupported URL scheme {parts.scheme!r}")
    return Path(location).expanduser()


def _read_file(location: str, path: Path, last_modified: str | None, max_bytes: int) -> FetchResult:
    try:
        stat = path.stat()
        if path.is_dir():
            raise FetchError(location, "is a directory, not a file")
        mtime = formatdate(stat.st_mtime, usegmt=True)
        uri = path.resolve().as_uri()
        if last_modified is not None and last_modified == mtime:
            return FetchResult("not_modified", None, uri, last_modified=mtime)
        if stat.st_size > max_bytes:
            raise FetchError(location, f"larger than {human_size(max_bytes)}")
        with path.open("rb") as fh:
            content = fh.read(max_bytes + 1)
    except FileNotFoundError as exc:
        raise FetchError(location, "no such file") from exc
    except PermissionError as exc:
        raise FetchError(location, "permission denied") from exc
    except IsADirectoryError as exc:
        raise FetchError(location, "is a directory, not a file") from exc
    except OSError as exc:
        raise FetchError(location, f"cannot read file ({exc.strerror or exc})") from exc
    if len(content) > max_bytes:  # grew between stat and read
        raise FetchError(location, f"larger than {human_size(max_bytes)}")
    content_type, _ = mimetypes.guess_type(path.name)
    return FetchResult("ok", content, uri, content_type=content_type, last_modified=mtime)


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _describe(exc: httpx.HTTPError) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx.ConnectError):
        # httpcore/anyio wrap the OS error in generic "All connection attempts failed".
        causes = _causes(exc)
        if any(isinstance(c, ConnectionRefusedError) for c in causes):
            return "connection refused"
        if any(isinstance(c, socket.gaierror) for c in causes):
            return "cannot resolve host"
        return f"cannot connect ({exc or type(exc).__name__})"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"server broke the HTTP protocol ({exc})"
    if isinstance(exc, httpx.DecodingError):
        return "response body could not be decoded"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def _read_capped(response: httpx.Response, url: str, max_bytes: int) -> bytes:
    declared = response.headers.get("Content-Length")
    if declared is not None and declared.strip().isdigit() and int(declared) > max_bytes:
        raise FetchError(url, f"larger than {human_size(max_bytes)}")
    if response.is_stream_consumed:
        # Built in memory (a mock transport): httpx has decoded it already; only the cap left.
        if len(response.content) > max_bytes:
            raise FetchError(url, f"larger than {human_size(max_bytes)}")
        return response.content
    try:
        decoder = BoundedDecoder(response.headers.get_list("Content-Encoding"))
    except DecodingRefused as exc:
        raise FetchError(url, f"response body refused ({exc})") from exc
    chunks: list[bytes] = []
    total = raw = 0

    def take(pieces: Iterator[bytes]) -> None:
        nonlocal total
        # Decoded bytes are counted piece by piece (each at most 64 KB), so a gzip bomb
        # stops at the cap instead of being inflated whole first.
        for piece in pieces:
            total += len(piece)
            if total > max_bytes:
                raise FetchError(url, f"larger than {human_size(max_bytes)}")
            chunks.append(piece)

    try:
        async for chunk in response.aiter_raw(_CHUNK):
            raw += len(chunk)
            if raw > max_bytes:
                raise FetchError(url, f"larger than {human_size(max_bytes)}")
            take(decoder.feed(chunk))
        take(decoder.flush())
    except DecodingRefused as exc:
        raise FetchError(url, f"response body could not be decoded ({exc})") from exc
    return b"".join(chunks)


@dataclass(frozen=True)
class PrivateOrigin:
    """Private addresses allowed on hops to this one place only: the host and port (or the
    local files, ``kind="file"``) an operator named. Every other hop must be public. Also
    right for what a feed links to (a transcript): the feed's own host may serve it."""

    kind: Literal["net", "file"]
    host: str = ""
    port: int = 0
    scheme: str | None = None  # None: either http or https at that host and port


# True: any address (a location the operator trusts whole); False: public addresses only,
# on every hop, and no local files; a PrivateOrigin: see there.
PrivatePolicy = bool | PrivateOrigin


def private_policy(location: str, allow_private: bool = False) -> PrivatePolicy:
    """The policy for a location an operator configured (a show's feed, a CLI argument):
    everything with ``allow_private``; else private only at the host the location names
    itself (a file, ``localhost``, a literal private address), whatever redirects say."""
    if allow_private:
        return True
    if not names_private_host(location):
        return False
    try:
        if _local_path(location) is not None:
            return PrivateOrigin("file")
        host, port = _http_target(location)
    except FetchError:
        return False  # a location fetch cannot use: it says why itself
    return PrivateOrigin("net", host, port)


def link_policy(feed_location: str, feed_policy: PrivatePolicy) -> PrivatePolicy:
    """The policy for what a feed links to (a transcript): a stranger's URL, whatever the
    feed's own policy. Never a local file, so a feed read from disk links to public
    addresses only; a private address only at the feed's own origin (scheme, host, port),
    and only when the feed may be private there itself; every other hop public."""
    if feed_policy is False or urlsplit(feed_location).scheme not in ("http", "https"):
        return False
    try:
        host, port = _http_target(feed_location)
    except FetchError:
        return False
    if isinstance(feed_policy, PrivateOrigin) and (
        feed_policy.kind == "file" or (feed_policy.host, feed_policy.port) != (host, port)
    ):
        return False
    return PrivateOrigin("net", host, port, urlsplit(feed_location).scheme)


def _files_allowed(policy: PrivatePolicy) -> bool:
    return policy is True or (isinstance(policy, PrivateOrigin) and policy.kind == "file")


def _hop_public_only(policy: PrivatePolicy, url: str) -> bool:
    if isinstance(policy, PrivateOrigin):
        if policy.kind == "file" or (policy.host, policy.port) != _http_target(url):
            return True
        return policy.scheme is not None and policy.scheme != urlsplit(url).scheme
    return not policy


async def fetch(
    client: httpx.AsyncClient,
    location: str,
    *,
    etag: str | None = None,
    last_modified: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    allow_private: PrivatePolicy = True,
    max_redirects: int = 5,
    total_timeout: float | None = 120.0,
) -> FetchResult:
    """Fetch ``location`` (http(s) URL, ``file://`` URL or path) conditionally.

    ``allow_private=False`` is for feeds users add: it refuses local files and hosts that
    resolve to non-public addresses, on every redirect hop; a :class:`PrivateOrigin` (see
    :func:`private_policy`) is for feeds the operator configured. The client's timeout
    bounds each network step; ``total_timeout`` bounds the whole fetch, so a server dripping
    one byte at a time cannot hold a poll forever. Raises :class:`FetchError`
    (:class:`FeedUnavailable` for 429/503, with ``retry_after``).
    """
    try:
        async with asyncio.timeout(total_timeout):
            return await _fetch(
                client,
                location,
                etag=etag,
                last_modified=last_modified,
                max_bytes=max_bytes,
                allow_private=allow_private,
                max_redirects=max_redirects,
            )
    except TimeoutError as exc:
        raise FetchError(location, f"timed out after {total_timeout:g} s in total") from exc


async def _send(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], public_only: bool
) -> httpx.Response:
    host, port = _http_target(url)
    if public_only:
        await _check_host(url, host, port)
    try:
        with forbid_private_addresses(public_only):
            request = client.build_request("GET", url, headers=headers)
            return await client.send(request, stream=True)
    except httpx.InvalidURL as exc:
        raise FetchError(url, f"invalid URL ({exc})") from exc
    except PrivateAddressRefused as exc:
        raise FetchError(url, str(exc)) from exc
    except httpx.HTTPError as exc:
        raise FetchError(url, _describe(exc)) from exc


async def _fetch(
    client: httpx.AsyncClient,
    location: str,
    *,
    etag: str | None,
    last_modified: str | None,
    max_bytes: int,
    allow_private: PrivatePolicy,
    max_redirects: int,
) -> FetchResult:
    path = _local_path(location)
    if path is not None:
        if not _files_allowed(allow_private):
            raise FetchError(location, "local files are not allowed here")
        return await asyncio.to_thread(_read_file, location, path, last_modified, max_bytes)

    # Only what _read_capped can undo a piece at a time (httpx would also offer br/zstd
    # when their packages happen to be installed).
    headers: dict[str, str] = {"Accept-Encoding": "gzip, deflate"}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified

    url = location
    seen = {url}
    for hop in range(max_redirects + 1):
        public_only = _hop_public_only(allow_private, url)
        response = await _send(client, url, headers, public_only)
        try:
            if response.status_code in REDIRECT_STATUSES:
                url = _next_hop(response, url, location, seen)
                if hop == max_redirects:
                    raise FetchError(location, f"too many redirects (more than {max_redirects})")
                continue
            return await _finish(response, url, max_bytes)
        except httpx.HTTPError as exc:
            raise FetchError(url, _describe(exc)) from exc
        finally:
            await response.aclose()
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover


def _next_hop(response: httpx.Response, url: str, location: str, seen: set[str]) -> str:
    target = response.headers.get("Location")
    if not target:
        raise FetchError(url, f"HTTP {response.status_code} redirect without Location")
    url = redirect_target(url, target.strip())
    if url in seen:
        raise FetchError(location, f"redirect loop at {redact_url(url)}")
    seen.add(url)
    return url


async def _finish(response: httpx.Response, url: str, max_bytes: int) -> FetchResult:
    status = response.status_code
    retry_after = parse_retry_after(response.headers.get("Retry-After"), time.time())
    if status in (429, 503):
        reason = f"HTTP {status} {response.reason_phrase}".rstrip()
        if retry_after is not None:
            reason += f" (retry after {retry_after:.0f} s)"
        raise FeedUnavailable(url, reason, retry_after, status=status)
    if status >= 400:
        raise FeedHTTPError(url, f"HTTP {status} {response.reason_phrase}".rstrip(), status)
    if status != 304 and not 200 <= status < 300:
        raise FetchError(url, f"unexpected HTTP {status} {response.reason_phrase}".rstrip())
    not_modified = FetchResult(
        "not_modified",
        None,
        url,
        etag=response.headers.get("ETag"),
        last_modified=response.headers.get("Last-Modified"),
        retry_after=retry_after,
        max_age=parse_max_age(response.headers.get("Cache-Control")),
    )
    if status == 304:
        # A 304 has no body (h11 reads none, whatever its headers say); reading that empty
        # body to its end hands the connection back to the pool, where closing the response
        # unread would hang it up and make the next request connect again.
        await response.aread()
        return not_modified
    content = await _read_capped(response, url, max_bytes)
    return replace(
        not_modified,
        status="ok",
        content=content,
        content_type=response.headers.get("Content-Type"),
    )


def fetch_sync(
    location: str,
    *,
    timeout: float = 10.0,
    etag: str | None = None,
    last_modified: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    allow_private: PrivatePolicy = True,
    max_redirects: int = 5,
    total_timeout: float | None = 120.0,
) -> FetchResult:
    """:func:`fetch` for synchronous callers (the CLI); not for use inside an event loop."""

    async def run() -> FetchResult:
        async with make_http_client(timeout) as client:
            return await fetch(
                client,
                location,
                etag=etag,
                last_modified=last_modified,
                max_bytes=max_bytes,
                allow_private=allow_private,
                max_redirects=max_redirects,
                total_timeout=total_timeout,
            )

    return asyncio.run(run())


__all__ = [
    "DEFAULT_MAX_BYTES",
    "USER_AGENT",
    "FeedHTTPError",
    "FeedUnavailable",
    "FetchResult",
    "PrivateAddressRefused",
    "PrivateOrigin",
    "PrivatePolicy",
    "fetch",
    "fetch_sync",
    "forbid_private_addresses",
    "human_size",
    "is_public_address",
    "link_policy",
    "make_http_client",
    "parse_max_age",
    "parse_retry_after",
    "private_policy",
    "public_address",
    "redact_url",
    "redirect_target",
    "tls_context",
]
