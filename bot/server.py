"""HTTP: the Bolt app as an ASGI app (Starlette) under uvicorn, plus a health check."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
from collections.abc import Iterator

import uvicorn
from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from config.settings import Settings
from digests.errors import ConfigError, PortInUse
from digests.store import Store

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"
# OAuth mode's install flow (Bolt's default paths; answered only when the app has a flow).
INSTALL_PATH = "/slack/install"
REDIRECT_PATH = "/slack/oauth_redirect"
# Slack's payloads are a few KB; a bigger body is not from Slack and is refused unread.
MAX_BODY = 1024 * 1024


def build_asgi(app: AsyncApp, store: Store) -> ASGIApp:
    """POST /slack/events → Bolt (signature checked there: 401 when it fails);
    GET /healthz → 200 ``{"ok": true}`` when the store answers, else 503."""
    handler = AsyncSlackRequestHandler(app)

    async def events(request: Request) -> Response:
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            return PlainTextResponse("payload too large", status_code=413)
        return await handler.handle(request)

    async def healthz(request: Request) -> Response:
        try:
            ok = await asyncio.to_thread(store.ping)
        except Exception:  # a health check reports, it never raises
            log.exception("store ping failed")
            ok = False
        return JSONResponse({"ok": bool(ok)}, status_code=200 if ok else 503)

    return Starlette(
        routes=[
            Route(EVENTS_PATH, events, methods=["POST"]),
            Route(HEALTH_PATH, healthz, methods=["GET"]),
            Route(INSTALL_PATH, handler.handle, methods=["GET"]),
            Route(REDIRECT_PATH, handler.handle, methods=["GET"]),
        ]
    )


class _Server(uvicorn.Server):
    """uvicorn without its signal handlers: the caller owns the process and its loop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def make_server(
    settings: Settings, asgi_app: ASGIApp, *, host: str = "0.0.0.0", port: int | None = None
) -> uvicorn.Server:
    config = uvicorn.Config(
        asgi_app,
        host=host,
        port=settings.port if port is None else port,
        lifespan="off",
        access_log=False,
        log_level="warning",
    )
    return _Server(config)


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound here rather than by uvicorn: a taken port is then one
    line and exit code 2 (uvicorn logs a traceback and exits 3), raised before anything
    else has started."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        # Lets a restart rebind while old connections sit in TIME_WAIT; a live listener
        # still refuses the bind.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRINUSE:
            raise PortInUse(port) from None
        raise ConfigError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    return sock


async def serve(
    settings: Settings,
    asgi_app: ASGIApp,
    *,
    host: str = "0.0.0.0",
    port: int | None = None,
    sock: socket.socket | None = None,
) -> None:
    """Serve until this coroutine is cancelled; returns (or re-raises the cancellation)
    only after uvicorn has shut down gracefully and closed its socket. ``sock``: an
    already bound socket (from :func:`listen`) instead of ``host``/``port``."""
    server = make_server(settings, asgi_app, host=host, port=port)
    if sock is None:
        sock = listen(host, server.config.port)
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        server.should_exit = True
        await task
        raise
    finally:
        sock.close()
