"""digests.sources.fetch's status and redirect tables, answered in memory (httpx.MockTransport): no
sockets, no DNS. ``feed_server`` here is :class:`MockFeeds`, a stand-in with the loopback
server's API (route, redirect, url, requests) and its 304 rules; the address guard, timeouts
and size caps keep the real server (tests/test_fetch.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from email.utils import formatdate
from urllib.parse import urljoin, urlsplit

import httpx
import pytest

from digests import errors
from digests.errors import FeedHTTPError, FeedUnavailable, FetchError
from digests.sources.fetch import ACCEPT, USER_AGENT, fetch
from tests.feedserver import RecordedRequest

RSS = b"""<?xml version="1.0"?><rss version="2.0"><channel><title>PyTorch</title></channel></rss>"""
BASE = "http://feeds.example.test"


class _Body(httpx.AsyncByteStream):
    """A body httpx has not read yet, as from a socket: fetch reads it itself, capped."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self._data), 16 * 1024):
            yield self._data[start : start + 16 * 1024]


@dataclass
class _Route:
    body: bytes
    status: int
    content_type: str | None
    etag: str | None
    last_modified: str | None
    headers: dict[str, str]


@dataclass
class MockFeeds:
    """What tests/feedserver.py's FeedServer answers, for a MockTransport."""

    routes: dict[str, _Route] = field(default_factory=dict)
    requests: list[RecordedRequest] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def url(self, path: str = "/") -> str:
        return urljoin(BASE + "/", path.lstrip("/"))

    def route(
        self,
        path: str,
        body: bytes | str = b"",
        *,
        content_type: str | None = "application/rss+xml; charset=utf-8",
        etag: str | None = None,
        last_modified: str | None = None,
        status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> str:
        data = body.encode() if isinstance(body, str) else body
        route = _Route(data, status, content_type, etag, last_modified, dict(headers or {}))
        with self._lock:
            self.routes[path] = route
        return self.url(path)

    def redirect(self, path: str, to: str, *, status: int = 302) -> str:
        target = to if "://" in to else self.url(to)
        return self.route(path, b"", content_type=None, status=status, headers={"Location": target})

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if urlsplit(r.path).path == path]

    def handle(self, request: httpx.Request) -> httpx.Response:
        headers = {k.lower(): v for k, v in request.headers.items()}
        path = request.url.raw_path.decode()
        with self._lock:
            self.requests.append(RecordedRequest(request.method, path, headers))
            route = self.routes.get(urlsplit(path).path)
        if route is None:
            return httpx.Response(404, content=b"not found\n")
        validators = {
            k: v for k, v in (("ETag", route.etag), ("Last-Modified", route.last_modified)) if v
        }
        tags = [t.strip() for t in headers.get("if-none-match", "").split(",")]
        if (route.etag and (route.etag in tags or "*" in tags)) or (
            route.last_modified and headers.get("if-modified-since") == route.last_modified
        ):
            return httpx.Response(304, headers=validators)
        out = {**validators, **route.headers, "Content-Length": str(len(route.body))}
        if route.content_type:
            out["Content-Type"] = route.content_type
        return httpx.Response(route.status, headers=out, stream=_Body(route.body))


@pytest.fixture
def feed_server() -> MockFeeds:
    return MockFeeds()


@pytest.fixture
async def client(feed_server: MockFeeds) -> AsyncIterator[httpx.AsyncClient]:
    # What make_http_client sends, over the mock instead of a guarded pool.
    async with httpx.AsyncClient(
        transport=httpx.MockTransport(feed_server.handle),
        follow_redirects=False,
        headers={"User-Agent": USER_AGENT, "Accept": ACCEPT},
    ) as c:
        yield c


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (200, "ok"),
        (203, "ok"),
        (204, "ok"),
        (304, "not_modified"),
        (300, "unexpected HTTP 300"),
        (305, "unexpected HTTP 305"),
        (400, "HTTP 400 Bad Request"),
        (401, "HTTP 401 Unauthorized"),
        (403, "HTTP 403 Forbidden"),
        (451, "HTTP 451"),
        (502, "HTTP 502 Bad Gateway"),
        (429, "unavailable"),
        (503, "unavailable"),
    ],
)
async def test_status_table(
    client: httpx.AsyncClient, feed_server: MockFeeds, status: int, outcome: str
) -> None:
    url = feed_server.route("/feed.xml", RSS, status=status)
    if outcome in ("ok", "not_modified"):
        assert (await fetch(client, url)).status == outcome
    elif outcome == "unavailable":
        with pytest.raises(FeedUnavailable):
            await fetch(client, url)
    else:
        with pytest.raises(FetchError, match=outcome) as info:
            await fetch(client, url)
        assert not isinstance(info.value, FeedUnavailable)


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_every_redirect_status_is_followed(
    client: httpx.AsyncClient, feed_server: MockFeeds, status: int
) -> None:
    feed_server.route("/feed.xml", RSS)
    url = feed_server.redirect("/old", "/feed.xml", status=status)
    assert (await fetch(client, url)).content == RSS


