"""Decisions, pure: which deliveries are due, when to poll next, when to tell a channel.

Nothing here touches the network, the database or the clock: callers pass the stored state,
the poll's episodes and ``now``, and get data back. That is what makes the exactly-once and
no-archive rules testable as tables.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from digests.filters import Filter
from digests.models import Episode
from digests.types import (
    Action,
    Due,
    FetchState,
    LedgerEntry,
    LedgerState,
    Notice,
    RowStep,
    Subscription,
)

# Rows in these states never reached a known end: deciding again re-offers them and the
# deliverer's claim protocol resolves whether the earlier attempt landed.
UNFINISHED: frozenset[str] = frozenset(
    {LedgerState.PENDING, LedgerState.POSTING, LedgerState.PAUSED}
)

# New digests one channel may get in one poll (the newest ones), unless the configured
# backfill asks for more.
CATCH_UP = 10
# How far back `resume` looks at what arrived while paused (to count it, and to catch up).
MISSED_SCAN = 200

# A single failed fetch is routine (a deploy, a blip); channels hear about a feed only once
# it has failed this many polls in a row.
FAILING_AFTER = 2


MAX_KEY = 300  # the ledger's key column


def episode_key(show: str, guid: str) -> str:
    """The ledger key of an episode digest: unique per show, stable across edits.

    Guids are often URLs of any length; a long one is replaced by its hash so the key
    still fits the ledger column and stays unique.
    """
    key = f"{show}:{guid}"
    if len(key) <= MAX_KEY:
        return key
    return f"{show[:200]}:sha256:{hashlib.sha256(guid.encode()).hexdigest()}"


def key_guid(show: str, key: str) -> tuple[str | None, str | None]:
    """What ``episode_key`` made ``key`` of: the guid as written, and the sha256 of a long
    guid it holds instead (either None when the key cannot be that: another show's)."""
    hashed = f"{show[:200]}:sha256:"
    digest = key.removeprefix(hashed) if key.startswith(hashed) else None
    guid = key.removeprefix(f"{show}:") if key.startswith(f"{show}:") else None
    return guid, digest


def matches(episode: Episode, keywords: Filter | Iterable[str]) -> bool:
    """Whether ``episode`` passes a subscription's filter (no terms: every episode).

    A ``Filter``, or its terms as ``digests.filters`` reads them: words and phrases (any of
    them), ``+word`` (must be there), ``-word`` (must not); each at the start of a word,
    case-insensitive, in headline, summary, transcript and the titles and areas of its PRs
    when known. So "kernel" finds "kernels" but "mps" does not find "jumps".
    """
    chosen = (
        keywords if isinstance(keywords, Filter) else Filter.from_terms(keywords, strict=False)
    )
    if chosen.empty:
        return True
    extra = [f"{info.title} {info.area or ''}" for info in episode.pr_info]
    return chosen.matches(episode, extra)


def promised(
    recent: Sequence[Episode], keywords: Filter | Iterable[str], backfill: int
) -> list[Episode]:
    """What a new subscription is promised at once (its reply names them, and they are
    recorded for the channel, so the next poll posts them whatever else arrives): of
    ``recent``, the show's newest episodes newest first, the newest ``backfill`` that
    ``keywords`` let through."""
    if backfill <= 0:
        return []
    return [e for e in recent if matches(e, keywords)][:backfill]


def _newest(episodes: Sequence[Episode], count: int) -> set[str]:
    ordered = sorted(episodes, key=lambda e: (e.published_at, e.guid), reverse=True)
    return {e.guid for e in ordered[:count]}


def decide(
    show: str,
    episodes: Sequence[Episode],
    subscriptions: Sequence[Subscription],
    ledger: Mapping[tuple[str, str], Mapping[str, LedgerEntry]],
    *,
    backfill: int = 1,
    catch_up: int = CATCH_UP,
    first_seen: Mapping[str, datetime] | None = None,
    archive_seen_at: datetime | None = None,
    channel_hashes: Mapping[tuple[str, str, str], str] | None = None,
) -> list[Due]:
    """The deliveries due for ``show``, oldest episode first within each channel.

    ``channel_hashes``: a channel's own content hash of an episode, by (team, channel,
    guid), where what it is shown differs from the episode's (PR news in its thread).

    ``episodes`` are the show's candidates (the recent ones and any that changed);
    ``ledger`` maps (team, channel) to the entries for those episodes' keys. Per channel:

    - an episode already posted is updated when its content hash changed, else left alone;
    - a delivery that never finished (pending, posting, paused) is offered again;
    - a failed one is offered again only when the episode changed since;
    - an episode the channel has never had is due when it matches the keywords and is
      newer than the newest the channel already has — so later polls miss nothing even if
      several episodes arrived at once or a run crashed midway, and never reach back below
      that watermark. "Newer" is by ``first_seen`` (guid → when the store first had it)
      when given: a late episode backdated below the newest, or one after an item dated in
      the future, is still new to the channel, while those passed over in the same poll
      (the cap below, the first poll's archive) were seen no later than what it got. By
      publication date without it;
    - a channel that has nothing yet (among the candidates) gets the ``backfill`` newest,
      so its first poll never floods it with the archive, plus every episode that came
      after the subscription: published after it, or first seen after it and after the
      show's first poll (``archive_seen_at``, when the store first had anything of the
      show) — so a keyword channel gets each matching episode that arrives, however the
      feed dates it and however many arrive at once;
    - but at most ``catch_up`` (or ``backfill``, when larger: a first poll gets all it
      asked for) new posts per channel in one go, the newest: a channel resumed after
      weeks archived gets the latest few, not a wall of digests, and the older ones stay
      passed over for good, being older than what it then has.
    """
    candidates = [e for e in episodes if e.show == show]
    if not candidates:
        return []
    poll = _Candidates(
        show=show,
        ordered=sorted(candidates, key=lambda e: (e.published_at, e.guid)),
        hashes={e.guid: e.content_hash() for e in candidates},
        newest=_newest(candidates, backfill),
        cap=max(catch_up, backfill),
        first_seen=first_seen or {},
        archive_seen_at=archive_seen_at,
        channel_hashes=channel_hashes or {},
    )
    due: list[Due] = []
    for sub in subscriptions:
        # A channel in daily mode gets the day's episodes in one message (digests.decide.daily).
        if sub.show == show and not sub.paused and not sub.daily:
            due += _due_for(sub, ledger.get((sub.team_id, sub.channel_id), {}), poll)
    return due


@dataclass(frozen=True)
class _Candidates:
    """One show's candidates for one decision, with what every channel's rule reads."""

    show: str
    ordered: list[Episode]  # oldest first
    hashes: Mapping[str, str]
    newest: set[str]  # the backfill
    cap: int
    first_seen: Mapping[str, datetime]
    archive_seen_at: datetime | None
    channel_hashes: Mapping[tuple[str, str, str], str]

    def hash_for(self, sub: Subscription, episode: Episode) -> str:
        own = self.channel_hashes.get((sub.team_id, sub.channel_id, episode.guid))
        return own if own is not None else self.hashes[episode.guid]

    def arrival(self, episode: Episode) -> datetime:
        return self.first_seen.get(episode.guid) or episode.published_at


def _due_for(
    sub: Subscription, entries: Mapping[str, LedgerEntry], poll: _Candidates
) -> list[Due]:
    """One channel's share of the decision (see ``decide``)."""
    show = poll.show
    had = [e for e in poll.ordered if episode_key(show, e.guid) in entries]
    # Everything planned in one go gets its ledger row before the first post, so the
    # newest the channel knows is a safe watermark: older ones were had or passed over.
    since = max((poll.arrival(e) for e in had), default=None)
    mine: list[Due] = []
    new_keys: list[str] = []
    for episode in poll.ordered:
        key = episode_key(show, episode.guid)
        entry = entries.get(key)
        action = _action(entry, poll.hash_for(sub, episode))
        if entry is None:
            if since is not None:
                # Backfill and the subscription's age no longer apply: anything older
                # than the watermark was passed over (the catch-up cap) or never wanted.
                fresh = poll.arrival(episode) > since
            else:
                fresh = episode.guid in poll.newest or _after_subscription(
                    episode, sub, poll.first_seen.get(episode.guid), poll.archive_seen_at
                )
            if not (fresh and matches(episode, sub.filter)) or held_back(sub, episode, poll):
                continue
            new_keys.append(key)
        if action is not None:
            mine.append(Due(sub.team_id, sub.channel_id, show, episode, action, key))
    dropped = set(new_keys[: max(0, len(new_keys) - poll.cap)])
    return [d for d in mine if d.key not in dropped]


def _after_subscription(
    episode: Episode,
    sub: Subscription,
    seen_at: datetime | None,
    archive_seen_at: datetime | None,
) -> bool:
    """Whether ``episode`` reached the show after ``sub`` was made (not its archive)."""
    if sub.created_at is None:
        return False
    if episode.published_at >= sub.created_at:
        return True
    # The archive read on the show's first poll is "first seen" after a subscription the
    # config file made at start-up too, so only what came after that poll counts.
    return (
        seen_at is not None
        and archive_seen_at is not None
        and seen_at > max(sub.created_at, archive_seen_at)
    )


def _action(entry: LedgerEntry | None, content_hash: str) -> Action | None:
    if entry is None:
        return Action.POST
    # Planning offers every unfinished row again, whoever holds it: the claim sorts it out.
    step = ledger_step(entry, content_hash)
    if step is RowStep.EDIT:
        return Action.UPDATE
    return Action.POST if step in (RowStep.POST, RowStep.RECOVER) else None


def candidate_episodes(
    recent: Sequence[Episode], changed: Sequence[Episode], *, limit: int
) -> list[Episode]:
    """What to decide over: the ``limit`` newest plus anything that changed, no repeats."""
    chosen: dict[tuple[str, str], Episode] = {}
    ordered = sorted(recent, key=lambda e: (e.published_at, e.guid), reverse=True)
    for episode in [*ordered[:limit], *changed]:
        chosen[(episode.show, episode.guid)] = episode
    return list(chosen.values())


def next_poll_at(
    now: datetime,
    *,
    poll_minutes: int,
    failures: int,
    max_backoff_minutes: int = 24 * 60,
    retry_after: float | None = None,
    max_age: float | None = None,
) -> datetime:
    """When to poll next: the interval, doubled per consecutive failure up to the cap.

    The feed's own word counts too: ``Retry-After`` (on errors) and ``Cache-Control:
    max-age`` (fresh until then) push the next poll later, never earlier, and never past
    the cap so a bogus header cannot silence a feed for a year.
    """
    cap = float(max_backoff_minutes * 60)
    delay = float(poll_minutes * 60)
    if failures > 0:
        delay = delay * (2 ** min(failures, 32))
    for hint in (retry_after, max_age):
        if hint is not None and hint > delay:
            delay = hint
    return now + timedelta(seconds=min(delay, cap))


def feed_notice(
    show: str, before: FetchState, after: FetchState, *, failing_after: int = FAILING_AFTER
) -> Notice | None:
    """The notice one poll calls for, if any: once when a feed starts failing, once on recovery.

    The key names the last success before the streak, so a streak is announced once however
    many polls (or processes) see it, and a later streak gets its own notice.
    """
    streak = before.last_success_at.isoformat() if before.last_success_at else "never"
    if after.failures >= failing_after and not before.failing_notified:
        return Notice("failing", f"feed:{show}:failing:{streak}", show, after.last_error)
    if after.failures == 0 and before.failing_notified:
        return Notice("recovered", f"feed:{show}:recovered:{streak}", show)
    return None


def ledger_step(
    entry: LedgerEntry,
    content_hash: str,
    *,
    has_ts: bool = True,
    held_by_live_owner: bool = False,
) -> RowStep:
    """What to do with a delivery whose ledger row is ``entry``, now that its content hashes
    to ``content_hash`` (empty: content that is never edited, like recaps and notices).

    - posted and unchanged (or no ``ts`` on record to edit) → nothing; posted and changed →
      edit;
    - failed with the same content → refused: Slack said no to exactly this, asking again
      would loop; failed and changed since → post;
    - posting held by another deliverer that is alive (``held_by_live_owner``, the caller's
      probe) → busy; posting otherwise → recover (the post may have landed);
    - pending or paused → post.
    """
    changed = bool(content_hash) and entry.content_hash != content_hash
    if entry.state == LedgerState.POSTED:
        return RowStep.EDIT if changed and has_ts else RowStep.NOTHING
    if entry.state == LedgerState.FAILED:
        return RowStep.POST if changed else RowStep.REFUSED
    if entry.state == LedgerState.POSTING:
        return RowStep.BUSY if held_by_live_owner else RowStep.RECOVER
    if entry.state in UNFINISHED:
        return RowStep.POST
    return RowStep.NOTHING


def held_back(sub: Subscription, episode: Episode, poll: _Candidates) -> bool:
    """Whether ``episode`` reached the show while ``sub`` was paused by a user: such an
    episode is never posted there unless asked for (``resume --catch-up`` gives it a
    ledger row), however long ago the pause ended. Nor one that arrived before the channel
    last changed mode (from daily back to per episode): the daily digests had it."""
    arrival = poll.arrival(episode)
    changed = sub.mode_changed_at
    return sub.holds(arrival) or (changed is not None and arrival < changed)
