"""The pipeline's decide and render phases (5–6) for one show, shared by the poll cycle and
the recovery sweep: what to decide over, which deliveries are due, and those rendered."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bot.delivery import Delivery
from bot.enrichment import attach_details
from config.settings import Settings
from digests.decide import candidate_episodes, decide, episode_key
from digests.models import Episode
from digests.render import Renderer
from digests.store import Store
from digests.store.ledger import Ledger
from digests.types import Due, LedgerEntry, Notice, Subscription

# Episodes considered per show each cycle besides those that changed: the first poll's
# backfill comes from these, and older ones are the archive the bot never posts.
CANDIDATES = 25


@dataclass(frozen=True)
class PlanState:
    """Everything phase 5 decides over for one show, read from the store and the ledger."""

    show: str
    subscriptions: tuple[Subscription, ...]  # the active ones: not paused, team not stopped
    candidates: tuple[Episode, ...]
    first_seen: Mapping[str, datetime]  # guid → when the store first had it
    entries: Mapping[tuple[str, str], Mapping[str, LedgerEntry]]
    archive_seen_at: datetime | None = None  # when the show's archive was first read


# -- phase 5: decide ------------------------------------------------------------------------


def active_subscriptions(
    store: Store, show: str, stopped_teams: Iterable[str]
) -> list[Subscription]:
    """The show's subscriptions that may be posted to now."""
    stopped = set(stopped_teams)
    return [s for s in store.subscriptions(show=show) if not s.paused and s.team_id not in stopped]


def plan_state(
    settings: Settings,
    store: Store,
    ledger: Ledger,
    show: str,
    subscriptions: Sequence[Subscription],
    *,
    changed: Sequence[Episode] = (),
    added: Sequence[Episode] = (),
) -> PlanState:
    """What to decide over: the show's newest stored episodes plus those this poll changed
    or added, when the store first had each, and the ledger's rows for them."""
    limit = max(CANDIDATES, settings.backfill)
    recent = store.recent(limit, [show])
    # A few new items are a normal poll, and each is a candidate whatever its date (a late,
    # backdated episode too); thousands are a first read of the archive, which the newest
    # `limit` cover.
    fresh = added if len(added) <= limit else ()
    candidates = candidate_episodes(recent, [*changed, *fresh], limit=limit)
    # Phase 4½, enrich: with the PR details stored so far (bot.enrichment), so a digest whose
    # PRs now read differently has a new content hash and is edited.
    candidates = attach_details(settings, store, candidates)
    seen = store.first_seen(show, [e.guid for e in candidates])
    keys = [episode_key(show, e.guid) for e in candidates]
    channels = [(s.team_id, s.channel_id) for s in subscriptions]
    entries = ledger.entries("episode", keys, channels)
    return PlanState(
        show,
        tuple(subscriptions),
        tuple(candidates),
        seen,
        entries,
        store.archive_seen_at(show),
    )


def decide_due(settings: Settings, state: PlanState) -> list[Due]:
    """Phase 5, pure: the deliveries due for the show (see ``digests.decide.decide``)."""
    return decide(
        state.show,
        state.candidates,
        state.subscriptions,
        state.entries,
        backfill=settings.backfill,
        first_seen=state.first_seen,
        archive_seen_at=state.archive_seen_at,
    )


# -- phase 6: render ------------------------------------------------------------------------


def render_due(settings: Settings, renderer: Renderer, due: Sequence[Due]) -> list[Delivery]:
    """Phase 6: each due episode rendered once (digest and thread), as deliveries."""
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
                metadata={"show": d.show, "guid": d.episode.guid[:200]},
                published_at=d.episode.published_at,
            )
        )
    return items


def notice_deliveries(
    renderer: Renderer, notice: Notice, subscriptions: Iterable[Subscription]
) -> list[Delivery]:
    """A feed notice for each unpaused channel, rendered (escaped, within limits) once."""
    message = dict(renderer.notice(notice))
    return [
        Delivery(s.team_id, s.channel_id, "notice", notice.key, message)
        for s in subscriptions
        if not s.paused
    ]


def in_date_order(items: Iterable[Delivery]) -> list[Delivery]:
    """Episode deliveries by (published, show, key): the order each channel gets them in.

    The deliverer works through each channel's items in list order, one at a time, so
    sorting the whole list orders every channel; items with no date keep their place first.
    """

    def order(item: Delivery) -> tuple[bool, datetime, str, str]:
        when = item.published_at or datetime.min.replace(tzinfo=UTC)
        return (item.published_at is not None, when, str(item.metadata.get("show", "")), item.key)

    return sorted(items, key=order)
