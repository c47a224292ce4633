"""HTTP: the Bolt app as an ASGI app (Starlette) under uvicorn, plus a health check."""

from __future__ import annotations

import asyncio
import contextlib
import logging
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
from digests.store import Store

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"
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


async def serve(
    settings: Settings, asgi_app: ASGIApp, *, host: str = "0.0.0.0", port: int | None = None
) -> None:
    """Serve until this coroutine is cancelled; returns (or re-raises the cancellation)
    only after uvicorn has shut down gracefully and closed its socket."""
    server = make_server(settings, asgi_app, host=host, port=port)
    task = asyncio.ensure_future(server.serve())
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        server.should_exit = True
        await task
        raise
