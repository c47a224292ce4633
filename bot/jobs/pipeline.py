"""The poll pipeline, phase by phase: fetch → parse → extract → store → decide → render → deliver.

One show goes through the phases like this::

    1-3  read_feed       fetch; parse + extract in a worker thread       (bot.jobs.ingest)
    3b   transcripts     linked transcripts fetched once, stored, read
                         (digests.linked.transcripts)
    4    store_episodes  upsert what the feed holds; undated items dated; items whose
                         bytes hash as stored ones were skipped in 2–3: unchanged
    5    plan_state      what the decision reads: candidates, first seen  (bot.jobs.plan)
         decide_due      which deliveries are due: digests.decide.deliveries, pure   (bot.jobs.plan)
    6    render_due      each due episode rendered once, as deliveries    (bot.jobs.plan)
    7    deliver_cycle   notices, then digests oldest first, exactly once

``poll_show`` (phases 1–4) never raises for a bad feed: a failure is recorded (error,
consecutive failures, backed-off ``next_poll_at``) and returned as the result.
``run_once`` is what ``digestbot run --once`` and every scheduled poll job call; the
sweeper (``bot.jobs.sweeper``) re-uses phases 5–7 for rows a dead deliverer left, and the CLI's
``parse`` / ``render`` phases 1–3.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TextIO

import httpx

from bot.catalog import feed_cap, feed_policy
from bot.delivery.deliverer import Deliverer
from bot.delivery.items import Delivery, DeliveryReport
from bot.delivery.outbox import Outbox
from bot.jobs.cycle import PollResult, RunReport, ShowPlan
from bot.jobs.enrichment import start_enrichment
from bot.jobs.follows import deliver_follows, news
from bot.jobs.ingest import FeedRequest, parse_limit, read_feed
from bot.jobs.plan import (
    active_subscriptions,
    candidate_limit,
    decide_due,
    in_date_order,
    notice_deliveries,
    plan_state,
    render_due,
)
from bot.jobs.poll_state import (
    PollBook,
    cycle_start,
    failed_state,
    failure_reason,
    finish_polls,
    needs_plan,
    polled_state,
    quiet_after,
    record_notices,
)
from config.settings import Settings, ShowConfig
from digests.decide.deliveries import feed_notice
from digests.enrich.client import GitHubClient
from digests.enrich.details import EnrichReport
from digests.errors import DigestError, StoreError
from digests.extract.pr_budget import within_poll_budget
from digests.linked.transcripts import linked_documents_phase
from digests.models import Episode
from digests.render.renderer import Renderer
from digests.store import Store
from digests.store.ledger import Ledger
from digests.types import (
    EpisodeStatus,
    FetchState,
    UpsertResult,
)

log = logging.getLogger(__name__)


# Shows polled at once in one cycle (fewer on PostgreSQL: see poll_limit).
FETCH_CONCURRENCY = 16
PG_CONCURRENCY = 5

# Where a cycle's digests go: the deliverer itself, or (``digestbot worker``) jobs that
# any worker delivers (``bot.jobs.fanout``): the digests planned here, and the shows whose
# digests each workspace's job plans itself (``ShowPlan.later``, by show).
FanOut = Callable[[Sequence[Delivery], Mapping[str, tuple[str, ...]]], Awaitable[DeliveryReport]]


# -- phases 1–4: fetch, parse, extract, store ---------------------------------------------------


def store_episodes(
    store: Store, episodes: Sequence[Episode], now: datetime, *, skipped: int = 0
) -> list[UpsertResult]:
    """Phase 4: the feed's episodes stored; each comes back new, changed or unchanged, and
    an undated one with the date the store gave it (PR references bounded per poll, over
    the episodes read: ``skipped`` items are stored already)."""
    return store.upsert_episodes(within_poll_budget(episodes), now, skipped=skipped)


async def poll_show(
    settings: Settings,
    store: Store,
    http_client: httpx.AsyncClient,
    show: ShowConfig,
    now: datetime,
    *,
    parse_gate: asyncio.Semaphore | None = None,
    book: PollBook | None = None,
    only_due: bool = False,
) -> PollResult:
    """Phases 1–4 for one show: fetch, parse, extract and store its feed; record how it went.

    ``parse_gate`` bounds the parses at once (see ``bot.jobs.ingest``); ``book``, the cycle's
    fetch states, read already and (a 304's) written later (``bot.jobs.poll_state``).
    ``only_due`` (the clock's polls, read under the show's lock): a show whose stored next
    poll is later than ``now`` is not fetched (``not_due``)."""
    known = book.state(show.name) if book is not None else None
    if known is None:
        # The store is synchronous: its calls run in a thread so fetches keep flowing.
        known = await asyncio.to_thread(store.poll_state, show.name)
    before, inputs = known
    if only_due and before.next_poll_at is not None and before.next_poll_at > now:
        # Another clock polled it since this one last did: the show lock keeps two polls
        # from overlapping, this keeps a second one from following the first.
        return PollResult(show.name, "not_due", state=before)
    request = FeedRequest(
        settings.feed_location(show),
        feed_cap(settings, show),  # added from Slack: their own cap and public addresses only
        etag=before.etag,
        last_modified=before.last_modified,
        allow_private=feed_policy(settings, show),
    )
    try:
        read = await read_feed(
            http_client, request, show=show.name, repo=show.repo, prs=show.prs,
            parse_gate=parse_gate, known=lambda: asyncio.to_thread(store.item_hashes, show.name),
        )  # fmt: skip
        if read.episodes:  # phase 3b: linked transcripts and chapters, fetched once, stored
            full = await linked_documents_phase(
                store, http_client, read.episodes, show=show.name, repo=show.repo, now=now,
                prs=show.prs, feed_location=request.location, feed_policy=request.allow_private,
            )  # fmt: skip
            read = replace(read, episodes=full)
        upserts = (
            await asyncio.to_thread(
                store_episodes, store, read.episodes, now, skipped=read.skipped
            )
            if read.fetched.status == "ok"
            else []
        )
    except StoreError:
        raise  # our database, not the feed: not a feed failure, nothing to back off
    except DigestError as exc:
        after = failed_state(settings, before, exc, now)
        await asyncio.to_thread(store.save_fetch_state, show.name, after)
        log.warning("feed %s failed (%d in a row): %s", show.name, after.failures, after.last_error)
        notice = feed_notice(show.name, before, after)
        return PollResult(show.name, "failed", error=after.last_error, state=after,
                          notice=notice, reason=failure_reason(exc))  # fmt: skip
    after = polled_state(settings, before, read, now)
    log_read_note(show.name, before, after)
    if book is None or not book.defer(show.name, before, after, read.fetched.status):
        await asyncio.to_thread(store.save_fetch_state, show.name, after)
    added = tuple(u.episode for u in upserts if u.status == EpisodeStatus.NEW)
    return PollResult(
        show.name,
        "ok" if read.fetched.status == "ok" else "not_modified",
        # As stored: an undated episode carries the date the bot first saw it.
        episodes=tuple(u.episode for u in upserts),
        new=len(added),
        changed=tuple(u.episode for u in upserts if u.status == EpisodeStatus.CHANGED),
        added=added,
        state=after,
        notice=feed_notice(show.name, before, after),
        inputs=inputs,
        lenient=bool(read.lenient),
    )


def plan_show(
    settings: Settings,
    store: Store,
    ledger: Ledger,
    renderer: Renderer,
    poll: PollResult,
    stopped_teams: Iterable[str],
    unfinished: frozenset[str | None] = frozenset(),
) -> ShowPlan:
    """Phases 5–6 after one poll, in one thread hop: the poll's notice, and its due digests
    rendered. An unchanged feed whose plan inputs have not moved since a plan that found
    nothing due is not planned again (``bot.jobs.poll_state``; ``unfinished``: the shows with a
    ledger row pending or posting)."""
    stopped = tuple(stopped_teams)
    if not needs_plan(settings, poll, stopped, unfinished):
        return ShowPlan(poll)
    active = active_subscriptions(store, poll.show, stopped)
    notices = notice_deliveries(renderer, poll.notice, active) if poll.notice else []
    if poll.status == "failed":
        return ShowPlan(poll, tuple(notices))
    items: list[Delivery] = []
    if active:
        state = plan_state(
            settings, store, ledger, poll.show, active, changed=poll.changed, added=poll.added
        )
        items = render_due(settings, renderer, decide_due(settings, state), state.news)
    quiet = quiet_after(settings, poll.inputs, stopped, len(items))
    if poll.inputs is not None and quiet != poll.inputs.quiet_plan:
        store.mark_quiet(poll.show, quiet)
    return ShowPlan(poll, tuple(notices), tuple(items))


# -- phase 7: deliver -------------------------------------------------------------------------


async def deliver_cycle(
    store: Store,
    deliverer: Deliverer,
    plans: Sequence[ShowPlan],
    fan_out: FanOut | None = None,
) -> RunReport:
    """Phase 7: every show's notices, then their digests posted oldest first across shows
    (so in a channel that follows several the newest digest ends up at the bottom).
    ``fan_out``: the digests handed to it instead (the notices are still delivered here)."""
    notices = [n for p in plans for n in p.notices]
    items = in_date_order(i for p in plans for i in p.items)
    report = RunReport(
        polls=[p.poll for p in plans],
        due=len(items),
        errors=[f"{p.poll.show}: {p.poll.error}" for p in plans if p.poll.status == "error"],
    )
    if fan_out is None:
        report.delivery = await deliverer.deliver([*notices, *items])
    else:
        report.delivery = await deliverer.deliver(notices)
        later = {p.poll.show: p.later for p in plans if p.later is not None}
        report.delivery.merge(await fan_out(items, later))
    await record_notices(store, report)
    return report


# -- the cycle ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cycle:
    """One poll cycle's fixed inputs, so each show's path is a plain method."""

    settings: Settings
    store: Store
    http_client: httpx.AsyncClient
    now: datetime
    deliverer: Deliverer
    renderer: Renderer
    gate: asyncio.Semaphore
    parse_gate: asyncio.Semaphore
    unfinished: frozenset[str | None] = frozenset()  # shows with ledger rows still owed
    book: PollBook | None = None
    only_due: bool = False  # the clock's: a show polled within its interval is skipped
    plan_later: bool = False  # the worker's: a poll's news planned by each workspace's job

    async def show(self, show: ShowConfig) -> ShowPlan:
        """Phases 1–6 for one show, within the gate."""
        async with self.gate:
            return await self._poll_and_plan(show)

    async def _poll_and_plan(self, show: ShowConfig) -> ShowPlan:
        try:
            poll = await poll_show(
                self.settings,
                self.store,
                self.http_client,
                show,
                self.now,
                parse_gate=self.parse_gate,
                book=self.book,
                only_due=self.only_due,
            )
            if poll.status == "not_due":
                return ShowPlan(poll)  # the clock that polled it planned and delivered
            later = poll.news(candidate_limit(self.settings)) if self.plan_later else None
            if later is not None:
                return ShowPlan(poll, later=later)
            stopped = tuple(self.deliverer.stopped_teams)
            ledger = self.deliverer.ledger
            owed = self.unfinished
            if not needs_plan(self.settings, poll, stopped, owed):
                return ShowPlan(poll)  # quiet (a pure check): no thread hop to say so
            return await asyncio.to_thread(
                plan_show, self.settings, self.store, ledger, self.renderer, poll, stopped, owed
            )
        except Exception as exc:
            # One show's bad template, parser bug or database hiccup must not stop the
            # others; the show is polled again next time.
            message = exc.format_message() if isinstance(exc, DigestError) else repr(exc)
            bug = not isinstance(exc, DigestError)  # a locked store, a template: one line
            log.log(logging.ERROR if bug else logging.WARNING, "poll of %s failed: %s",
                    show.name, message, exc_info=bug)  # fmt: skip
            return ShowPlan(PollResult(show.name, "error", error=message))


async def run_once(
    settings: Settings,
    store: Store,
    outbox: Outbox,
    http_client: httpx.AsyncClient,
    now: datetime,
    *,
    deliverer: Deliverer | None = None,
    renderer: Renderer | None = None,
    shows: Sequence[ShowConfig] | None = None,
    poll_gate: asyncio.Semaphore | None = None,
    parse_gate: asyncio.Semaphore | None = None,
    github: GitHubClient | None = None,
    only_due: bool = False,
    fan_out: FanOut | None = None,
    enrich: bool = True,
) -> RunReport:
    """Poll every configured show (or ``shows``), decide, and deliver; one cycle.

    ``poll_gate`` bounds the shows in flight and ``parse_gate`` the feeds parsed at once; the
    scheduler shares one of each across its jobs, and one ``github`` client (else the cycle
    makes its own when GitHub is enabled). ``only_due``: skip the shows whose stored next
    poll has not come (the clock's jobs; ``run --once`` polls every show when asked).
    ``fan_out``: where the digests go instead of the deliverer (``digestbot worker``);
    ``enrich=False``: no GitHub refresh here (the worker's is a job of its own).
    """
    own = deliverer is None
    deliverer = deliverer or Deliverer.of(settings, store, outbox)
    ledger = deliverer.ledger
    enriching: asyncio.Task[EnrichReport] | None = None
    book: PollBook | None = None
    try:
        # One thread hop before the polls: every show (the config file's and those added
        # from Slack, unless ``shows``), the shows with ledger rows owed, and (a cycle with
        # its own gate) every show's fetch state.
        start = await asyncio.to_thread(
            cycle_start, settings, store, ledger, shows, read_all=poll_gate is None
        )
        settings, shows, unfinished, book = start
        renderer = renderer or Renderer.of(settings)
        # Shows added from Slack too: a PR of another repository is labelled owner/repo#n.
        renderer.repos.update({s.name: s.repo for s in shows if s.name not in renderer.repos})
        cycle = Cycle(
            settings, store, http_client, now, deliverer, renderer,
            poll_gate or poll_limit(ledger), parse_gate or parse_limit(), unfinished, book,
            only_due, plan_later=fan_out is not None,
        )  # fmt: skip
        plans = await asyncio.gather(*(cycle.show(s) for s in shows))
        await finish_polls(store, book)  # before delivery: record_notices writes after it
        polled = [p.poll.show for p in plans if p.poll.ok]
        enriching = start_enrichment(settings, store, polled, now, github) if enrich else None
        plans, enriched = await within_github_budget(cycle, plans, enriching)
        report = await deliver_cycle(store, deliverer, plans, fan_out)
        if enriching is not None:
            report.enriched = await enriching  # done already when it answered in time
            if not enriched:
                await deliver_enriched(cycle, report, report.enriched)
        await deliver_follows(settings, store, deliverer, news(report.polls, now), report.enriched)
    finally:
        if enriching is not None and not enriching.done():
            enriching.cancel()
        if own:
            await deliverer.aclose()
    log.info("poll cycle: %s", report.summary())
    return report


async def within_github_budget(
    cycle: Cycle, plans: list[ShowPlan], enriching: asyncio.Task[EnrichReport] | None
) -> tuple[list[ShowPlan], bool]:
    """GitHub gets ``github_first_post_seconds`` before new digests naming PRs are posted:
    when it answers in time, the shows with digests due are planned again with the details
    (nothing is delivered yet, so the same digests come back, complete) and the second
    return is True; otherwise the plans as they were, posted now and edited later."""
    budget = cycle.settings.github_first_post_seconds
    due = [i for i, p in enumerate(plans) if any(d.kind == "episode" for d in p.items)]
    if enriching is None or not due or budget <= 0:
        return plans, False
    done, _ = await asyncio.wait({enriching}, timeout=budget)
    if not done:
        return plans, False
    if enriching.result().changed:
        stopped = tuple(cycle.deliverer.stopped_teams)
        ledger = cycle.deliverer.ledger

        def replan(plan: ShowPlan) -> ShowPlan:
            return plan_show(
                cycle.settings, cycle.store, ledger, cycle.renderer, plan.poll, stopped,
                cycle.unfinished,
            )  # fmt: skip

        plans = list(plans)
        for i in due:
            plans[i] = await asyncio.to_thread(replan, plans[i])
    return plans, True


async def deliver_enriched(cycle: Cycle, report: RunReport, enriched: EnrichReport) -> None:
    """Phases 5–7 again once GitHub has answered, for the shows polled: a digest whose PRs
    now read differently has a new content hash, so the posted one is edited in place."""
    if not enriched.changed:
        return
    stopped = tuple(cycle.deliverer.stopped_teams)
    ledger = cycle.deliverer.ledger

    def replan(show: str) -> ShowPlan:
        unchanged = PollResult(show, "not_modified")
        return plan_show(cycle.settings, cycle.store, ledger, cycle.renderer, unchanged, stopped)

    items: list[Delivery] = []
    for poll in report.polls:
        if poll.ok:
            items += (await asyncio.to_thread(replan, poll.show)).items
    if items:
        report.delivery.merge(await cycle.deliverer.deliver(in_date_order(items)))


def poll_limit(ledger: Ledger) -> asyncio.Semaphore:
    """How many shows may be polled at once.

    On PostgreSQL each show in flight needs pooled connections for its queries, so stay
    well inside the store's pool.
    """
    return asyncio.Semaphore(PG_CONCURRENCY if ledger.is_postgres else FETCH_CONCURRENCY)


def print_report(report: RunReport, stream: TextIO) -> None:
    stream.write(report.summary() + "\n")


def log_read_note(show: str, before: FetchState, after: FetchState) -> None:
    """Tell the operator when a feed starts (or stops) being read leniently, or what is
    wrong with it changes: once, not on every poll."""
    if after.read_note == before.read_note:
        return
    if after.read_note is not None:
        log.warning("feed %s: its XML has errors (%s); read leniently", show, after.read_note)
    else:
        log.info("feed %s: its XML is well-formed again", show)
