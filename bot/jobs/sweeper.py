"""The recovery sweep: rows a dead deliverer left, planned again by the code that planned
them (an episode's through the pipeline's decide and render phases, with no fetch: the
episodes are stored; a recap's and a daily digest's by their jobs) and delivered."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from bot.delivery.deliverer import Deliverer
from bot.delivery.items import Delivery, DeliveryReport
from bot.jobs.daily import recoverable_dailies
from bot.jobs.follows import recoverable_dms
from bot.jobs.plan import active_subscriptions, decide_due, in_date_order, plan_state, render_due
from bot.jobs.recap import recoverable_recaps
from config.settings import Settings
from digests.render.renderer import Renderer
from digests.store import Store
from digests.store.ledger import LedgerRow
from digests.types import Ident

log = logging.getLogger(__name__)

# The kinds a dead clock may leave half-delivered and the sweep plans again. Feed notices
# are made again by the next poll until every channel has one; of the other notices, the
# follow DMs are planned again here.
RECOVERED_KINDS = frozenset({"episode", "recap", "daily", "notice"})


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Sweeper:
    """Finishes what dead deliverers left: the other clock's half-done fan-out, a crashed run.

    Each sweep asks the ledger for orphans (unfinished rows whose owner is gone, see
    :meth:`Ledger.orphans`) and plans them again: episodes from the store by their shows'
    decision, which re-offers every unfinished row; recaps and daily digests as their jobs
    would at ``now`` (those jobs run once at their time, so without the sweep a recap a
    dead clock was posting waited for a clock to start). Only the orphans' own rows are
    delivered. The claim protocol does the rest: a row that may have landed is looked for
    in the channel first. Orphans the plan no longer wants (the channel was paused or
    unsubscribed since, a recap of a past week) are remembered as they are, so they are
    not planned every sweep.
    """

    def __init__(
        self,
        settings: Settings,
        store: Store,
        deliverer: Deliverer,
        renderer: Renderer | None = None,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        self.settings = settings
        self.store = store
        self.deliverer = deliverer
        self.renderer = renderer or Renderer.of(settings)
        self.clock = clock
        self._passed_over: set[tuple[int, str, int]] = set()

    def show_of(self, row: LedgerRow) -> str | None:
        """The configured show a ledger row belongs to; None for a show no longer configured.

        Rows written before the ledger kept the show are told by their key's prefix (the
        longest configured name that matches, since names may contain ``:``)."""
        names = [s.name for s in self.settings.shows]
        if row.show:
            return row.show if row.show in names else None
        prefixed = [n for n in names if row.key.startswith(f"{n}:")]
        return max(prefixed, key=len) if prefixed else None

    def replan(self, by_show: dict[str, set[Ident]]) -> list[Delivery]:
        """The orphans' shows through phases 5–6 again; only the orphans' own rows kept."""
        items: list[Delivery] = []
        for show, idents in sorted(by_show.items()):
            subs = active_subscriptions(self.store, show, self.deliverer.stopped_teams)
            state = plan_state(self.settings, self.store, self.deliverer.ledger, show, subs)
            due = decide_due(self.settings, state)
            planned = render_due(self.settings, self.renderer, due, state.news)
            items += [i for i in planned if i.ident in idents]
        return in_date_order(items)

    def replan_all(
        self, by_show: dict[str, set[Ident]], by_kind: dict[str, set[Ident]]
    ) -> list[Delivery]:
        """Every orphan planned again: episodes by show, then recaps and daily digests."""
        items = self.replan(by_show) if by_show else []
        now = self.clock()
        if recaps := by_kind.get("recap"):
            items += recoverable_recaps(self.settings, self.store, self.renderer, now, recaps)
        if dailies := by_kind.get("daily"):
            items += recoverable_dailies(
                self.settings, self.store, self.deliverer, self.renderer, now, dailies
            )
        if notices := by_kind.get("notice"):
            items += recoverable_dms(self.store, notices, now)
        return items

    async def sweep(self) -> DeliveryReport:
        orphans = [
            r
            for r in await self.deliverer.orphans()
            if r.kind in RECOVERED_KINDS and (r.id, r.state, r.attempts) not in self._passed_over
        ]
        by_show: dict[str, set[Ident]] = {}
        by_kind: dict[str, set[Ident]] = {}
        for row in orphans:
            if row.kind != "episode":
                by_kind.setdefault(row.kind, set()).add(row.ident)
                continue
            show = self.show_of(row)
            if show is None:
                self._passed_over.add((row.id, row.state, row.attempts))
                continue
            by_show.setdefault(show, set()).add(row.ident)
        if not by_show and not by_kind:
            return DeliveryReport()
        log.info("recovering %d orphaned deliveries", len(orphans))
        items = await asyncio.to_thread(self.replan_all, by_show, by_kind)
        wanted = {i.ident for i in items}
        for row in orphans:
            if row.ident not in wanted:
                self._passed_over.add((row.id, row.state, row.attempts))
        report = await self.deliverer.deliver(items)
        log.info(
            "recovery sweep: %d posted, %d recovered, %d busy, %d failed",
            len(report.posted),
            len(report.recovered),
            len(report.busy),
            len(report.failed),
        )
        return report
