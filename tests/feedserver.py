"""A real HTTP server on 127.0.0.1 that serves feeds and pages to tests.

Use the ``feed_server`` fixture (``tests/fixtures/feeds.py``); it starts one server per test
on a free port, in a background thread, so sync tests, async tests and subprocesses can all
reach it. Standalone: ``with FeedServer() as server: ...``.

API (all thread-safe; routes can be replaced at any time, e.g. between two polls)::

    server.route("/feed.xml", body=b"<rss>...</rss>",          # bytes or str (UTF-8)
                 content_type="application/rss+xml; charset=utf-8",
                 etag='"v1"', last_modified="Mon, 05 Oct 2026 13:00:40 GMT",
                 status=200, delay=0.0, headers={"Cache-Control": "max-age=300"})
    server.route("/lazy", body=lambda: (b"x" * 65536 for _ in range(800)), length=None)
    server.huge("/huge.xml", size=50 * 1024 * 1024)            # generated lazily, never in memory
    server.huge("/huge-chunked", size=50 * 1024 * 1024, declare_length=False)  # chunked
    server.drip("/slow.xml", b"<rss>...</rss>", every=0.05)    # body 1 byte per 0.05 s
    server.redirect("/old", "/feed.xml", status=301)           # path or full URL
    server.url("/feed.xml")                                    # "http://127.0.0.1:PORT/feed.xml"
    server.base_url                                            # "http://127.0.0.1:PORT"

    server.requests                  # list[RecordedRequest], oldest first
    server.requests_to("/feed.xml")  # only those for that path (query string ignored)
    server.requests_to("/feed.xml")[-1].header("If-None-Match")   # case-insensitive
    server.clear_requests()

Behaviour:
- Unknown paths answer 404.
- A route with ``etag`` answers 304 (no body) when If-None-Match names that tag (or ``*``);
  a route with ``last_modified`` answers 304 when If-Modified-Since equals it exactly.
- ``delay`` seconds pass before the status line is sent (a slow server → client timeouts).
  Delays end early when the server stops, so teardown never waits on them.
- ``body`` may be a zero-argument callable returning an iterable of bytes chunks: it is
  called per request and streamed. ``length`` is the Content-Length to declare for it
  (``None`` → chunked transfer encoding). Bytes bodies always get their real length.
- ``status`` is sent as-is (e.g. 500, 429 with ``headers={"Retry-After": "120"}``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from tests.httpserver import BackgroundServer, LoopbackHandler, QuietHTTPServer

Body = bytes | Callable[[], Iterable[bytes]]

_CHUNK = 64 * 1024


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str  # with the query string
    headers: dict[str, str]  # lower-cased names
    peer: tuple[str, int] | None = None  # the client's address and port: its connection

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass
class Route:
    body: Body = b""
    status: int = 200
    content_type: str | None = "application/rss+xml; charset=utf-8"
    etag: str | None = None
    last_modified: str | None = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    length: int | None = None


def _junk(size: int) -> Iterator[bytes]:
    block = b"<!-- junk -->" * (_CHUNK // 13 + 1)
    block = block[:_CHUNK]
    remaining = size
    while remaining > 0:
        piece = block[: min(remaining, _CHUNK)]
        remaining -= len(piece)
        yield piece


class _Handler(LoopbackHandler):
    server: QuietHTTPServer[FeedServer]

    def do_HEAD(self) -> None:
        self._serve(send_body=False)

    def do_GET(self) -> None:
        self._serve(send_body=True)

    def _serve(self, *, send_body: bool) -> None:
        owner = self.server.owner
        headers = {k.lower(): v for k, v in self.headers.items()}
        owner._record(RecordedRequest(self.command, self.path, headers, self.client_address[:2]))
        route = owner._lookup(urlsplit(self.path).path)
        if route is None:
            self._plain(404, b"not found\n")
            return
        if route.delay and owner._stopping.wait(route.delay):
            self.close_connection = True  # stopping: hang up rather than leave the client waiting
            return
        if self._not_modified(route, headers):
            self.send_response(304)
            self._validators(route)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(route.status)
        if route.content_type:
            self.send_header("Content-Type", route.content_type)
        self._validators(route)
        for name, value in route.headers.items():
            self.send_header(name, value)
        try:
            if isinstance(route.body, bytes):
                self.send_header("Content-Length", str(len(route.body)))
                self.end_headers()
                if send_body:
                    self.wfile.write(route.body)
                return
            chunks = route.body()
            if route.length is not None:
                self.send_header("Content-Length", str(route.length))
                self.end_headers()
                if send_body:
                    for chunk in chunks:
                        self.wfile.write(chunk)
                return
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if send_body:
                for chunk in chunks:
                    if chunk:
                        self.wfile.write(b"%x\r\n%b\r\n" % (len(chunk), chunk))
                self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up on purpose (size cap, timeout): nothing left to do.
            self.close_connection = True

    def _not_modified(self, route: Route, headers: dict[str, str]) -> bool:
        if route.status != 200:
            return False
        inm = headers.get("if-none-match")
        if route.etag and inm:
            tags = [t.strip() for t in inm.split(",")]
            return "*" in tags or route.etag in tags
        ims = headers.get("if-modified-since")
        return bool(route.last_modified and ims and ims == route.last_modified)

    def _validators(self, route: Route) -> None:
        if route.etag:
            self.send_header("ETag", route.etag)
        if route.last_modified:
            self.send_header("Last-Modified", route.last_modified)

    def _plain(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class FeedServer(BackgroundServer):
    """Feed/page server on 127.0.0.1:<free port>. See the module docstring."""

    thread_name = "feedserver"

    def __init__(self) -> None:
        super().__init__(_Handler)
        self._lock = threading.Lock()
        self._routes: dict[str, Route] = {}
        self._requests: list[RecordedRequest] = []

    # addresses ---------------------------------------------------------------------------
    def url(self, path: str = "/") -> str:
        return urljoin(self.base_url + "/", path.lstrip("/"))

    # routes ------------------------------------------------------------------------------
    def route(
        self,
        path: str,
        body: bytes | str | Callable[[], Iterable[bytes]] = b"",
        *,
        content_type: str | None = "application/rss+xml; charset=utf-8",
        etag: str | None = None,
        last_modified: str | None = None,
        status: int = 200,
        delay: float = 0.0,
        headers: dict[str, str] | None = None,
        length: int | None = None,
    ) -> str:
        """Serve ``body`` at ``path`` (replacing any earlier route); returns its URL."""
        if isinstance(body, str):
            body = body.encode("utf-8")
        new = Route(
            body=body,
            status=status,
            content_type=content_type,
            etag=etag,
            last_modified=last_modified,
            delay=delay,
            headers=dict(headers or {}),
            length=length,
        )
        with self._lock:
            self._routes[path] = new
        return self.url(path)

    def redirect(self, path: str, to: str, *, status: int = 302) -> str:
        """Answer ``path`` with a redirect to ``to`` (a path on this server or a full URL)."""
        target = to if "://" in to else self.url(to)
        return self.route(path, b"", content_type=None, status=status, headers={"Location": target})

    def huge(
        self,
        path: str,
        size: int,
        *,
        declare_length: bool = True,
        content_type: str = "application/rss+xml",
    ) -> str:
        """Serve ``size`` bytes of junk, generated chunk by chunk per request."""
        return self.route(
            path,
            lambda: _junk(size),
            content_type=content_type,
            length=size if declare_length else None,
        )

    def drip(
        self,
        path: str,
        body: bytes,
        *,
        every: float = 0.05,
        chunk: int = 1,
        content_type: str = "application/rss+xml",
    ) -> str:
        """Serve ``body`` ``chunk`` bytes at a time, ``every`` seconds apart (chunked)."""
        stopping = self._stopping

        def pieces() -> Iterator[bytes]:
            for start in range(0, len(body), chunk):
                if stopping.wait(every):
                    return
                yield body[start : start + chunk]

        return self.route(path, pieces, content_type=content_type)

    def remove(self, path: str) -> None:
        with self._lock:
            self._routes.pop(path, None)

    # recorded requests -------------------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if urlsplit(r.path).path == path]

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    # used by the handler -----------------------------------------------------------------
    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _lookup(self, path: str) -> Route | None:
        with self._lock:
            return self._routes.get(path)
