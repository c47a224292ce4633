"""One poll-and-deliver cycle: fetch each show's feed, store it, decide, deliver.

``poll_show`` never raises for a bad feed: a failure is recorded (error, consecutive
failures, backed-off ``next_poll_at``) and returned as the result. ``run_once`` is what
``digestbot run --once`` and every scheduled poll job call.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, TextIO, TypeVar

import httpx

from bot.delivery import Deliverer, Delivery, DeliveryReport
from bot.outbox import Outbox
from config.settings import Settings, ShowConfig
from digests.decide import (
    Due,
    Notice,
    candidate_episodes,
    decide,
    episode_key,
    feed_notice,
    next_poll_at,
)
from digests.errors import DigestError, StoreError
from digests.extract import build_episodes
from digests.fetch import fetch
from digests.models import Episode
from digests.parse import parse_bytes
from digests.render import Renderer, mrkdwn
from digests.store import Store
from digests.store.ledger import Ledger, ShowLock
from digests.types import FetchState, Subscription

log = logging.getLogger(__name__)

T = TypeVar("T")

# Episodes considered per show each cycle besides those that changed: the first poll's
# backfill comes from these, and older ones are the archive the bot never posts.
CANDIDATES = 25
# Shows polled at once in one cycle (fewer on PostgreSQL: see poll_limit).
FETCH_CONCURRENCY = 16
PG_CONCURRENCY = 5


@dataclass(frozen=True)
class PollResult:
    show: str
    # failed: the feed (counted, backed off); error: ours (store, template); busy: another
    # clock is polling it right now.
    status: Literal["ok", "not_modified", "failed", "error", "busy"]
    episodes: tuple[Episode, ...] = ()  # what the feed holds now (empty when not modified)
    new: int = 0
    changed: tuple[Episode, ...] = ()
    added: tuple[Episode, ...] = ()  # the episodes this poll stored for the first time
    error: str | None = None
    state: FetchState = field(default_factory=FetchState)
    notice: Notice | None = None

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "not_modified")


@dataclass
class RunReport:
    polls: list[PollResult] = field(default_factory=list)
    delivery: DeliveryReport = field(default_factory=DeliveryReport)
    due: int = 0
    errors: list[str] = field(default_factory=list)  # shows whose deliveries could not be planned

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


async def _db(fn: Callable[[], T]) -> T:
    # The store is synchronous; its calls go to a thread so fetches keep flowing.
    return await asyncio.to_thread(fn)


async def poll_show(
    settings: Settings,
    store: Store,
    http_client: httpx.AsyncClient,
    show: ShowConfig,
    now: datetime,
) -> PollResult:
    """Fetch, parse, extract and store one show's feed; record how it went."""
    before = await _db(lambda: store.fetch_state(show.name))
    location = settings.feed_location(show)
    schedule = settings.schedule
    try:
        result = await fetch(
            http_client,
            location,
            etag=before.etag,
            last_modified=before.last_modified,
            max_bytes=settings.max_feed_bytes,
        )
        episodes: list[Episode] = []
        upserts = []
        if result.status == "ok":
            parsed = parse_bytes(result.content or b"", location, result.content_type)
            episodes = build_episodes(parsed, show.name, show.repo)
            upserts = await _db(lambda: store.upsert_episodes(episodes, now))
    except StoreError:
        raise  # our database, not the feed: not a feed failure, nothing to back off
    except DigestError as exc:
        failures = before.failures + 1
        after = replace(
            before,
            last_polled_at=now,
            last_error=exc.format_message(),
            failures=failures,
            next_poll_at=next_poll_at(
                now,
                poll_minutes=schedule.poll_minutes,
                failures=failures,
                max_backoff_minutes=schedule.max_backoff_minutes,
                retry_after=getattr(exc, "retry_after", None),
            ),
        )
        await _db(lambda: store.save_fetch_state(show.name, after))
        log.warning("feed %s failed (%d in a row): %s", show.name, failures, after.last_error)
        return PollResult(
            show.name,
            "failed",
            error=after.last_error,
            state=after,
            notice=feed_notice(show.name, before, after),
        )
    after = FetchState(
        etag=result.etag or before.etag,
        last_modified=result.last_modified or before.last_modified,
        last_polled_at=now,
        last_success_at=now,
        last_error=None,
        failures=0,
        next_poll_at=next_poll_at(
            now,
            poll_minutes=schedule.poll_minutes,
            failures=0,
            max_backoff_minutes=schedule.max_backoff_minutes,
            retry_after=result.retry_after,
            max_age=result.max_age,
        ),
        # Cleared only once the recovery notice is out (see run_once).
        failing_notified=before.failing_notified,
    )
    await _db(lambda: store.save_fetch_state(show.name, after))
    return PollResult(
        show.name,
        "ok" if result.status == "ok" else "not_modified",
        # As stored: an undated episode carries the date the bot first saw it.
        episodes=tuple(u.episode for u in upserts),
        new=sum(1 for u in upserts if u.status == "new"),
        changed=tuple(u.episode for u in upserts if u.status == "changed"),
        added=tuple(u.episode for u in upserts if u.status == "new"),
        state=after,
        notice=feed_notice(show.name, before, after),
    )


