"""What one poll cycle hands on: each show's poll (phases 1–4), its plan (phases 5–6) and the
cycle's report, as the pipeline, the scheduler, the follows and the metrics read them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from bot.delivery.items import Delivery, DeliveryReport
from digests.enrich.details import EnrichReport
from digests.models import Episode
from digests.types import FetchState, Notice, PlanInputs

__all__ = ["PollResult", "RunReport", "ShowPlan"]


@dataclass(frozen=True)
class PollResult:
    """Phases 1–4 for one show: what the feed holds now and what the poll stored."""

    show: str
    # failed: the feed (counted, backed off); error: ours (store, template); busy: another
    # clock is polling it right now; not_due: another clock polled it within its interval
    # (``state`` is that poll's, its ``next_poll_at`` the show's next poll).
    status: Literal["ok", "not_modified", "failed", "error", "busy", "not_due"]
    # What the feed holds now, as read (empty when not modified): not the items the parse
    # skipped because their bytes hash as stored ones — those are unchanged.
    episodes: tuple[Episode, ...] = ()
    new: int = 0
    changed: tuple[Episode, ...] = ()
    added: tuple[Episode, ...] = ()  # the episodes this poll stored for the first time
    error: str | None = None
    state: FetchState = field(default_factory=FetchState)
    notice: Notice | None = None
    inputs: PlanInputs | None = None  # what the poll's first read said of the plan's inputs
    reason: str | None = None  # failed: failure_reason's word for why (a metrics label)
    lenient: bool = False  # the feed was read only by the lenient parser (counted in metrics)

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "not_modified")

    @property
    def unchanged(self) -> bool:
        """Not modified, or every episode stored as it was."""
        return self.status == "not_modified" or (
            self.status == "ok" and not self.changed and not self.added
        )

    def news(self, limit: int) -> tuple[str, ...] | None:
        """The guids of the episodes this poll added or changed, when a plan can be left to
        the workspaces' jobs (``ShowPlan.later``): news, no notice, and at most ``limit`` of
        them (as many as a plan takes whatever their date). None: planned with the poll."""
        news = [*self.changed, *self.added]
        if self.status != "ok" or self.notice is not None or not news or len(news) > limit:
            return None
        return tuple(dict.fromkeys(e.guid for e in news))


@dataclass(frozen=True)
class ShowPlan:
    """One show's way through phases 1–6: the poll, its notices, its rendered digests.
    ``later``: phases 5–6 left to each workspace's job (``digestbot worker``), over the
    episodes this poll added or changed (their guids) besides the newest."""

    poll: PollResult
    notices: tuple[Delivery, ...] = ()
    items: tuple[Delivery, ...] = ()
    later: tuple[str, ...] | None = None


@dataclass
class RunReport:
    polls: list[PollResult] = field(default_factory=list)
    delivery: DeliveryReport = field(default_factory=DeliveryReport)
    due: int = 0
    errors: list[str] = field(default_factory=list)  # shows whose deliveries could not be planned
    enriched: EnrichReport | None = None  # what GitHub was asked beside delivery

    @property
    def fatal(self) -> bool:
        return self.delivery.fatal

    def summary(self) -> str:
        d = self.delivery
        failed = [p for p in self.polls if p.status == "failed"]
        return (
            f"{len(self.polls)} feed{'' if len(self.polls) == 1 else 's'} polled "
            f"({len(failed)} failing), "
            f"{len(d.posted)} posted, {len(d.updated)} updated, {len(d.recovered)} recovered, "
            f"{len(d.failed)} failed, {len(d.paused)} channels paused"
            + (f", {len(self.errors)} errors" if self.errors else "")
        )