async def test_ok_returns_body_and_validators(
    client: httpx.AsyncClient, feed_server: MockFeeds
) -> None:
    url = feed_server.route(
        "/feed.xml",
        RSS,
        etag='"v1"',
        last_modified="Mon, 05 Oct 2026 13:00:40 GMT",
        headers={"Cache-Control": "public, max-age=300"},
    )
    result = await fetch(client, url)
    assert result.status == "ok"
    assert result.content == RSS
    assert result.url == url
    assert result.content_type == "application/rss+xml; charset=utf-8"
    assert result.etag == '"v1"'
    assert result.last_modified == "Mon, 05 Oct 2026 13:00:40 GMT"
    assert result.max_age == 300.0
    assert result.retry_after is None
    sent = feed_server.requests_to("/feed.xml")[0]
    assert sent.header("User-Agent") == USER_AGENT
    assert sent.header("If-None-Match") is None


async def test_etag_round_trip_then_new_episode(
    client: httpx.AsyncClient, feed_server: MockFeeds
) -> None:
    url = feed_server.route("/feed.xml", RSS, etag='"v1"')
    first = await fetch(client, url)
    second = await fetch(client, url, etag=first.etag)
    assert second.status == "not_modified"
    assert second.content is None
    assert feed_server.requests_to("/feed.xml")[1].header("If-None-Match") == '"v1"'

    feed_server.route("/feed.xml", RSS + b"<!-- new -->", etag='"v2"')
    third = await fetch(client, url, etag=second.etag or first.etag)
    assert third.status == "ok"
    assert third.content == RSS + b"<!-- new -->"
    assert third.etag == '"v2"'


async def test_last_modified_sends_if_modified_since(
    client: httpx.AsyncClient, feed_server: MockFeeds
) -> None:
    stamp = "Mon, 05 Oct 2026 13:00:40 GMT"
    url = feed_server.route("/feed.xml", RSS, last_modified=stamp)
    result = await fetch(client, url, last_modified=stamp)
    assert result.status == "not_modified"
    assert feed_server.requests[-1].header("If-Modified-Since") == stamp


async def test_redirect_chain_is_followed_to_the_final_url(
    client: httpx.AsyncClient, feed_server: MockFeeds
) -> None:
    final = feed_server.route("/feed.xml", RSS)
    feed_server.redirect("/a", "/b", status=301)
    feed_server.redirect("/b", feed_server.url("/c"), status=307)
    feed_server.route("/c", b"", content_type=None, status=302, headers={"Location": "feed.xml"})
    result = await fetch(client, feed_server.url("/a"), etag='"x"')
    assert result.content == RSS
    assert result.url == final
    assert [r.path for r in feed_server.requests] == ["/a", "/b", "/c", "/feed.xml"]
    assert all(r.header("If-None-Match") == '"x"' for r in feed_server.requests)


@pytest.mark.parametrize(("hops", "ok"), [(5, True), (6, False)])
async def test_at_most_max_redirects(
    client: httpx.AsyncClient, feed_server: MockFeeds, hops: int, ok: bool
) -> None:
    feed_server.route("/r0", RSS)
    for i in range(1, hops + 1):
        feed_server.redirect(f"/r{i}", f"/r{i - 1}")
    start = feed_server.url(f"/r{hops}")
    if ok:
        assert (await fetch(client, start)).content == RSS
    else:
        with pytest.raises(FetchError, match=r"too many redirects \(more than 5\)"):
            await fetch(client, start)
        assert len(feed_server.requests) == 6


