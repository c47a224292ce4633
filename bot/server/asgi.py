"""HTTP: the Bolt app as an ASGI app (Starlette) under uvicorn, plus a health check.

Requests to ``/slack/events`` come from anyone: the body limit holds while reading (chunked
bodies included) and the signature is verified on the raw bytes before Bolt parses them, so
an unsigned request costs a header check and is answered 401.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import itertools
import logging
import os
import secrets
import socket
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping

import sqlalchemy as sa
import uvicorn
from slack_bolt.adapter.starlette.async_handler import (
    AsyncSlackRequestHandler,
    to_async_bolt_request,
    to_starlette_response,
)
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from bot import logs
from bot.listeners.app import SignedApp
from bot.messages.errors import UNREADABLE_REQUEST
from bot.ops.metrics import CONTENT_TYPE, Metrics
from bot.ops.readiness import Probe, render, run_checks
from bot.server.http_guard import (
    BACKLOG,
    ConnectionGuard,
    default_max_connections,
    guarded_protocol,
)
from bot.server.listen import listen
from config.settings import Settings
from digests.store import Store, schema

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"
METRICS_PATH = "/metrics"
# OAuth mode's install flow (Bolt's default paths; answered only when the app has a flow).
INSTALL_PATH = "/slack/install"
REDIRECT_PATH = "/slack/oauth_redirect"
# Slack's payloads are a few KB; a bigger body is not from Slack and is refused, declared
# (Content-Length) or not (chunked): reading stops at the limit.
MAX_BODY = 1024 * 1024
# Slack sends its few KB at once; a body still arriving after this holds a worker on purpose.
BODY_TIMEOUT = 10.0
# Slack's window for a signature's timestamp (Bolt uses the same): older is a replay.
SIGNATURE_WINDOW = 5 * 60
# Unix seconds for the next few thousand years; anything longer is not a timestamp.
_MAX_TIMESTAMP_DIGITS = 12
_SIGNATURE_LENGTH = len("v0=") + 64


def _refused() -> Response:
    # Bolt's very bytes for a bad signature: the two layers look the same from outside.
    return Response(b'{"error": "invalid request"}', 401, media_type="application/json")


def _too_large() -> Response:
    return PlainTextResponse("payload too large", status_code=413)


def _plausibly_signed(headers: Headers, now: float) -> bool:
    """The signature headers have Slack's shape and a fresh timestamp: checked before a
    byte of body is read, so unsigned traffic costs nothing."""
    timestamp = headers.get("x-slack-request-timestamp", "")
    signature = headers.get("x-slack-signature", "")
    if not (timestamp.isascii() and timestamp.isdigit()):
        return False
    if len(timestamp) > _MAX_TIMESTAMP_DIGITS or abs(now - int(timestamp)) > SIGNATURE_WINDOW:
        return False
    return signature.startswith("v0=") and len(signature) == _SIGNATURE_LENGTH


def signature_valid(secret: str, headers: Headers, body: bytes) -> bool:
    """Slack's v0 HMAC over the raw bytes (slack_sdk's verifier decodes the body as UTF-8
    first, and raises on anything else)."""
    timestamp = headers.get("x-slack-request-timestamp", "")
    base = b"v0:" + timestamp.encode("ascii", "replace") + b":" + body
    expected = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, headers.get("x-slack-signature", ""))


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes | None:
    """The body, or None as soon as it is over ``limit`` (the rest stays unread)."""
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > limit):
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


def _secret_of(app: AsyncApp) -> str | None:
    # build_app's secret (a random one when none is configured): an app that does not say
    # what it is gets nothing through, as Bolt does not check signatures again.
    secret = app.signing_secret if isinstance(app, SignedApp) else None
    return secret if isinstance(secret, str) and secret.strip() else None


def _unreadable() -> Response:
    return JSONResponse({"response_type": "ephemeral", "text": UNREADABLE_REQUEST})


async def _dispatch(
    app: AsyncApp,
    request: Request,
    body: bytes,
    metrics: Metrics | None = None,
    started: float = 0.0,
    request_id: Callable[[], str] = lambda: "",
) -> Response:
    """Hand a verified body to Bolt. A signed body Bolt cannot make sense of (not UTF-8, a
    ``payload`` that is not JSON, nested past the parser's depth, ``actions`` that are not
    a list) gets a polite reply instead of a 500 (which Slack shows as "dispatch_failed")."""
    req = None
    try:
        req = to_async_bolt_request(request, body)
        token = logs.push(request_id=request_id(), **logs.context_of(req.body))
        try:
            response = await app.async_dispatch(req)
        finally:
            logs.pop(token)
    except (ValueError, RecursionError, TypeError, AttributeError, KeyError) as exc:
        log.warning("unreadable signed request: %s: %s", type(exc).__name__, exc)
        _count(metrics, req, "error", started)
        return _unreadable()
    if response.status >= 500:
        _count(metrics, req, "error", started)
        return _unreadable()  # Bolt has logged what failed
    _count(metrics, req, "replay" if req.context.get("replayed") else "ok", started)
    return to_starlette_response(response)


def _count(metrics: Metrics | None, req: AsyncBoltRequest | None, outcome: str, t0: float) -> None:
    if metrics is None:
        return
    if outcome == "replay":
        metrics.replays.inc()
    body = req.body if req is not None and isinstance(req.body, dict) else {}
    metrics.request(body, time.perf_counter() - t0, outcome)


def _events_handler(
    app: AsyncApp, metrics: Metrics | None = None
) -> Callable[[Request], Awaitable[Response]]:
    secret = _secret_of(app)
    # Each request's id in the logs: this process's random prefix and a count (cheaper than
    # a uuid4 per request, and as unique within the logs).
    prefix, numbers = secrets.token_hex(3), itertools.count(1)

    def request_id() -> str:
        return f"{prefix}{next(numbers):06x}"

    def refused(reason: str) -> Response:
        if metrics is not None:
            metrics.signature_failures.labels(reason).inc()
        return _refused()

    async def events(request: Request) -> Response:
        started = time.perf_counter()
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            return _too_large()
        # Bolt trusts this check (bot.listeners.app.VERIFIED): without a secret nothing gets
        # through.
        if secret is None or not _plausibly_signed(request.headers, time.time()):
            return refused("malformed")
        try:
            async with asyncio.timeout(BODY_TIMEOUT):
                body = await read_body(request)
        except TimeoutError:
            return PlainTextResponse("request body too slow", status_code=408)
        if body is None:
            return _too_large()
        # Verified on the raw bytes, before anything parses them.
        if not signature_valid(secret, request.headers, body):
            return refused("mismatch")
        return await _dispatch(app, request, body, metrics, started, request_id)

    return events


def store_healthy(store: Store) -> bool:
    """The store answers a query against a real table, and (SQLite) its file is still there:
    a deleted file keeps answering on pooled connections while every write is lost."""
    with store.engine.connect() as conn:
        conn.execute(sa.select(schema.shows.c.id).limit(1)).all()
        if store.engine.dialect.name == "sqlite":
            for row in conn.execute(sa.text("PRAGMA database_list")):
                path = str(row[2] or "")
                if row[1] == "main" and path and not os.path.exists(path):
                    return False
    return True


def build_asgi(
    app: AsyncApp,
    store: Store,
    *,
    metrics: Metrics | None = None,
    readiness: Mapping[str, Probe] | None = None,
) -> ASGIApp:
    """POST /slack/events → Bolt, after the body limit and the signature are checked on the
    raw bytes (401 before anything is parsed); GET the OAuth install paths → Bolt's flow;
    and :func:`ops_routes` (/healthz, /readyz, /metrics)."""
    events = _events_handler(app, metrics)
    handler = AsyncSlackRequestHandler(app)
    return Starlette(
        routes=[
            Route(EVENTS_PATH, events, methods=["POST"]),
            Route(INSTALL_PATH, handler.handle, methods=["GET"]),
            Route(REDIRECT_PATH, handler.handle, methods=["GET"]),
            *ops_routes(store, metrics, readiness),
        ]
    )


def ops_routes(
    store: Store, metrics: Metrics | None, readiness: Mapping[str, Probe] | None
) -> list[Route]:
    """GET /healthz → 200 ``{"ok": true}`` when the store answers with its schema, else 503
    (liveness); GET /readyz → the readiness checks (``bot.ops.readiness``); GET /metrics →
    the Prometheus exposition (each when given)."""

    async def healthz(request: Request) -> Response:
        try:
            ok = await asyncio.to_thread(store_healthy, store)
        except sa.exc.SQLAlchemyError as exc:
            # Polled every few seconds by a load balancer: one line, not a traceback each.
            log.warning("store health check failed: %s", str(exc).splitlines()[0])
            ok = False
        except Exception:  # a health check reports, it never raises
            log.exception("store health check failed")
            ok = False
        return JSONResponse({"ok": bool(ok)}, status_code=200 if ok else 503)

    routes = [Route(HEALTH_PATH, healthz, methods=["GET"])]
    if readiness is not None:
        probes = readiness

        async def readyz(request: Request) -> Response:
            body, status = render(await run_checks(probes))
            return Response(body, status, media_type="application/json")

        routes.append(Route(READY_PATH, readyz, methods=["GET"]))
    if metrics is not None:
        exposition = metrics.exposition

        async def scrape(request: Request) -> Response:
            # The store's gauges query the database: off the event loop.
            data = await asyncio.to_thread(exposition)
            return Response(data, 200, media_type=CONTENT_TYPE)

        routes.append(Route(METRICS_PATH, scrape, methods=["GET"]))
    return routes


def ops_app(
    store: Store, metrics: Metrics | None, readiness: Mapping[str, Probe] | None
) -> ASGIApp:
    """The listener on METRICS_PORT: :func:`ops_routes` only."""
    return Starlette(routes=ops_routes(store, metrics, readiness))


class _Server(uvicorn.Server):
    """uvicorn without its signal handlers: the caller owns the process and its loop."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def make_server(
    settings: Settings, asgi_app: ASGIApp, *, host: str = "0.0.0.0", port: int | None = None
) -> uvicorn.Server:
    guard = ConnectionGuard(
        settings.http_header_timeout, settings.http_max_connections or default_max_connections()
    )
    config = uvicorn.Config(
        asgi_app,
        host=host,
        port=settings.port if port is None else port,
        lifespan="off",
        access_log=False,
        log_level="warning",
        # No handlers of uvicorn's own: its lines go to the root logger's, formatted (and
        # redacted) like every other line, JSON included (bot.logs).
        log_config=None,
        http=guarded_protocol(AutoHTTPProtocol, guard),
        backlog=BACKLOG,
    )
    return _Server(config)


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
