"""What the loopback test servers share (``tests/feedserver.py``, ``tests/slackfake.py``): a
threaded HTTP server run in a background thread, started, stopped and addressed the same way.

A subclass passes its handler class up; the handler reaches the subclass instance as
``self.server.owner``.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Generic, Self, TypeVar

OwnerT = TypeVar("OwnerT")


class QuietHTTPServer(ThreadingHTTPServer, Generic[OwnerT]):
    daemon_threads = True
    block_on_close = False

    def __init__(
        self,
        owner: OwnerT,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        queue_size: int,
    ) -> None:
        self.owner = owner
        # Read by listen() inside the base __init__, so it must be set first.
        self.request_queue_size = queue_size
        super().__init__(address, handler)

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # clients hanging up mid-body (timeouts, in these tests) are expected


class LoopbackHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; without this, Nagle + delayed ACK add
    # ~40 ms to every response on loopback.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:
        pass  # tests read what the server recorded instead of stderr noise


class BackgroundServer:
    """Serves ``handler`` on ``host:port`` (a free port by default) from a daemon thread."""

    thread_name = "httpserver"
    queue_size = 128

    def __init__(
        self, handler: type[BaseHTTPRequestHandler], host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self._handler = handler
        self._host = host
        self._port = port
        # Set on stop: slow answers (delays, drips, latency) wait on it, so teardown never
        # waits for them.
        self._stopping = threading.Event()
        self._httpd: QuietHTTPServer[Self] | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        self._httpd = QuietHTTPServer(
            self, (self._host, self._port), self._handler, self.queue_size
        )
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name=self.thread_name,
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, f"{type(self).__name__} not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"
