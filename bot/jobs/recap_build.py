"""The weekly recap, built: the week's episodes read from the store, aggregated and rendered.

No scheduler and no deliverer here: the CLI's ``recap``, ``/episodes week`` and the weekly
job (``bot.jobs.recap``, which schedules and delivers) all build through these functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date

from bot.jobs.enrichment import attach_details
from config.settings import Settings
from digests.decide.deliveries import matches
from digests.models import Episode, WeeklyRecap
from digests.recap import aggregate, week_bounds, week_of
from digests.render.limits import Message
from digests.render.recap import render_recap
from digests.render.renderer import Renderer
from digests.store import Store
from digests.types import Subscription

Rendered = tuple[Message, list[Message]]  # the post and its thread replies


@dataclass(frozen=True)
class ChannelRecap:
    """One channel's recap of one week, rendered."""

    team_id: str
    channel_id: str
    key: str  # "<year>-W<ww>": the ledger key, so each channel gets it once
    post: Message
    replies: tuple[Message, ...]


def recap_key(year: int, week: int) -> str:
    return f"{year}-W{week:02d}"


def recap_shows(settings: Settings, shows: Iterable[str]) -> list[str]:
    """Show names as configured (the store matches names exactly; users type them loosely);
    none given: every configured show."""
    out: list[str] = []
    for name in shows:
        show = settings.show(name)
        out.append(show.name if show is not None else name)
    return list(dict.fromkeys(out)) or [s.name for s in settings.shows]


def read_week(
    settings: Settings,
    store: Store,
    year: int,
    week: int,
    shows: Sequence[str] | None = None,
    *,
    transcripts: bool = True,
) -> list[Episode]:
    """The one store read: the episodes of ISO week ``year``-W``week`` in the configured
    timezone (of ``shows``, or of every show). ``transcripts=False`` when no keyword filter
    will look at them (a recap itself reads headlines and summaries only)."""
    start, end = week_bounds(year, week, settings.tz)
    found = store.between(start, end, shows=shows or None, transcripts=transcripts)
    # With stored PR details, so the top PRs are ranked as the digests rank them.
    return attach_details(settings, store, found)


def weekly(
    settings: Settings,
    store: Store,
    *,
    year: int,
    week: int,
    shows: Sequence[str],
    keywords: Sequence[str] = (),
) -> WeeklyRecap:
    """The recap of ``year``-W``week`` for ``shows`` (empty: every configured show), before
    rendering."""
    names = recap_shows(settings, shows)
    filtered = any(k.strip() for k in keywords)
    episodes = read_week(settings, store, year, week, names, transcripts=filtered)
    return aggregate(episodes, year=year, week=week, tz=settings.tz, shows=names, keywords=keywords)


def build_recap(
    settings: Settings,
    store: Store,
    renderer: Renderer,
    *,
    year: int,
    week: int,
    shows: Sequence[str],
    keywords: Sequence[str] = (),
    thread: bool = True,
) -> Rendered | None:
    """The recap of ``year``-W``week`` for ``shows`` (empty: every configured show), as the
    post and its thread replies; None for an empty week unless ``quiet_week`` is on."""
    recap = weekly(settings, store, year=year, week=week, shows=shows, keywords=keywords)
    return render_recap(recap, renderer, quiet_week=settings.quiet_week, thread=thread)


def week_message(
    settings: Settings, store: Store, renderer: Renderer, day: date, shows: Sequence[str]
) -> Message:
    """``/episodes week [date]``: the recap of ``day``'s week as one message (no thread: what
    does not fit is counted), and a short line for a week without episodes."""
    year, week = week_of(day, settings.tz)
    recap = weekly(settings, store, year=year, week=week, shows=shows)
    rendered = render_recap(recap, renderer, quiet_week=True, thread=False)
    assert rendered is not None  # quiet_week=True always renders
    return rendered[0]


def _channel_episodes(subs: Sequence[Subscription], episodes: Sequence[Episode]) -> list[Episode]:
    """The episodes this channel received: each show filtered by its own keywords."""
    filters = {s.show.casefold(): s.filter for s in subs}
    return [
        e
        for e in episodes
        if e.show.casefold() in filters and matches(e, filters[e.show.casefold()])
    ]


def recap_subscriptions(
    subscriptions: Iterable[Subscription], channels: Sequence[str] | None = None
) -> list[Subscription]:
    """The subscriptions that want the recap (``recap = true``), optionally of ``channels``."""
    return [s for s in subscriptions if s.recap and (channels is None or s.channel_id in channels)]


def channel_recaps(
    settings: Settings,
    renderer: Renderer,
    subscriptions: Iterable[Subscription],
    episodes: Sequence[Episode],
    *,
    year: int,
    week: int,
) -> list[ChannelRecap]:
    """Pure: one recap per channel of ``subscriptions`` (see ``recap_subscriptions``), from
    the week's ``episodes``; channels that follow the same shows with the same keywords
    share one rendering."""
    by_channel: dict[tuple[str, str], list[Subscription]] = {}
    for sub in subscriptions:
        by_channel.setdefault((sub.team_id, sub.channel_id), []).append(sub)
    rendered: dict[object, Rendered | None] = {}
    out: list[ChannelRecap] = []
    for (team_id, channel_id), subs in by_channel.items():
        shows = sorted({s.show for s in subs})
        shared = {s.keywords for s in subs}
        # The same keywords on every show can be named in the post; mixed ones cannot.
        keywords = next(iter(shared)) if len(shared) == 1 else ()
        signature = (tuple(shows), tuple((s.show, s.keywords) for s in subs))
        if signature not in rendered:
            kept = _channel_episodes(subs, episodes)
            recap = aggregate(
                kept, year=year, week=week, tz=settings.tz, shows=shows, keywords=keywords
            )
            rendered[signature] = render_recap(recap, renderer, quiet_week=settings.quiet_week)
        result = rendered[signature]
        if result is not None:
            post, replies = result
            key = recap_key(year, week)
            out.append(ChannelRecap(team_id, channel_id, key, post, tuple(replies)))
    return out