def plan(
    settings: Settings,
    show: str,
    candidates: Sequence[Episode],
    subscriptions: Sequence[Subscription],
    ledger: Ledger,
    renderer: Renderer,
    first_seen: Mapping[str, datetime] | None = None,
) -> tuple[list[Due], list[Delivery]]:
    """The decisions for one show and their rendered deliveries (each episode rendered once).

    ``first_seen``: guid → when the store first had the episode (see ``decide``)."""
    keys = [episode_key(show, e.guid) for e in candidates]
    channels = [(s.team_id, s.channel_id) for s in subscriptions]
    entries = ledger.entries("episode", keys, channels)
    due = decide(
        show,
        candidates,
        subscriptions,
        entries,
        backfill=settings.backfill,
        first_seen=first_seen,
    )
    rendered: dict[str, tuple[dict[str, Any], tuple[dict[str, Any], ...]]] = {}
    items: list[Delivery] = []
    for d in due:
        if d.episode.guid not in rendered:
            message = dict(renderer.digest(d.episode))
            thread = (
                tuple(dict(m) for m in renderer.thread_reply(d.episode))
                if settings.thread_replies
                else ()
            )
            rendered[d.episode.guid] = (message, thread)
        message, thread = rendered[d.episode.guid]
        items.append(
            Delivery(
                team_id=d.team_id,
                channel_id=d.channel_id,
                kind="episode",
                key=d.key,
                message=message,
                thread=thread,
                manage_thread=settings.thread_replies,
                content_hash=d.episode.content_hash(),
                metadata={"show": show, "guid": d.episode.guid[:200]},
                published_at=d.episode.published_at,
            )
        )
    return due, items


def in_date_order(items: Iterable[Delivery]) -> list[Delivery]:
    """Episode deliveries by (published, show, key): the order each channel gets them in.

    The deliverer works through each channel's items in list order, one at a time, so
    sorting the whole list orders every channel; items with no date keep their place first.
    """

    def order(item: Delivery) -> tuple[bool, datetime, str, str]:
        when = item.published_at or datetime.min.replace(tzinfo=UTC)
        return (item.published_at is not None, when, str(item.metadata.get("show", "")), item.key)

    return sorted(items, key=order)


