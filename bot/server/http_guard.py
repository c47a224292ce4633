"""Connections to the HTTP server that never finish a request: a header deadline and a cap.

uvicorn times out an idle kept-alive connection, and our handler a slow body, but nothing
times out a request whose headers never end (h11 and httptools wait for them forever), so
a client dripping half-requests would keep a file descriptor each until the process can
accept nothing more. Here uvicorn's own HTTP/1.1 protocol class is extended:

- *Header deadline*: a connection that has no request in progress ``header_timeout``
  seconds after it opened, or after its last response, is closed (a request in progress
  has its headers; its body has the handler's own limit).
- *Cap*: at most ``max_connections`` per process, below the file-descriptor limit. At the
  cap, a new connection closes the oldest one without a request in progress — a
  half-request, or an idle kept-alive one — so requests keep being answered however many
  half-requests are held open; one line is logged when the cap is reached, one when the
  count is back under it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger(__name__)

# Slack sends a request's headers at once; a request without them after this is held open
# on purpose.
HEADER_TIMEOUT = 10.0
# Connections per process at most, when the file-descriptor limit allows more.
MAX_CONNECTIONS = 4096
# The listen backlog, which is also how many connections asyncio accepts at once: a
# connection gets its protocol (and can be counted, or closed) two loop turns after it is
# accepted, and an evicted one frees its descriptor a turn later, so up to about four
# batches are open beyond the count.
BACKLOG = 100
# Descriptors kept for everything else (the database, Slack, GitHub, feeds, logs) and for
# the accepted batches not counted yet.
FD_RESERVE = 128 + 4 * BACKLOG
# The cap's "reached" line is logged again only after the count fell this far below it.
_UNDER = 0.9


def default_max_connections() -> int:
    """``MAX_CONNECTIONS``, or fewer when the process may open fewer files."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return MAX_CONNECTIONS
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(16, min(MAX_CONNECTIONS, soft - FD_RESERVE))


class ConnectionGuard:
    """The connections of one server: how many are open, and which wait for a request
    (oldest first)."""

    def __init__(self, header_timeout: float, max_connections: int) -> None:
        self.header_timeout = header_timeout
        self.max_connections = max_connections
        self.open: set[Any] = set()
        self.waiting: dict[Any, asyncio.TimerHandle] = {}
        self.at_cap = False
        self.closed_at_cap = 0

    def arm(self, conn: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.disarm(conn)
        self.waiting[conn] = loop.call_later(self.header_timeout, self._expire, conn)

    def disarm(self, conn: Any) -> None:
        handle = self.waiting.pop(conn, None)
        if handle is not None:
            handle.cancel()

    def _expire(self, conn: Any) -> None:
        self.waiting.pop(conn, None)
        if not _in_request(conn):
            conn.transport.close()

    def make_room(self) -> bool:
        """Below the cap, or room made by closing the oldest connection without a request
        in progress; False when every connection is busy."""
        if len(self.open) < self.max_connections:
            return True
        if not self.at_cap:
            self.at_cap = True
            log.warning(
                "HTTP connections at the cap of %d per process: each new one closes the "
                "oldest that has not sent a complete request",
                self.max_connections,
            )
        for conn in list(self.waiting):
            self.disarm(conn)
            if not _in_request(conn) and not conn.transport.is_closing():
                conn.transport.close()
                self.open.discard(conn)  # its fd is freed as the loop closes it
                self.closed_at_cap += 1
                return True
        return False

    def closed(self, conn: Any) -> None:
        self.disarm(conn)
        self.open.discard(conn)
        if self.at_cap and len(self.open) < self.max_connections * _UNDER:
            self.at_cap = False
            log.warning(
                "HTTP connections under the cap again (%d closed to make room)",
                self.closed_at_cap,
            )
            self.closed_at_cap = 0


def _in_request(conn: Any) -> bool:
    # uvicorn's HTTP/1.1 protocols (h11, httptools) start a cycle once a request's headers
    # are in, and mark it complete once the response is sent.
    cycle = getattr(conn, "cycle", None)
    return cycle is not None and not cycle.response_complete


def guarded_protocol(base: type[asyncio.Protocol], guard: ConnectionGuard) -> type[Any]:
    """``base`` (uvicorn's HTTP/1.1 protocol class) under ``guard``."""

    class Guarded(base):  # type: ignore[valid-type,misc]
        def connection_made(self, transport: asyncio.Transport) -> None:
            room = guard.make_room()
            super().connection_made(transport)
            guard.open.add(self)
            if not room:
                transport.close()
                return
            guard.arm(self, self.loop)

        def connection_lost(self, exc: Exception | None) -> None:
            guard.closed(self)
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                guard.arm(self, self.loop)

    Guarded.__name__ = Guarded.__qualname__ = f"Guarded{base.__name__}"
    return Guarded