async def test_max_redirects_zero_refuses_any_redirect(
    client: httpx.AsyncClient, feed_server: MockFeeds
) -> None:
    feed_server.route("/feed.xml", RSS)
    url = feed_server.redirect("/old", "/feed.xml")
    with pytest.raises(FetchError, match="too many redirects"):
        await fetch(client, url, max_redirects=0)


async def test_redirect_loop(client: httpx.AsyncClient, feed_server: MockFeeds) -> None:
    feed_server.redirect("/a", "/b")
    feed_server.redirect("/b", "/a")
    with pytest.raises(FetchError, match="redirect loop") as info:
        await fetch(client, feed_server.url("/a"))
    assert len(feed_server.requests) == 2
    assert str(info.value).startswith(f"cannot fetch {feed_server.url('/a')}: ")


@pytest.mark.parametrize("target", ["file:///etc/passwd", "ftp://example.com/feed.xml"])
async def test_redirect_to_another_scheme_is_refused(
    client: httpx.AsyncClient, feed_server: MockFeeds, target: str
) -> None:
    url = feed_server.redirect("/feed.xml", target)
    with pytest.raises(FetchError, match="unsupported URL scheme"):
        await fetch(client, url)


async def test_redirect_without_location(client: httpx.AsyncClient, feed_server: MockFeeds) -> None:
    url = feed_server.route("/feed.xml", b"", status=302)
    with pytest.raises(FetchError, match="redirect without Location"):
        await fetch(client, url)


@pytest.mark.parametrize(
    ("status", "message"),
    [(404, "HTTP 404 Not Found"), (500, "HTTP 500 Internal Server Error"), (410, "HTTP 410")],
)
async def test_http_errors(
    client: httpx.AsyncClient, feed_server: MockFeeds, status: int, message: str
) -> None:
    url = feed_server.route("/feed.xml", b"nope", status=status)
    with pytest.raises(FetchError, match=message) as info:
        await fetch(client, url)
    assert isinstance(info.value, FeedHTTPError)
    assert not isinstance(info.value, FeedUnavailable)
    assert info.value.status == status
    assert info.value.url == url


async def test_http_errors_are_digest_errors_with_one_line(
    client: httpx.AsyncClient, feed_server: MockFeeds
) -> None:
    # The error tree lives in digests.errors; digests.sources.fetch re-exports the same classes.
    assert (FeedHTTPError, FeedUnavailable) == (errors.FeedHTTPError, errors.FeedUnavailable)
    url = feed_server.route("/feed.xml", b"", status=429, headers={"Retry-After": "7"})
    with pytest.raises(errors.DigestError) as info:
        await fetch(client, url)
    assert isinstance(info.value, errors.FeedUnavailable)
    assert (
        info.value.format_message()
        == f"cannot fetch {url}: HTTP 429 Too Many Requests (retry after 7 s)"
    )


async def test_missing_route_is_404(client: httpx.AsyncClient, feed_server: MockFeeds) -> None:
    with pytest.raises(FetchError, match="HTTP 404"):
        await fetch(client, feed_server.url("/nothing-here.xml"))


async def test_429_retry_after_seconds(client: httpx.AsyncClient, feed_server: MockFeeds) -> None:
    url = feed_server.route("/feed.xml", b"", status=429, headers={"Retry-After": "120"})
    with pytest.raises(FeedUnavailable) as info:
        await fetch(client, url)
    assert info.value.retry_after == 120.0
    assert info.value.status == 429
    assert "HTTP 429" in str(info.value)


async def test_503_retry_after_http_date(client: httpx.AsyncClient, feed_server: MockFeeds) -> None:
    when = formatdate(time.time() + 3600, usegmt=True)
    url = feed_server.route("/feed.xml", b"", status=503, headers={"Retry-After": when})
    with pytest.raises(FeedUnavailable) as info:
        await fetch(client, url)
    assert info.value.retry_after is not None
    assert 3500 <= info.value.retry_after <= 3600


async def test_503_without_retry_after(client: httpx.AsyncClient, feed_server: MockFeeds) -> None:
    url = feed_server.route("/feed.xml", b"", status=503)
    with pytest.raises(FeedUnavailable) as info:
        await fetch(client, url)
    assert info.value.retry_after is None
