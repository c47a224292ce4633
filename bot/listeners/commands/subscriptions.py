"""Channel subscriptions: subscribe, unsubscribe, list, status."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bot.listeners.commands.announce import Change, folded, subscribed, unsubscribed
from bot.listeners.commands.base import Deps, Invocation
from bot.listeners.commands.control import backfill, hold_note, promise
from bot.listeners.commands.filter_words import filter_text
from bot.listeners.commands.model import (
    DAILY_OFF,
    ListSubscriptions,
    Status,
    Subscribe,
    Unsubscribe,
)
from bot.listeners.commands.replies import context, divider, message, nothing, section
from bot.messages import subscriptions as wording
from bot.messages.errors import NO_SHOWS
from digests.decide.daily import Arrival, next_due, wanted, window
from digests.models import Episode
from digests.render import escape
from digests.render.limits import Block, Message
from digests.types import FetchState, Subscription


def _subscribed_filter(terms: Sequence[str]) -> str:
    """`` that mention …`` of the subscribe reply and the announcement ("" for none)."""
    return filter_text(
        terms,
        plain=wording.SUBSCRIBED_FILTER,
        rule_of=wording.SUBSCRIBED_RULE,
        only_excludes=wording.SUBSCRIBED_EXCEPT,
    )


def when(value: datetime | None, deps: Deps) -> str:
    if value is None:
        return wording.STATUS_NEVER
    local = value.astimezone(deps.settings.tz)
    return f"{local:%Y-%m-%d %H:%M} {deps.settings.timezone}"


def _reply(text: str) -> Message:
    return message(text, [section(text)])


def subscribe(command: Subscribe, deps: Deps, invocation: Invocation) -> Message:
    return subscribe_with_announcement(command, deps, invocation)[0]


def subscribe_with_announcement(
    command: Subscribe, deps: Deps, invocation: Invocation
) -> tuple[Message, Message | None]:
    """Each show named, with the keywords; the recap setting kept unless ``recap on|off``.
    The reply: what changed (or that nothing did), then the result in one line, then what a
    new keyword subscription's backfill will post; and what the channel is told (None when
    nothing changed)."""
    changes: list[Change] = []
    notes: list[tuple[str, list[str]]] = []
    for show in command.shows:
        before, sub, said = _subscribe_one(command, show, deps, invocation)
        changes.append(Change(before, sub))
        notes.append((show, said if changes[-1].changed else [wording.SUBSCRIBED_SAME_ONE]))
    made = [c.after for c in changes]
    new = [c.after for c in changes if c.before is None]
    same = not any(c.changed for c in changes)
    if len(command.shows) == 1:
        said = [] if same else notes[0][1]
        text = " ".join([_subscribed(command, escape.mrkdwn(command.show), deps, same), *said])
    else:
        names = _show_names(command.shows)
        many = wording.SUBSCRIBED_SAME_MANY if same else wording.SUBSCRIBED_MANY
        parts = [many.format(shows=names, filter=_filter_words(command, deps))]
        parts += [
            f"*{escape.mrkdwn(show)}*: {_mid_sentence(' '.join(c))}"
            for show, c in notes
            if c and not same
        ]
        text = " ".join(parts)
    moved_to = None
    if command.daily not in (None, DAILY_OFF) and deps.store.set_daily_time(
        invocation.team_id, invocation.channel_id, command.daily
    ):
        moved_to = command.daily
        text += " " + wording.DAILY_TIME_MOVED.format(at=command.daily)
    blocks = [section(text), section(summary_line(made, deps))]
    reply = message(text, blocks + _promise_backfill(command, deps, invocation, new))
    return reply, subscribed(changes, moved_to, deps, invocation)


def _mid_sentence(text: str) -> str:
    """A note after "*Show*: ": its first letter in lower case ("it replaces …")."""
    return text[:1].lower() + text[1:]


def _filter_words(command: Subscribe, deps: Deps) -> str:
    """What the first line says after "episodes": the filter, and the daily time when the
    command set one (that line is what people read; the "Now:" line below is a summary)."""
    words = _subscribed_filter(command.keywords)
    if command.daily is None or command.daily == DAILY_OFF:
        return words
    # After a filter's own words a comma keeps "once a day" from reading as part of it.
    template = wording.SUBSCRIBED_DAILY_AFTER_FILTER if words else wording.SUBSCRIBED_DAILY
    return words + template.format(at=command.daily, timezone=deps.settings.timezone)


def _subscribed(command: Subscribe, show: str, deps: Deps, same: bool = False) -> str:
    template = wording.SUBSCRIBED_SAME if same else wording.SUBSCRIBED
    return template.format(show=show, filter=_filter_words(command, deps))


def _show_names(shows: Sequence[str]) -> str:
    return ", ".join(f"*{escape.mrkdwn(s)}*" for s in shows)


def _subscribe_one(
    command: Subscribe, show: str, deps: Deps, invocation: Invocation
) -> tuple[Subscription | None, Subscription, list[str]]:
    """(the subscription before, after, and what the reply says about the change)."""
    (before,) = deps.store.subscriptions(
        team_id=invocation.team_id, channel_id=invocation.channel_id, show=show
    ) or (None,)
    # Subscribing again replaces the filter, not the channel's choice about the recap.
    recap = command.recap if command.recap is not None else (before.recap if before else True)
    # Nor its mode, unless `daily …` says.
    mode: dict[str, Any] = {}
    if command.daily is not None:
        mode["daily_at"] = None if command.daily == DAILY_OFF else command.daily
        mode["changed_at"] = deps.now()
    sub = deps.store.subscribe(
        invocation.team_id,
        invocation.channel_id,
        show,
        keywords=command.keywords,
        recap=recap,
        created_by=invocation.user_id or None,
        pr_updates=command.pr_updates,
        **mode,
    )
    changes: list[str] = []
    if before is not None and folded(before.keywords) != folded(command.keywords):
        # Subscribing again is a replacement, not an addition: say what is gone.
        changes.append(
            filter_text(
                before.keywords,
                plain=wording.REPLACES_FILTER,
                rule_of=wording.REPLACES_RULE,
                only_excludes=wording.REPLACES_EXCEPT,
            )
            if before.keywords
            else wording.REPLACES_NO_FILTER.format(show=escape.mrkdwn(show))
        )
    if before is not None and before.paused:
        changes.append(wording.SUBSCRIBE_RESUMES.format(reason=pause_reason(before.paused_reason)))
    if before is not None and before.recap != sub.recap:
        changes.append(
            wording.SUBSCRIBE_RECAP_NOW_ON if sub.recap else wording.SUBSCRIBE_RECAP_NOW_OFF
        )
    if before is not None and before.daily_at and not sub.daily_at:
        changes.append(wording.SUBSCRIBE_NOW_PER_EPISODE)
    if before is not None and before.pr_updates != sub.pr_updates:
        changes.append(
            wording.SUBSCRIBE_PR_NEWS_ON if sub.pr_updates else wording.SUBSCRIBE_PR_NEWS_OFF
        )
    return before, sub, changes


def _mode_note(subs: Sequence[Subscription], deps: Deps) -> str:
    daily = [s for s in subs if s.daily_at]
    if not daily:
        return ""
    at, zone = str(daily[0].daily_at), deps.settings.timezone
    if len(daily) == len(subs):
        return wording.MODE_DAILY.format(at=at, timezone=zone)
    return wording.MODE_MIXED.format(
        at=at, timezone=zone, shows=_show_names([s.show for s in daily])
    )


def summary_line(subs: Sequence[Subscription], deps: Deps) -> str:
    """The resulting subscription in one line: shows, keywords, recap on/off, daily mode."""
    first = subs[0]
    keywords = (
        filter_text(
            first.keywords,
            plain=wording.SUBSCRIPTION_KEYWORDS,
            rule_of=wording.SUBSCRIPTION_RULE,
            only_excludes=wording.SUBSCRIPTION_EXCEPT,
        )
        or wording.SUBSCRIPTION_EVERY
    )
    if len({s.recap for s in subs}) == 1:
        recap = wording.RECAP_ON if first.recap else wording.RECAP_OFF
    else:  # shows subscribed before keep their own setting
        recap = ", ".join(
            f"{wording.RECAP_ON if s.recap else wording.RECAP_OFF} ({escape.mrkdwn(s.show)})"
            for s in subs
        )
    return wording.SUBSCRIPTION_NOW.format(
        shows=_show_names([s.show for s in subs]),
        keywords=keywords,
        recap=recap,
        mode=_mode_note(subs, deps),
    )


def _promise_backfill(
    command: Subscribe, deps: Deps, invocation: Invocation, made: Sequence[Subscription]
) -> list[Block]:
    # Only new subscriptions: one made before already has its watermark, no backfill.
    """What a new keyword subscription will get at the next poll, recorded and said (as
    ``preview`` says it): the newest ``backfill`` of the show's recent episodes its filter
    lets through (``control.backfill``), given ledger rows for the channel
    (``control.promise``) so the next poll posts them whatever arrives meanwhile."""
    if not made or not command.keywords:
        return []
    if all(sub.daily for sub in made):
        return _daily_note(deps, made)
    if deps.settings.backfill <= 0:
        return []
    found: list[Episode] = []
    for sub in made:
        if sub.daily:
            continue
        picked = backfill(sub.show, sub.filter, deps, invocation)
        promise(sub, picked, deps)
        found += picked
    if not found:
        return [context(wording.BACKFILL_NONE)]
    several = len(made) > 1
    listed = ", ".join(str(deps.renderer.episode_line(e, show_name=several)) for e in found)
    return [context(wording.BACKFILL_POSTS.format(episodes=listed))]


# Of what already matches, the episodes the daily note names (the digest has them all).
_DAILY_NAMED = 5


def _daily_note(deps: Deps, made: Sequence[Subscription]) -> list[Block]:
    """What a new daily keyword subscription's next daily digest will have already: the
    matching episodes that reached digestbot since the last daily time (``digests.decide.daily``
    decides, as the daily job will); nothing is posted at a poll."""
    at, tz = str(made[0].daily_at), deps.settings.tz
    due = next_due(deps.now(), at, tz)
    start, end = window(due.astimezone(tz).date(), at, tz)
    found: list[Episode] = []
    for sub in made:
        arrived = deps.store.arrived_between(sub.show, start, end, 200)
        seen = deps.store.first_seen(sub.show, [e.guid for e in arrived])
        found += [
            e
            for e in arrived
            if e.guid in seen and wanted(sub, Arrival(e, seen[e.guid]), start, end)
        ]
    if not found:
        return [context(wording.BACKFILL_DAILY_NONE.format(when=when(due, deps)))]
    several = len(made) > 1
    named = found[:_DAILY_NAMED]
    listed = ", ".join(str(deps.renderer.episode_line(e, show_name=several)) for e in named)
    if len(found) > len(named):
        listed += wording.BACKFILL_MORE.format(count=len(found) - len(named))
    text = wording.BACKFILL_DAILY_POSTS.format(when=when(due, deps), episodes=listed)
    return [context(text)]


def unsubscribe(command: Unsubscribe, deps: Deps, invocation: Invocation) -> Message:
    return unsubscribe_with_announcement(command, deps, invocation)[0]


def _either(shows: Sequence[str]) -> str:
    return " or ".join(f"*{escape.mrkdwn(s)}*" for s in shows)


def unsubscribe_with_announcement(
    command: Unsubscribe, deps: Deps, invocation: Invocation
) -> tuple[Message, Message | None]:
    """The shows named (every show when none) dropped at once; the reply, and what the
    channel is told (None when nothing was removed). Shows named that the channel did not
    follow are said so in the reply."""
    named = command.shows
    current = [
        s
        for s in deps.store.subscriptions(
            team_id=invocation.team_id, channel_id=invocation.channel_id
        )
        if not named or s.show in named
    ]
    which = named or None
    removed = deps.store.unsubscribe(invocation.team_id, invocation.channel_id, which)
    if not removed:
        what = _either(named) if named else wording.ANY_SHOW
        return nothing(wording.NOT_SUBSCRIBED.format(what=what)), None
    gone = [s for s in named if any(c.show == s for c in current)]
    if named:
        text = wording.UNSUBSCRIBED.format(show="*, *".join(escape.mrkdwn(s) for s in gone))
        if missing := [s for s in named if s not in gone]:
            text += " " + wording.NOT_SUBSCRIBED.format(what=_either(missing))
    else:
        text = wording.UNSUBSCRIBED_ALL.format(removed=removed, s="" if removed == 1 else "s")
    # The config file's channels are kept as tombstones so a restart does not bring them
    # back, but the file still names them: say where to remove them for good.
    if any(sub.source == "config" for sub in current):
        text += " " + wording.FROM_CONFIG_REMOVE
    return _reply(text), unsubscribed(gone, invocation)


def pause_reason(code: str | None) -> str:
    """Why a subscription is paused, in the words of the DM that announced it (the store
    keeps Slack's error code, e.g. ``is_archived``). mrkdwn."""
    code = code or ""
    return wording.PAUSE_REASONS.get(code) or wording.PAUSE_REASON_OTHER.format(
        error=escape.mrkdwn(code)
    )


def subscription_line(sub: Subscription, deps: Deps) -> str:
    wanted = filter_text(
        sub.keywords,
        plain=wording.LIST_FILTER,
        rule_of=wording.LIST_RULE,
        only_excludes=wording.LIST_EXCEPT,
    )
    paused = (
        wording.LIST_PAUSED.format(
            when=when(sub.paused_at, deps), reason=pause_reason(sub.paused_reason)
        )
        if sub.paused
        else ""
    )
    daily = (
        wording.LIST_DAILY.format(at=sub.daily_at, timezone=deps.settings.timezone)
        if sub.daily_at
        else ""
    )
    return wording.LIST_LINE.format(
        show=escape.mrkdwn(sub.show),
        filter=wanted,
        daily=daily,
        recap=("" if sub.recap else wording.LIST_NO_RECAP)
        + (wording.LIST_PR_NEWS if sub.pr_updates else ""),
        source=wording.LIST_FROM_CONFIG if sub.source == "config" else "",
        paused=paused + hold_note(sub, deps),
    )


def list_subscriptions(command: ListSubscriptions, deps: Deps, invocation: Invocation) -> Message:
    subs = deps.store.subscriptions(team_id=invocation.team_id, channel_id=invocation.channel_id)
    if not subs:
        return nothing(wording.LIST_EMPTY)  # nothing to share
    lines = "\n".join(f"• {subscription_line(s, deps)}" for s in subs[:40])
    return message(wording.LIST_TITLE, [section(f"*{wording.LIST_TITLE}*"), section(lines)])


def status_line(show: str, state: FetchState, deps: Deps) -> str:
    error = (
        escape.mrkdwn(escape.truncate(state.last_error, 300))
        if state.last_error
        else wording.STATUS_NONE
    )
    lenient = (
        wording.STATUS_LENIENT.format(errors=escape.mrkdwn(escape.truncate(state.read_note, 300)))
        if state.read_note
        else ""
    )
    return (
        wording.STATUS_LINE.format(
            show=escape.mrkdwn(show),
            polled=when(state.last_polled_at, deps),
            success=when(state.last_success_at, deps),
            error=error,
            failures=state.failures,
            next=when(state.next_poll_at, deps)
            if state.next_poll_at
            else wording.STATUS_NOT_SCHEDULED,
        )
        + lenient
    )


def status(command: Status, deps: Deps, invocation: Invocation) -> Message:
    """The feeds of the shows this channel follows (every show's where it follows none),
    then its paused subscriptions and daily digests."""
    subs = deps.store.subscriptions(team_id=invocation.team_id, channel_id=invocation.channel_id)
    followed = sorted({s.show for s in subs})
    blocks: list[Block] = [section(f"*{wording.STATUS_TITLE}*")]
    if followed:
        blocks.append(context(wording.STATUS_SCOPE))
    for show in (followed or deps.shows)[:40]:
        blocks.append(section(status_line(show, deps.store.fetch_state(show), deps)))
    if not followed and not deps.shows:
        blocks.append(section(NO_SHOWS))
    paused = [s for s in subs if s.paused or s.held(deps.now())]
    if paused:
        lines = "\n".join(f"• {subscription_line(s, deps)}" for s in paused[:20])
        blocks += [divider(), section(f"*{wording.STATUS_PAUSED_TITLE}*\n{lines}")]
    blocks += _daily_status(subs, deps)
    return message(wording.STATUS_TITLE, blocks)


def _daily_status(subs: Sequence[Subscription], deps: Deps) -> list[Block]:
    """The channel's daily digests: each show's time and the next one due."""
    lines = [
        wording.STATUS_DAILY_LINE.format(
            show=escape.mrkdwn(s.show),
            at=s.daily_at,
            timezone=deps.settings.timezone,
            next=when(next_due(deps.now(), s.daily_at, deps.settings.tz), deps),
        )
        for s in subs[:20]
        if s.daily_at and not s.paused
    ]
    if not lines:
        return []
    return [divider(), section(f"*{wording.STATUS_DAILY_TITLE}*\n" + "\n".join(lines))]
