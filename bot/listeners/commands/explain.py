"""`/episodes why <episode>`: find the episode as `nearby` reads it, gather what the store,
the ledger and the feed's state say about it for this channel, and put the pure answer of
``digests.decide.why.explain`` in words (with a permalink when it was posted)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, time, timedelta

from slack_sdk import WebClient

from bot.listeners.commands.base import Deps, Invocation
from bot.listeners.commands.control import until_text
from bot.listeners.commands.dates import show_day
from bot.listeners.commands.episodes import best_title_match, title_words
from bot.listeners.commands.model import (
    CommandError,
    Explain,
    NearbyDate,
    NearbyPr,
    NearbyTitle,
    NearbyUrl,
)
from bot.listeners.commands.replies import context, error_reply, message, section
from bot.listeners.commands.subscriptions import pause_reason
from bot.messages.basics import COMMAND
from bot.messages.command_text import command_arg
from bot.messages.control import (
    WHY_BEFORE,
    WHY_CAUGHT_UP,
    WHY_CHANNEL_PAUSED,
    WHY_DAILY,
    WHY_DAILY_ARCHIVE,
    WHY_DAILY_DUE,
    WHY_EXCLUDED,
    WHY_FAILED,
    WHY_FEED_FAILING,
    WHY_FOOTER,
    WHY_HELD,
    WHY_HELD_OPEN,
    WHY_LENIENT,
    WHY_NO_TERM,
    WHY_NOT_IN_FEED,
    WHY_NOT_POLLED,
    WHY_NOT_SUBSCRIBED,
    WHY_NOTHING,
    WHY_ON_ITS_WAY,
    WHY_PASSED_OVER,
    WHY_POSTED,
    WHY_POSTED_LINK,
    WHY_REQUIRED,
    WHY_RETRYING,
    WHY_TITLE,
    WHY_UPDATED,
)
from bot.messages.subscriptions import STATUS_NEVER, STATUS_NOT_SCHEDULED
from config.settings import Settings
from digests.decide.daily import catch_up_key
from digests.decide.deliveries import CATCH_UP, MISSED_SCAN, episode_key, matches
from digests.decide.why import Delivered, Reason, Why, explain
from digests.filters import Verdict
from digests.models import Episode
from digests.render import escape
from digests.render.limits import Message
from digests.store.jobs import planned_guids
from digests.store.ledger import Ledger
from digests.types import FetchState, Subscription

log = logging.getLogger(__name__)

Permalink = Callable[[str, str], str | None]
TITLE_CANDIDATES = 50


def permalinks(settings: Settings) -> Permalink | None:
    """``chat.getPermalink`` for a posted digest (channel, ts), or None without a token.
    Synchronous: `/episodes` handlers run in a worker thread."""
    if not settings.slack_bot_token:
        return None
    client = WebClient(token=settings.slack_bot_token, base_url=settings.slack_api_url, timeout=5)

    def lookup(channel: str, ts: str) -> str | None:
        try:
            link = client.chat_getPermalink(channel=channel, message_ts=ts).get("permalink")
        except Exception as exc:  # the answer stands without the link
            log.warning("chat.getPermalink failed for %s: %s", channel, exc)
            return None
        return link if isinstance(link, str) else None

    return lookup


def find(command: Explain, deps: Deps, shows: list[str]) -> Episode | None:
    target = command.target
    if isinstance(target, NearbyUrl):
        return deps.store.episode_by_url(target.url)
    if isinstance(target, NearbyPr):
        mentions = deps.store.by_pr(target.number, shows=shows)
        return mentions[0].episode if mentions else None
    if isinstance(target, NearbyDate):
        start = datetime.combine(target.day, time(0), tzinfo=deps.settings.tz).astimezone(UTC)
        found = deps.store.between(start, start + timedelta(days=1), shows=shows)
        return found[-1] if found else None
    assert isinstance(target, NearbyTitle)
    exact = deps.store.by_title(target.words, shows=shows)
    if exact is not None:
        return exact
    words = title_words(target.words)
    candidates = deps.store.by_title_words(words, limit=TITLE_CANDIDATES, shows=shows)
    return best_title_match(target.words, candidates)


def _delivered(deps: Deps, invocation: Invocation, episode: Episode) -> Delivered | None:
    ledger = Ledger.for_store(deps.store)
    ident = (
        invocation.team_id,
        invocation.channel_id,
        "episode",
        episode_key(episode.show, episode.guid),
    )
    row = ledger.run(lambda conn: ledger.rows(conn, [ident])).get(ident)
    if row is None:
        return None
    return Delivered(row.state, row.ts, row.error, row.updated_at, row.edited_at)


def _planned(deps: Deps, invocation: Invocation, episode: Episode) -> bool:
    """Whether a job of the workspace's (``digestbot worker``) is about to plan the episode
    for its channels: a poll's news has no ledger row until that job runs."""
    planned = planned_guids(deps.store.engine, invocation.team_id, episode.show)
    return episode.guid in planned


