"""What the loopback test servers share (``tests/feedserver.py``, ``tests/slackfake.py``): a
threaded HTTP server run in a background thread, started, stopped and addressed the same way.

A subclass passes its handler class up; the handler reaches the subclass instance as
``self.server.owner``.
"""

from __future__ import annotations

import selectors
import socket
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
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None

    def start(self) -> Self:
        self._httpd = QuietHTTPServer(
            self, (self._host, self._port), self._handler, self.queue_size
        )
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread = threading.Thread(target=self._serve, name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def _serve(self) -> None:
        # serve_forever() notices shutdown() only at its next poll (0.5 s by default, and a
        # short poll spins the thread); a wake-up socket makes stop() take no time at all,
        # which every test that starts a server pays once.
        assert self._httpd is not None and self._wake_r is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._httpd, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while not self._stopping.is_set():
                for key, _ in selector.select():
                    if key.fileobj is self._httpd and not self._stopping.is_set():
                        self._httpd._handle_request_noblock()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None and self._wake_w is not None:
            self._wake_w.send(b"x")
            self._thread.join(timeout=5)
            self._thread = None
        for end in (self._wake_r, self._wake_w):
            if end is not None:
                end.close()
        self._wake_r = self._wake_w = None
        if self._httpd is not None:
            self._httpd.server_close()

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
