"""The ``digestbot worker`` process: what its jobs share, and the worker run until
SIGTERM/SIGINT (procrastinate's: running jobs finish first).

A worker opens the store (migrated: the queue's tables with it), waits for Slack to accept
the token, subscribes the config file's channels when the file changed since the last
start, and runs the queue's tasks (:mod:`bot.jobs.tasks`) with one :class:`Runtime`: the
store, one outbox and deliverer (their pace and bound are the worker's), one HTTP client
for feeds, and the bounds on fetches and parses at once.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import httpx

from bot.delivery.deliverer import Deliverer
from bot.delivery.outbox import Outbox
from bot.jobs.enrichment import GitHubSession
from bot.jobs.ingest import parse_limit
from bot.jobs.queue import make_app
from bot.jobs.scheduler import wait_for_slack
from bot.runtime import make_outbox, open_store, sync_config_channels_once, tokens_at_rest
from config.settings import Settings, ShowConfig
from digests.render.renderer import Renderer
from digests.sources.fetch import make_http_client
from digests.store import Store

if TYPE_CHECKING:
    from bot.ops.metrics import Metrics
    from bot.process import ProcessOps

log = logging.getLogger(__name__)


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class Runtime:
    """What every job of one worker shares (``additional_context["runtime"]``)."""

    settings: Settings
    store: Store
    outbox: Outbox
    deliverer: Deliverer
    renderer: Renderer
    http_client: httpx.AsyncClient
    github: GitHubSession
    fetch_gate: asyncio.Semaphore
    parse_gate: asyncio.Semaphore
    metrics: Metrics | None = None
    clock: Callable[[], datetime] = _utcnow
    recapped: set[tuple[int, int]] = field(default_factory=set)  # weeks fanned out here
    file_shows: dict[str, ShowConfig] = field(init=False)  # the config file's, by name

    def __post_init__(self) -> None:
        self.file_shows = {s.name: s for s in self.settings.shows}

    @classmethod
    def of(
        cls,
        settings: Settings,
        store: Store,
        outbox: Outbox,
        http_client: httpx.AsyncClient,
        metrics: Metrics | None = None,
    ) -> Runtime:
        return cls(
            settings, store, outbox, Deliverer.of(settings, store, outbox, metrics),
            Renderer.of(settings), http_client, GitHubSession(settings),
            asyncio.Semaphore(settings.fetch_concurrency), parse_limit(), metrics,
        )  # fmt: skip

    async def aclose(self) -> None:
        await self.github.aclose()
        await self.deliverer.aclose()


async def run_worker(
    settings: Settings,
    *,
    ops: ProcessOps | None = None,
    start_backoff: float = 1.0,
    name: str | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """The worker process; returns when stopped: SIGTERM/SIGINT (procrastinate's handlers),
    or ``stop`` when given (a process that handles the signals itself: ``digestbot run``)."""
    store = await asyncio.to_thread(open_store, settings)
    try:
        if ops is not None:
            ops.opened(store)
            from bot.ops.queue_metrics import QueueCollector

            ops.metrics.registry.register(QueueCollector(store.engine))
        await tokens_at_rest(settings)
        team_id = await wait_for_slack(settings, stop or asyncio.Event(), backoff=start_backoff)
        if team_id is None:
            return
        if ops is not None:
            ops.slack_accepted()
        await asyncio.to_thread(sync_config_channels_once, settings, store, team_id)
        await _work(settings, store, ops, name, stop)
    finally:
        await asyncio.to_thread(store.close)


async def _work(
    settings: Settings,
    store: Store,
    ops: ProcessOps | None,
    name: str | None,
    stop: asyncio.Event | None,
) -> None:
    metrics = ops.metrics if ops is not None else None
    outbox = make_outbox(settings, sys.stdout, store)
    observe = metrics.fetched if metrics is not None else None
    app = make_app(settings)
    async with make_http_client(observe=observe) as http_client:
        rt = Runtime.of(settings, store, outbox, http_client, metrics)
        if metrics is not None:
            rt.github.observe = metrics.github_answer
        running = False
        if ops is not None:
            ops.clock_running(lambda: running)
        try:
            async with app.open_async():
                running = True
                log.info(
                    "worker started: %d jobs at once, %d fetches, %d Slack calls in flight",
                    settings.worker_concurrency, settings.fetch_concurrency,
                    settings.delivery_concurrency,
                )  # fmt: skip
                work = asyncio.ensure_future(
                    app.run_worker_async(
                        name=name or "worker",
                        additional_context={"runtime": rt},
                        install_signal_handlers=stop is None,
                    )
                )
                if stop is not None:
                    # Cancelled, the worker lets its running jobs finish (its shutdown).
                    waiting = asyncio.ensure_future(stop.wait())
                    await asyncio.wait({work, waiting}, return_when=asyncio.FIRST_COMPLETED)
                    waiting.cancel()
                    work.cancel()
                await asyncio.gather(work, return_exceptions=stop is not None)
        finally:
            running = False
            await rt.aclose()
            await outbox.close()