def notice_deliveries(notice: Notice, subscriptions: Iterable[Subscription]) -> list[Delivery]:
    text = mrkdwn(notice.text)
    message = {
        "text": notice.text,
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": str(text)}}],
    }
    return [
        Delivery(s.team_id, s.channel_id, "notice", notice.key, message)
        for s in subscriptions
        if not s.paused
    ]


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
) -> RunReport:
    """Poll every configured show (or ``shows``), decide, and deliver; one cycle.

    ``poll_gate`` bounds the shows in flight; the scheduler shares one across its jobs.
    """
    own = deliverer is None
    deliverer = deliverer or Deliverer(store, outbox)
    renderer = renderer or Renderer(settings.templates_dir, tz=settings.tz)
    report = RunReport()
    try:
        ledger = deliverer.ledger
        gate = poll_gate or poll_limit(ledger)

        def after_poll(
            show: ShowConfig, result: PollResult
        ) -> tuple[list[Delivery], list[Delivery]]:
            subs = store.subscriptions(show=show.name)
            active = [s for s in subs if not s.paused and s.team_id not in deliverer.stopped_teams]
            notices = notice_deliveries(result.notice, active) if result.notice else []
            if result.status == "failed" or not active:
                return notices, []
            limit = max(CANDIDATES, settings.backfill)
            recent = store.recent(limit, [show.name])
            # A few new items are a normal poll, and each is a candidate whatever its date
            # (a late, backdated episode too); thousands are a first read of the archive,
            # which the newest `limit` cover.
            added = result.added if len(result.added) <= limit else ()
            candidates = candidate_episodes(recent, [*result.changed, *added], limit=limit)
            seen = store.first_seen(show.name, [e.guid for e in candidates])
            _, items = plan(settings, show.name, candidates, active, ledger, renderer, seen)
            return notices, items

        async def one(show: ShowConfig) -> tuple[PollResult, list[Delivery], list[Delivery]]:
            async with gate:
                return await locked(show)

        async def locked(show: ShowConfig) -> tuple[PollResult, list[Delivery], list[Delivery]]:
            lock = ShowLock(ledger, show.name)
            # SQLite has one process and no lock to take: skip the thread hop.
            got = await _db(lock.acquire) if ledger.is_postgres else True
            if not got:  # another clock is polling this show right now; it delivers too
                return PollResult(show.name, "busy"), [], []
            try:
                result = await poll_show(settings, store, http_client, show, now)
                # One thread hop for everything the decision reads (a cycle of many unchanged
                # feeds is mostly this).
                notices, items = await _db(lambda: after_poll(show, result))
                return result, notices, items
            except Exception as exc:
                # One show's bad template, parser bug or database hiccup must not stop the
                # others; the show is polled again next time.
                log.exception("poll of %s failed", show.name)
                message = exc.format_message() if isinstance(exc, DigestError) else repr(exc)
                report.errors.append(f"{show.name}: {message}")
                return PollResult(show.name, "error", error=message), [], []
            finally:
                if ledger.is_postgres:
                    await _db(lock.release)

        outcomes = await asyncio.gather(
            *(one(s) for s in (shows if shows is not None else settings.shows))
        )
        notices = [n for _, ns, _ in outcomes for n in ns]
        # Planned show by show; posted oldest first across shows, so in a channel that
        # follows several the newest digest ends up at the bottom.
        items = in_date_order(i for _, _, its in outcomes for i in its)
        report.polls = [p for p, _, _ in outcomes]
        report.due = len(items)
        report.delivery = await deliverer.deliver([*notices, *items])
        await _record_notices(store, report)
    finally:
        if own:
            await deliverer.aclose()
    log.info("poll cycle: %s", report.summary())
    return report


def poll_limit(ledger: Ledger) -> asyncio.Semaphore:
    """How many shows may be polled at once.

    On PostgreSQL each show in flight holds a pooled connection for its advisory lock and
    needs another for its queries, so stay well inside the store's pool.
    """
    return asyncio.Semaphore(PG_CONCURRENCY if ledger.is_postgres else FETCH_CONCURRENCY)


