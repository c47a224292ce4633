"""One process's operating parts: its metrics, its readiness checks, the METRICS_PORT listener.

``serve``, ``clock`` and ``run`` each make one :class:`ProcessOps` and hand it to the parts
they start; the parts report what only they know (the store is open, Slack accepted the
token, the scheduler runs) and ``ProcessOps`` answers ``/metrics`` and ``/readyz`` from it.
Every process has its own registry and, with METRICS_PORT, its own port (docs/operating.md):
processes never share a port, so no multi-process aggregation is needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from bot.ops.metrics import Metrics, StoreCollector
from bot.ops.readiness import Probe, SlackProbe, database_probe, flag_probe
from config.settings import Settings

if TYPE_CHECKING:
    from digests.store import Store

log = logging.getLogger(__name__)


def engine_of(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).get_backend_name()


class ProcessOps:
    """See the module docstring. ``sock``: METRICS_PORT's socket, bound by the caller
    before anything starts (a taken port is one error line, as PORT's)."""

    def __init__(
        self, settings: Settings, sock: socket.socket | None = None, *, clock: bool = False
    ) -> None:
        self.settings = settings
        self.clock = clock  # a scheduler runs here: readiness checks it
        self.metrics = Metrics(
            engine=engine_of(settings.database_url), per_show=settings.metrics_per_show
        )
        self.sock = sock
        self.store: Store | None = None
        self.slack = SlackProbe(None) if not settings.slack_bot_token else None
        self.scheduler_up: Callable[[], bool] | None = None
        self._server: asyncio.Task[None] | None = None

    @classmethod
    def bind(cls, settings: Settings, *, clock: bool = False) -> ProcessOps:
        from bot.server.listen import listen

        port = settings.metrics_port
        sock = listen("0.0.0.0", port) if port is not None else None
        return cls(settings, sock, clock=clock)

    # -- what the parts report ------------------------------------------------------------
    def opened(self, store: Store) -> None:
        """The process's store is open: its gauges join the metrics, the listener starts."""
        if self.store is not None:
            return
        self.store = store
        poll = self.settings.schedule.poll_minutes * 60.0
        per_show = self.settings.metrics_per_show
        self.metrics.registry.register(StoreCollector(store, poll, per_show=per_show))
        if self.sock is not None:
            from bot.server.asgi import ops_app, serve

            app = ops_app(store, self.metrics, self.probes())
            self._server = asyncio.ensure_future(serve(self.settings, app, sock=self.sock))
            log.warning("metrics on port %s at /metrics", self.settings.metrics_port)

    def slack_client(self, auth_test: Callable[[], Awaitable[Any]] | None) -> None:
        """The web app's client: readiness asks it ``auth.test`` until Slack accepts."""
        if self.slack is None or (self.slack.call is None and not self.slack.accepted):
            self.slack = SlackProbe(auth_test)

    def slack_accepted(self) -> None:
        if self.slack is None:
            self.slack = SlackProbe(None)
        self.slack.accept()

    def clock_running(self, up: Callable[[], bool]) -> None:
        self.scheduler_up = up

    # -- what it answers ------------------------------------------------------------------
    def probes(self) -> dict[str, Probe]:
        """The checks, read at each request (parts report as they start)."""
        assert self.store is not None
        ops = self

        async def slack() -> tuple[bool, str]:
            if ops.slack is None:
                return False, "waiting for Slack to accept the token"
            return await ops.slack()

        async def scheduler() -> tuple[bool, str]:
            up = ops.scheduler_up
            return await flag_probe(up or (lambda: False), "running", "not running")()

        checks: dict[str, Probe] = {"database": database_probe(self.store), "slack": slack}
        if self.clock:
            checks["scheduler"] = scheduler
        return checks

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._server
            self._server = None
        if self.sock is not None:
            self.sock.close()
