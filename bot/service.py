"""The processes the CLI starts: one poll (`run --once`), web, clock, both, and the recap.

Each command imports what it uses when it starts (the store, the renderer, the app, the
scheduler; ``bot.runtime`` opens the store the same way), so one that fails on its settings
or its port says so before loading them: they are most of a second of a process's start.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import socket
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, TextIO
from zoneinfo import ZoneInfo

from bot.runtime import (
    REQUEST_DB_WAIT,
    make_outbox,
    open_store,
    resolve_team_id,
    settle_heap,
    sync_config_channels,
    tokens_at_rest,
    utcnow,
)
from config.settings import Settings
from digests.errors import ConfigError, SlackError

if TYPE_CHECKING:
    from bot.process import ProcessOps
    from digests.render.limits import Message
    from digests.store import Store

log = logging.getLogger(__name__)


async def run_once(settings: Settings, out: TextIO) -> object:
    """Poll every show, deliver what is new (or print it without a token), send the daily
    digests that are due (as the clock's daily job would), and return."""
    from bot.delivery.deliverer import Deliverer
    from bot.jobs.daily import post_daily
    from bot.jobs.pipeline import print_report
    from bot.jobs.pipeline import run_once as poll_once
    from digests.render.renderer import Renderer
    from digests.sources.fetch import make_http_client

    store = await asyncio.to_thread(open_store, settings)
    try:
        team_id = await resolve_team_id(settings)
        await asyncio.to_thread(sync_config_channels, settings, store, team_id)
        outbox = make_outbox(settings, out, store)
        deliverer = Deliverer.of(settings, store, outbox)
        renderer = Renderer.of(settings)
        try:
            async with make_http_client() as http_client:
                report = await poll_once(
                    settings, store, outbox, http_client, utcnow(), deliverer=deliverer,
                    renderer=renderer,
                )  # fmt: skip
            # The daily digests due now, as the clock's daily job sends them: once a channel
            # and day (the ledger), so a cron running `run --once` hourly posts each once.
            report.delivery.merge(await post_daily(settings, store, deliverer, renderer, utcnow()))
        finally:
            await deliverer.aclose()
            await outbox.close()
        print_report(report, out)
        return report
    finally:
        store.close()


def _listen(settings: Settings) -> socket.socket | None:
    """The HTTP socket, bound before anything starts (None in Socket Mode)."""
    from bot.server.listen import listen

    return None if settings.slack_app_token else listen("0.0.0.0", settings.port)


async def _web(
    settings: Settings, stop: asyncio.Event, sock: socket.socket | None, ops: ProcessOps
) -> None:
    """The Bolt app over HTTP on ``sock`` (or Socket Mode with an app token) until ``stop``
    is set."""
    from bot.listeners.app import build_app
    from bot.server.asgi import build_asgi, serve
    from digests.render.renderer import Renderer

    store = await asyncio.to_thread(lambda: open_store(settings, wait=REQUEST_DB_WAIT))
    await tokens_at_rest(settings)
    app = build_app(settings, store, Renderer.of(settings))
    if settings.slack_bot_token:
        ops.slack_client(app.client.auth_test)
    ops.opened(store)
    settle_heap()
    try:
        if settings.slack_app_token:
            from bot.server.socket_mode import start_socket_mode

            handler = await start_socket_mode(app, settings.slack_app_token)
            log.warning("connected over Socket Mode")
            try:
                await stop.wait()
            finally:
                await handler.close_async()
            return
        log.warning("serving Slack requests on port %s at /slack/events", settings.port)
        asgi = build_asgi(app, store, metrics=ops.metrics, readiness=ops.probes())
        server = asyncio.ensure_future(serve(settings, asgi, sock=sock))
        stopping = asyncio.ensure_future(stop.wait())
        # The server ending on its own (an error) ends the web part too.
        await asyncio.wait((server, stopping), return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        server.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await server
    finally:
        if sock is not None:
            sock.close()
        store.close()


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    return stop


def _can_serve(settings: Settings) -> bool:
    return bool(settings.slack_app_token or settings.slack_signing_secret)


async def run_web(settings: Settings) -> None:
    if not _can_serve(settings):
        raise ConfigError(
            "serve needs SLACK_SIGNING_SECRET (HTTP) or SLACK_APP_TOKEN (Socket Mode)"
        )
    sock = _listen(settings)
    from bot.process import ProcessOps

    ops = ProcessOps.bind(settings)
    try:
        await _web(settings, _stop_on_signals(), sock, ops)
    finally:
        await ops.aclose()


async def run_clock(settings: Settings) -> None:
    """The clock: APScheduler on SQLite; on PostgreSQL a worker (``digestbot worker``),
    the queue having replaced the clocks' own coordination (CHANGELOG)."""
    if _on_postgres(settings):
        log.warning("digestbot clock on PostgreSQL runs a worker: `digestbot worker`")
        await run_worker(settings)
        return
    from bot.jobs.scheduler import run_clock as clock
    from bot.process import ProcessOps

    ops = ProcessOps.bind(settings, clock=True)
    try:
        await clock(settings, ops=ops)
    finally:
        await ops.aclose()


def _on_postgres(settings: Settings) -> bool:
    from sqlalchemy.engine import make_url

    return make_url(settings.database_url).get_backend_name() == "postgresql"


async def run_worker(settings: Settings, *, name: str | None = None) -> None:
    """``digestbot worker``: the job queue's jobs (PostgreSQL only)."""
    from bot.jobs.queue import conninfo

    conninfo(settings.database_url)  # SQLite: one line, before anything loads
    from bot.jobs.worker import run_worker as work
    from bot.process import ProcessOps

    ops = ProcessOps.bind(settings, clock=True)
    try:
        await work(settings, ops=ops, name=name)
    finally:
        await ops.aclose()


def print_jobs(settings: Settings, out: TextIO) -> int:
    """``digestbot jobs``: the queue's jobs per queue and state, workers, due polls."""
    from bot.jobs.queue import conninfo

    conninfo(settings.database_url)
    from bot.jobs.tasks import due_polls
    from digests.store.jobs import queue_counts, worker_count

    store = open_store(settings)
    try:
        counts = queue_counts(store.engine)
        workers = worker_count(store.engine)
        due = due_polls(settings, store, utcnow(), timedelta(0))
    finally:
        store.close()
    out.write(f"{'queue':<10} {'todo':>6} {'doing':>6} {'failed':>6}  oldest waiting\n")
    for queue in sorted({c.queue for c in counts}):
        row = {c.status: c for c in counts if c.queue == queue}
        n = [row[s].jobs if s in row else 0 for s in ("todo", "doing", "failed")]
        oldest = row["todo"].oldest_seconds if "todo" in row else None
        age = f"{oldest:.0f} s" if oldest is not None else "-"
        out.write(f"{queue:<10} {n[0]:>6} {n[1]:>6} {n[2]:>6}  {age}\n")
    out.write(f"workers: {workers}; polls due now: {len(due)}\n")
    return 0


async def run_all(settings: Settings) -> None:
    """One process: the web app (when Slack credentials are set) beside the clock (on
    PostgreSQL, a worker of the job queue)."""
    web = _can_serve(settings)
    sock = _listen(settings) if web else None
    from bot.process import ProcessOps

    ops = ProcessOps.bind(settings, clock=True)
    stop = _stop_on_signals()
    if _on_postgres(settings):
        from bot.jobs.worker import run_worker as work

        tasks = [asyncio.ensure_future(work(settings, ops=ops, stop=stop))]
    else:
        from bot.jobs.scheduler import run_clock as clock

        tasks = [asyncio.ensure_future(clock(settings, stop=stop, ops=ops))]
    if web:
        tasks.append(asyncio.ensure_future(_web(settings, stop, sock, ops)))
    else:
        log.warning("no SLACK_SIGNING_SECRET or SLACK_APP_TOKEN: running the scheduler only")
    done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    await ops.aclose()
    for task in done:
        if (error := task.exception()) is not None:
            raise error


def recap_week(value: str | None, now: datetime, tz: ZoneInfo) -> tuple[int, int]:
    """The ISO week ``digestbot recap --week VALUE`` means, read like ``/episodes week``
    (``2026-W41``, ``w41``, ``last``, ``this``, a date); none given: the last complete
    week in ``tz``, whatever the time of day (unlike the scheduled recap, which waits for
    its hour)."""
    from bot.listeners.commands.model import Week
    from bot.listeners.commands.parse import parse_command

    today = now.astimezone(tz).date()
    command = parse_command(f"week {value or 'last'}", (), today)
    if not isinstance(command, Week) or command.year is None or command.number is None:
        raise ConfigError(f"--week {value!r} is not a week; write it like 2026-W41")
    return command.year, command.number


async def recap(
    settings: Settings,
    out: TextIO,
    *,
    week: str | None,
    shows: list[str] | None,
    fmt: str,
    post: bool,
    channels: list[str],
) -> int:
    """``digestbot recap``: print the week's recap, or post it to each of ``channels`` (once
    each)."""
    from bot.catalog import live
    from bot.jobs.recap_build import weekly
    from digests.render.recap import recap_text, render_recap
    from digests.render.renderer import Renderer

    if post and not channels:
        raise ConfigError("--post needs --channel C… (the Slack channel ID to post to)")
    year, number = recap_week(week, utcnow(), settings.tz)
    store = await asyncio.to_thread(open_store, settings)
    try:
        # The shows added from Slack too: named, recapped with the others, their repos known.
        settings = await asyncio.to_thread(live, settings, store)
        names = _recap_names(settings, shows or [])
        renderer = Renderer.of(settings)
        recap = weekly(settings, store, year=year, week=number, shows=names)
        if fmt == "text" and not post:
            out.write(recap_text(recap, renderer).rstrip("\n") + "\n")
            return 0
        built = render_recap(recap, renderer, quiet_week=settings.quiet_week)
        if built is None:
            out.write(f"no episodes in {recap.key}; nothing to post\n")
            return 0
        message, thread = built
        if not post:
            json.dump({**message, "thread": thread}, out, indent=2, ensure_ascii=False)
            out.write("\n")
            return 0
        return await _post_recap(settings, store, channels, recap.key, message, thread, out)
    finally:
        store.close()


def _recap_names(settings: Settings, shows: list[str]) -> list[str]:
    """``--show`` names as the shows are called (any case); none: every show."""
    names: list[str] = []
    for name in shows:
        show = settings.show(name)
        if show is None:
            known = ", ".join(s.name for s in settings.shows)
            raise ConfigError(f"unknown show {name!r} (configured: {known})")
        names.append(show.name)
    return names or [s.name for s in settings.shows]


async def _post_recap(
    settings: Settings,
    store: Store,
    channels: list[str],
    key: str,
    message: Message,
    thread: list[Message],
    out: TextIO,
) -> int:
    """Through the same ledger as the scheduled recap, so it never lands twice; to every
    channel, one refusing it leaves the others posted (and is the error line)."""
    from bot.delivery.deliverer import Deliverer
    from bot.delivery.items import Delivery

    team_id = await resolve_team_id(settings)
    items = [
        Delivery(
            team_id=team_id,
            channel_id=channel,
            kind="recap",
            key=key,
            message=message,
            thread=tuple(thread),
        )
        for channel in dict.fromkeys(channels)
    ]
    outbox = make_outbox(settings, out, store)
    try:
        report = await Deliverer.of(settings, store, outbox).deliver(items)
    finally:
        await outbox.close()
    done = set(report.unchanged) | set(report.recovered)
    refused: list[tuple[str, str]] = []
    for item in items:
        why = (
            report.failed.get(item.ident)
            or report.paused.get((item.team_id, item.channel_id))
            or report.stopped_teams.get(item.team_id)
        )
        if why:
            refused.append((item.channel_id, why))
        else:
            state = "already posted" if item.ident in done else "posted"
            out.write(f"recap {key} {state} to {item.channel_id}\n")
    if refused:
        channel, why = refused[0]
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        line = f"recap {key} was not posted to {channel}: {why}{more}"
        raise SlackError("chat.postMessage", line)
    return 0
