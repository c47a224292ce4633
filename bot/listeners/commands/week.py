"""`/episodes week`: the recap of one week as this channel gets it (its shows, its filters).

The posted weekly recap (``bot.jobs.recap_build.channel_recaps``) keeps only the episodes each
subscription's keywords match; `week` reads the same way, so the two never disagree, and
its header says when a filter cut the list. A channel that follows nothing sees every show.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from bot.jobs.recap_build import read_week
from bot.listeners.commands.base import Deps, Invocation
from bot.listeners.commands.dates import show_day
from bot.listeners.commands.model import Week, week_containing
from bot.listeners.commands.replies import context, mark_empty, message
from bot.messages.answers import (
    WEEK_BEFORE_ARCHIVE,
    WEEK_FELL_BACK,
    WEEK_FELL_BACK_FILTERED,
    WEEK_FILTERED,
    WEEK_NONE_MATCH,
    WEEK_NOT_YET,
)
from digests.decide.deliveries import matches
from digests.filters import Filter
from digests.models import Episode
from digests.recap import aggregate, week_bounds
from digests.render import escape
from digests.render.limits import Message
from digests.render.recap import render_recap

# Far enough back that the episode "nearest" to it is the archive's first.
_DAWN = datetime(1970, 1, 1, tzinfo=UTC)

Filters = Mapping[str, tuple[str, ...]]  # show → the channel's keywords for it


def week_filters(deps: Deps, invocation: Invocation, show: str | None = None) -> Filters:
    """The shows the week covers and each one's keywords: the channel's subscriptions (one
    of them when ``show`` is named), every show unfiltered when it follows none."""
    subs = deps.store.subscriptions(team_id=invocation.team_id, channel_id=invocation.channel_id)
    followed = {s.show: s.keywords for s in sorted(subs, key=lambda s: s.show)}
    if show is not None:
        return {show: followed.get(show, ())}
    return followed or {name: () for name in deps.shows}


def week_episodes(week: Week, deps: Deps, filters: Filters) -> list[Episode]:
    assert week.year is not None and week.number is not None
    filtered = any(filters.values())  # only a keyword filter reads transcripts
    episodes = read_week(
        deps.settings, deps.store, week.year, week.number, list(filters), transcripts=filtered
    )
    if not filtered:
        return episodes
    chosen = {show: Filter.from_terms(kw, strict=False) for show, kw in filters.items()}
    return [e for e in episodes if e.show not in chosen or matches(e, chosen[e.show])]


def _has_episodes(week: Week, deps: Deps, filters: Filters) -> bool:
    """Whether the channel's week has anything: a COUNT when nothing is filtered."""
    if any(filters.values()):
        return bool(week_episodes(week, deps, filters))
    return _has_any(week, deps, filters)


def _has_any(week: Week, deps: Deps, filters: Filters) -> bool:
    """Whether the week has episodes of the shows, whatever the channel's filter keeps."""
    assert week.year is not None and week.number is not None
    start, end = week_bounds(week.year, week.number, deps.settings.tz)
    return deps.store.count_between(start, end, list(filters)) > 0


def _unmatched_note(command: Week, deps: Deps, filters: Filters, empty: bool) -> str | None:
    """When the channel's filter, not a quiet week, is why the week shown is empty or why
    this week gave way to last week: the week's episodes are there, and none match."""
    if not any(filters.values()):
        return None
    if command.fell_back:
        this = week_containing(deps.today())
        if _has_any(this, deps, filters):
            return WEEK_FELL_BACK_FILTERED.format(week=this.number)
    if empty and _has_any(command, deps, filters):
        return WEEK_NONE_MATCH.format(week=command.number)
    return None


def resolve_week(command: Week, deps: Deps, invocation: Invocation) -> Week:
    """The week a bare ``week`` means: this one, or last week while this one has no
    episodes yet (on a Monday morning "this week" is empty, and last week is what people
    want to see). An explicit week is itself."""
    if command.monday is not None:
        return command
    filters = week_filters(deps, invocation, command.show)
    this = replace(week_containing(deps.today()), show=command.show)
    if _has_episodes(this, deps, filters):
        return this
    monday = this.monday
    assert monday is not None
    last = week_containing(monday - timedelta(days=7))
    if _has_episodes(last, deps, filters):
        return Week(last.year, last.number, fell_back=True, show=command.show)
    return this


def _render(week: Week, deps: Deps, filters: Filters, episodes: Sequence[Episode]) -> Message:
    """As ``bot.jobs.recap_build.week_message`` renders it, from the filtered episodes."""
    assert week.year is not None and week.number is not None
    shared = set(filters.values())
    # The same keywords on every show can be named in the recap; mixed ones cannot.
    keywords = next(iter(shared)) if len(shared) == 1 else ()
    recap = aggregate(
        list(episodes),
        year=week.year,
        week=week.number,
        tz=deps.settings.tz,
        shows=list(filters),
        keywords=keywords,
    )
    rendered = render_recap(recap, deps.renderer, quiet_week=True, thread=False)
    assert rendered is not None  # quiet_week=True always renders
    return rendered[0]


def _filter_note(filters: Filters) -> str | None:
    if not any(filters.values()):
        return None
    described = "; ".join(
        f"*{escape.mrkdwn(show)}* {escape.mrkdwn(Filter.from_terms(kw, strict=False).describe())}"
        for show, kw in filters.items()
    )
    return WEEK_FILTERED.format(filters=described)


def _outside_note(week: Week, deps: Deps, filters: Filters) -> str | None:
    """Why an empty week is empty, when it lies outside the archive."""
    monday = week.monday
    assert monday is not None
    label = f"{week.year}-W{week.number:02d}"
    if monday > deps.today():
        return WEEK_NOT_YET.format(week=label)
    first = deps.store.nearest(_DAWN, shows=list(filters))
    if first is None:
        return None
    first_day = first.published_at.astimezone(deps.settings.tz).date()
    if monday + timedelta(days=7) <= first_day:
        return WEEK_BEFORE_ARCHIVE.format(week=label, first=show_day(first_day))
    return None


def week(command: Week, deps: Deps, invocation: Invocation) -> Message:
    """The weekly recap of that week, for the shows this channel follows, as it gets them."""
    # Every read of the answer from one snapshot, in one transaction.
    with deps.store.reading("reading the week"):
        command = resolve_week(command, deps, invocation)
        filters = week_filters(deps, invocation, command.show)
        episodes = week_episodes(command, deps, filters)
        outside = None if episodes else _outside_note(command, deps, filters)
        unmatched = _unmatched_note(command, deps, filters, not episodes)
    reply = _render(command, deps, filters, episodes)
    notes: list[str] = []
    if command.fell_back and unmatched is None:
        notes.append(WEEK_FELL_BACK.format(week=week_containing(deps.today()).number))
    if unmatched is not None:
        notes.append(unmatched)
    if (note := _filter_note(filters)) is not None:
        notes.append(note)
    if outside is not None:
        notes.append(outside)
    if notes:
        blocks = reply["blocks"]
        reply = message(reply["text"], [*blocks[:1], *(context(n) for n in notes), *blocks[1:]])
    return mark_empty(reply) if not episodes else reply