async def _record_notices(store: Store, report: RunReport) -> None:
    """Remember a feed's failure was announced (or its recovery) once a notice is out.

    Not while any channel's copy is still owed (a transient failure, another clock
    mid-post): the next poll then makes the same notice again, under the same key, and the
    ledger sends it only where it is missing. Channels that refused it for good (archived,
    a revoked token) do not hold the others back.
    """
    done = {
        ident[3]
        for ident in [
            *report.delivery.posted,
            *report.delivery.recovered,
            *report.delivery.unchanged,
        ]
        if ident[2] == "notice"
    }
    owed = {
        ident[3]
        for ident in [*report.delivery.deferred, *report.delivery.busy]
        if ident[2] == "notice"
    }
    for poll in report.polls:
        notice = poll.notice
        if notice is None or notice.key in owed:
            continue
        if notice.key not in done and not _nobody_to_tell(report, notice):
            continue
        state = replace(poll.state, failing_notified=notice.kind == "failing")
        await asyncio.to_thread(store.save_fetch_state, poll.show, state)


def _nobody_to_tell(report: RunReport, notice: Notice) -> bool:
    idents = [
        *report.delivery.posted,
        *report.delivery.recovered,
        *report.delivery.unchanged,
        *report.delivery.failed,
        *report.delivery.held,
        *report.delivery.busy,
    ]
    return not any(i[2] == "notice" and i[3] == notice.key for i in idents)


class Sweeper:
    """Finishes what dead deliverers left: the other clock's half-done fan-out, a crashed run.

    Each sweep asks the ledger for orphans (unfinished rows whose owner is gone, see
    :meth:`Ledger.orphans`), plans their shows again from the store — no fetch: the
    episodes are stored, and the decision re-offers every unfinished row — and delivers
    those rows. The claim protocol does the rest: a row that may have landed is looked for
    in the channel first. Orphans the plan no longer wants (the channel was paused or
    unsubscribed since) are remembered as they are, so they are not planned every sweep.
    """

    def __init__(
        self,
        settings: Settings,
        store: Store,
        deliverer: Deliverer,
        renderer: Renderer | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.deliverer = deliverer
        self.renderer = renderer or Renderer(settings.templates_dir, tz=settings.tz)
        self._passed_over: set[tuple[int, str, int]] = set()

    def _show_of(self, key: str) -> str | None:
        names = [s.name for s in self.settings.shows if key.startswith(f"{s.name}:")]
        return max(names, key=len) if names else None

    async def sweep(self) -> DeliveryReport:
        orphans = [
            r
            for r in await self.deliverer.orphans()
            # Notices are made again by the next poll until every channel has one, and the
            # recap job owns its own; episodes are what a dead clock leaves half-delivered.
            if r.kind == "episode" and (r.id, r.state, r.attempts) not in self._passed_over
        ]
        by_show: dict[str, set[tuple[str, str, str, str]]] = {}
        for row in orphans:
            show = self._show_of(row.key)
            if show is None:  # a show no longer configured
                self._passed_over.add((row.id, row.state, row.attempts))
                continue
            by_show.setdefault(show, set()).add(row.ident)
        if not by_show:
            return DeliveryReport()
        log.info("recovering %d orphaned deliveries", sum(map(len, by_show.values())))
        ledger = self.deliverer.ledger

        def replan() -> list[Delivery]:
            items: list[Delivery] = []
            for show, idents in sorted(by_show.items()):
                subs = [
                    s
                    for s in self.store.subscriptions(show=show)
                    if not s.paused and s.team_id not in self.deliverer.stopped_teams
                ]
                limit = max(CANDIDATES, self.settings.backfill)
                recent = self.store.recent(limit, [show])
                candidates = candidate_episodes(recent, [], limit=limit)
                seen = self.store.first_seen(show, [e.guid for e in candidates])
                _, planned = plan(
                    self.settings, show, candidates, subs, ledger, self.renderer, seen
                )
                items += [i for i in planned if i.ident in idents]
            return in_date_order(items)

        items = await _db(replan)
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


def print_report(report: RunReport, stream: TextIO) -> None:
    stream.write(report.summary() + "\n")
