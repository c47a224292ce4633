"""The pipeline's decide and render phases (5–6) for one show, shared by the poll cycle and
the recovery sweep: what to decide over, which deliveries are due, and those rendered."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bot.catalog import find_show
from bot.delivery.items import Delivery
from bot.jobs.enrichment import attach_details
from config.settings import Settings
from digests.decide.deliveries import candidate_episodes, decide, episode_key, key_guid
from digests.decide.pr_news import PrNewsDay, news_hash, pr_news
from digests.models import Episode
from digests.pulls import pr_key
from digests.render.renderer import Renderer
from digests.store import Store
from digests.store.ledger import Ledger
from digests.store.pr_details import PrDetailsStore
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
    # PR news for the threads of channels that asked for it (`pr-updates on`), by
    # (team, channel, guid).
    news: Mapping[tuple[str, str, str], tuple[PrNewsDay, ...]] = field(default_factory=dict)


# -- phase 5: decide ------------------------------------------------------------------------


def active_subscriptions(
    store: Store, show: str, stopped_teams: Iterable[str], team_id: str | None = None
) -> list[Subscription]:
    """The show's subscriptions (of ``team_id``'s channels only, when given) that may be
    posted to now."""
    stopped = set(stopped_teams)
    subs = store.subscriptions(team_id=team_id, show=show)
    return [s for s in subs if not s.paused and s.team_id not in stopped]


def candidate_limit(settings: Settings) -> int:
    """The newest episodes a plan decides over (and the most new ones it takes whatever
    their date)."""
    return max(CANDIDATES, settings.backfill)


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
    limit = candidate_limit(settings)
    recent = store.recent(limit, [show])
    # A few new items are a normal poll, and each is a candidate whatever its date (a late,
    # backdated episode too); thousands are a first read of the archive, which the newest
    # `limit` cover.
    fresh = added if len(added) <= limit else ()
    candidates = candidate_episodes(recent, [*changed, *fresh], limit=limit)
    # Phase 4½, enrich: with the PR details stored so far (bot.jobs.enrichment), so a digest whose
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
        _news(settings, store, show, subscriptions, candidates),
    )


def _news(
    settings: Settings,
    store: Store,
    show: str,
    subscriptions: Sequence[Subscription],
    candidates: Sequence[Episode],
) -> dict[tuple[str, str, str], tuple[PrNewsDay, ...]]:
    """Each `pr-updates on` channel's PR news for the candidates (with GitHub on)."""
    asking = [s for s in subscriptions if s.pr_updates]
    with_prs = [e for e in candidates if e.pr_info]
    if not asking or not with_prs or not settings.github_enabled:
        return {}
    config = find_show(settings, store, show)
    repo = config.repo if config is not None else ""
    keys = {e.guid: {pr.number: pr_key(pr, repo) for pr in e.pull_requests} for e in with_prs}
    details = PrDetailsStore(store).get({k for ks in keys.values() for k in ks.values()})
    days = {e.guid: pr_news(e, details, keys[e.guid]) for e in with_prs}
    return {
        (s.team_id, s.channel_id, guid): found
        for s in asking
        for guid, found in days.items()
        if found
    }


def named_episodes(store: Store, show: str, keys: Iterable[str]) -> list[Episode]:
    """The stored episodes of ``show`` that ledger keys (``episode_key``) name."""
    found: list[Episode] = []
    for key in sorted(set(keys)):
        guid, digest = key_guid(show, key)
        episode = store.episode(show, guid) if guid is not None else None
        if episode is None and digest is not None:
            episode = store.episode_by_guid_key(show, digest)
        if episode is not None:
            found.append(episode)
    return found


def decide_due(settings: Settings, state: PlanState) -> list[Due]:
    """Phase 5, pure: the deliveries due for the show (see ``digests.decide.deliveries.decide``)."""
    return decide(
        state.show,
        state.candidates,
        state.subscriptions,
        state.entries,
        backfill=settings.backfill,
        first_seen=state.first_seen,
        archive_seen_at=state.archive_seen_at,
        channel_hashes=_channel_hashes(state),
    )


def _channel_hashes(state: PlanState) -> dict[tuple[str, str, str], str]:
    """The content hash of each episode as a channel with PR news is shown it."""
    hashes = {e.guid: e.content_hash() for e in state.candidates if e.pr_info}
    return {
        (team, channel, guid): news_hash(hashes[guid], days)
        for (team, channel, guid), days in state.news.items()
        if guid in hashes
    }


# -- phase 6: render ------------------------------------------------------------------------


def render_due(
    settings: Settings,
    renderer: Renderer,
    due: Sequence[Due],
    news: Mapping[tuple[str, str, str], tuple[PrNewsDay, ...]] | None = None,
) -> list[Delivery]:
    """Phase 6: each due episode rendered once (digest and thread), as deliveries; a
    channel with PR news (``news``) gets its replies after the thread's."""
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
        days = (news or {}).get((d.team_id, d.channel_id, d.episode.guid), ())
        if days and settings.thread_replies:
            thread = (*thread, *(dict(m) for m in renderer.pr_news(d.episode, days)))
        items.append(
            Delivery(
                team_id=d.team_id,
                channel_id=d.channel_id,
                kind="episode",
                key=d.key,
                message=message,
                thread=thread,
                manage_thread=settings.thread_replies,
                content_hash=news_hash(d.episode.content_hash(), days),
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