def _caught_up(
    deps: Deps,
    invocation: Invocation,
    sub: Subscription | None,
    episode: Episode,
    seen: datetime | None,
) -> Delivered | None:
    """Daily mode: the row of the catch-up message that ``resume --catch-up`` wrote for the
    pause just ended (``bot.listeners.commands.control.catch_up``), when it lists
    ``episode``: one of the newest ``CATCH_UP`` the filter wants of what arrived meanwhile
    (``bot.jobs.daily``)."""
    if sub is None or not sub.daily_at or sub.held_at is None or sub.held_until is None:
        return None
    if seen is None or not sub.held_at <= seen < sub.held_until:
        return None
    key = catch_up_key(sub.show, sub.held_at, sub.held_until)
    ident = (invocation.team_id, invocation.channel_id, "daily", key)
    ledger = Ledger.for_store(deps.store)
    row = ledger.run(lambda conn: ledger.rows(conn, [ident])).get(ident)
    if row is None:
        return None
    arrived = deps.store.arrived_between(sub.show, sub.held_at, sub.held_until, MISSED_SCAN)
    if episode.guid not in [e.guid for e in arrived if matches(e, sub.filter)][:CATCH_UP]:
        return None
    return Delivered(row.state, row.ts, row.error, row.updated_at)


def _feed_state(deps: Deps, shows: list[str]) -> tuple[str, FetchState]:
    """The show to blame for an episode the archive lacks: one never polled, else one
    failing, else the first followed."""
    states = [(s, deps.store.fetch_state(s)) for s in shows]
    for test in (lambda f: f.last_polled_at is None, lambda f: f.failures > 0, lambda f: True):
        found = next(((s, f) for s, f in states if test(f)), None)
        if found is not None:
            return found
    return "", FetchState()


def why(command: Explain, deps: Deps, invocation: Invocation) -> Message:
    subs = deps.store.subscriptions(team_id=invocation.team_id, channel_id=invocation.channel_id)
    followed = [s.show for s in subs] or deps.shows
    named = command.target.show
    # A show named first is the only one looked in; else the channel's own, then the rest.
    episode = find(command, deps, [named] if named else followed)
    others = [] if named else [show for show in deps.shows if show not in followed]
    if episode is None and others and not isinstance(command.target, NearbyUrl):
        # None of the channel's shows has it: another show's episode is answered "this
        # channel does not follow that show" (as a link is), not "no episode matches".
        episode = find(command, deps, others)
    if episode is None and not isinstance(command.target, NearbyUrl):
        return error_reply(CommandError(WHY_NOTHING, "why"))
    if episode is None:
        show, feed = _feed_state(deps, followed)
        answer = explain(None, None, None, feed)
        return _reply(answer, None, show, None, deps, invocation, feed.read_note)
    sub = next((s for s in subs if s.show == episode.show), None)
    seen = deps.store.first_seen(episode.show, [episode.guid]).get(episode.guid)
    feed = deps.store.fetch_state(episode.show)
    delivered = _delivered(deps, invocation, episode)
    answer = explain(
        episode,
        sub,
        delivered,
        feed,
        first_seen=seen,
        tz=deps.settings.tz,
        caught_up=_caught_up(deps, invocation, sub, episode, seen),
        planned=delivered is None and _planned(deps, invocation, episode),
    )
    return _reply(answer, episode, episode.show, sub, deps, invocation, feed.read_note)


def _when(value: datetime | None, deps: Deps) -> str:
    return until_text(value, deps) if value is not None else STATUS_NEVER


def _filtered(answer: Why, sub: Subscription | None) -> str:
    check = answer.check
    assert check is not None
    term = f"“{escape.mrkdwn(check.term or '')}”"
    if check.verdict is Verdict.EXCLUDED:
        return WHY_EXCLUDED.format(term=term)
    if check.verdict is Verdict.MISSING_REQUIRED:
        return WHY_REQUIRED.format(term=term)
    words = [k for k in (sub.keywords if sub else ()) if k[:1] not in "+-"]
    return WHY_NO_TERM.format(terms=", ".join(f"“{escape.mrkdwn(w)}”" for w in words))


def _posted(answer: Why, deps: Deps, channel: str) -> str:
    link = deps.permalink(channel, answer.ts) if deps.permalink and answer.ts else None
    text = WHY_POSTED
    if answer.reason is Reason.UPDATED:
        text = WHY_UPDATED.format(when=_when(answer.when, deps))
    if answer.reason is Reason.CAUGHT_UP:
        text = WHY_CAUGHT_UP
    return text + (" " + WHY_POSTED_LINK.format(link=link) if link else "")


def _daily(answer: Why, name: str, sub: Subscription | None, deps: Deps) -> str:
    assert answer.when is not None and sub is not None
    when = until_text(answer.when, deps)
    if answer.reason is Reason.DAILY_ARCHIVE:
        return WHY_DAILY_ARCHIVE.format(
            show=name, at=sub.daily_at, timezone=deps.settings.timezone, start=when
        )
    future = answer.when > deps.now()
    return (WHY_DAILY_DUE if future else WHY_DAILY).format(
        show=name, at=sub.daily_at, timezone=deps.settings.timezone, when=when
    )


def _sentence(answer: Why, show: str, sub: Subscription | None, deps: Deps, channel: str) -> str:
    name = escape.mrkdwn(show)
    error = escape.mrkdwn(escape.truncate(answer.error or "", 200))
    match answer.reason:
        case Reason.POSTED | Reason.UPDATED | Reason.CAUGHT_UP:
            return _posted(answer, deps, channel)
        case Reason.ON_ITS_WAY:
            return WHY_ON_ITS_WAY
        case Reason.FAILED:
            return WHY_FAILED.format(error=error, when=_when(answer.when, deps))
        case Reason.RETRYING:
            return WHY_RETRYING.format(
                error=error, tried=_when(answer.tried, deps), when=_when(answer.when, deps)
            )
        case Reason.CHANNEL_PAUSED:
            return WHY_CHANNEL_PAUSED.format(reason=pause_reason(answer.error))
        case Reason.HELD:
            until = until_text(answer.when, deps) if answer.when else WHY_HELD_OPEN
            return WHY_HELD.format(show=name, until=until)
        case Reason.DAILY | Reason.DAILY_ARCHIVE:
            return _daily(answer, name, sub, deps)
        case Reason.BEFORE_SUBSCRIPTION:
            return WHY_BEFORE.format(when=_when(answer.when, deps))
        case Reason.FILTERED:
            return _filtered(answer, sub)
        case Reason.PASSED_OVER:
            return WHY_PASSED_OVER
        case Reason.NOT_SUBSCRIBED:
            arg = escape.mrkdwn(command_arg(show))
            return WHY_NOT_SUBSCRIBED.format(show=name, command=COMMAND, arg=arg)
        case Reason.NOT_YET_POLLED:
            when = until_text(answer.when, deps) if answer.when else STATUS_NOT_SCHEDULED
            return WHY_NOT_POLLED.format(show=name, when=when)
        case Reason.FEED_FAILING:
            return WHY_FEED_FAILING.format(
                show=name, error=error, when=_when(answer.when, deps)
            )
    return WHY_NOT_IN_FEED


def _reply(
    answer: Why,
    episode: Episode | None,
    show: str,
    sub: Subscription | None,
    deps: Deps,
    invocation: Invocation,
    read_note: str | None = None,
) -> Message:
    text = _sentence(answer, show, sub, deps, invocation.channel_id)
    if read_note and show:
        errors = escape.mrkdwn(escape.truncate(read_note, 200))
        text += WHY_LENIENT.format(show=escape.mrkdwn(show), errors=errors)
    if episode is None:
        return message(text, [section(text)])
    day = show_day(episode.published_at.astimezone(deps.settings.tz).date())
    headline = escape.mrkdwn(escape.truncate(episode.headline, 140))
    title = WHY_TITLE.format(headline=headline, day=day, show=escape.mrkdwn(episode.show))
    return message(f"{title} {text}", [section(f"{title}\n{text}"), context(WHY_FOOTER)])
