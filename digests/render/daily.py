"""The daily digest (daily mode) as one Block Kit message. Pure: episodes in, a message out.

Wording in ``templates/daily.j2``. Each episode gets its line (headline, duration, PR count)
and its top PRs; the message stays within Block Kit's limits by listing fewer episodes and
saying how many more there were ("…and 4 more episodes").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from digests.models import Episode, PrInfo, PullRequestRef
from digests.pulls import ranked_prs
from digests.render import layout, limits
from digests.render.environment import PrGroup, pr_groups
from digests.render.limits import Message
from digests.render.recap import MAX_NAMED_SHOWS
from digests.render.renderer import Renderer

# Episodes listed at most, and PRs under each: a day's message is a glance.
MAX_EPISODES = 15
TOP_PRS = 3

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@dataclass(frozen=True)
class _EpisodeView:
    episode: Episode
    # With GitHub details: the top PRs ranked, one line each; without: the first ones, PRs
    # named in one sentence on one line with it.
    detailed: tuple[tuple[PullRequestRef, PrInfo | None], ...]
    groups: tuple[PrGroup, ...]


def _view(episode: Episode) -> _EpisodeView:
    if episode.pr_info:
        return _EpisodeView(episode, tuple(ranked_prs(episode)[:TOP_PRS]), ())
    return _EpisodeView(episode, (), tuple(pr_groups(episode.pull_requests[:TOP_PRS])))


def _day(day: date) -> str:
    return f"{_DAYS[day.weekday()]} {day.day} {_MONTHS[day.month - 1]} {day.year}"


def _named(shows: Sequence[str]) -> str:
    names = list(dict.fromkeys(shows))
    return ", ".join(names) if 0 < len(names) <= MAX_NAMED_SHOWS else f"{len(names)} shows"


def daily_title(shows: Sequence[str], day: date) -> str:
    return f"{_named(shows)} — daily digest, {_day(day)}"


def catch_up_title(shows: Sequence[str], first: date, last: date) -> str:
    """A daily channel's catch-up after a pause (``resume --catch-up``), local days."""
    when = _day(first) if first == last else f"{_day(first)} – {_day(last)}"
    return f"{_named(shows)} — while paused, {when}"


def _fits(message: Message) -> bool:
    return (
        len(message["blocks"]) <= limits.BLOCKS_PER_MESSAGE
        and limits.message_text_size(message) <= limits.MESSAGE_TEXT_BUDGET
    )


def render_daily(
    episodes: Sequence[Episode],
    renderer: Renderer,
    *,
    shows: Sequence[str],
    day: date,
    title: str | None = None,
) -> Message:
    """``day``'s digest of ``episodes`` (oldest first) for a channel following ``shows``;
    ``title`` instead of the day's (a catch-up after a pause)."""
    views = [_view(e) for e in episodes]
    title = title or daily_title(shows, day)
    multi = len({e.show for e in episodes}) > 1
    message: Message = {"text": title, "blocks": []}
    for count in range(min(len(views), MAX_EPISODES), 0, -1):
        script = renderer.script(
            "daily.j2",
            title=title,
            total=len(views),
            episodes=views[:count],
            more=len(views) - count,
            multi_show=multi,
        )
        message = layout.build(script, template="daily.j2")
        if _fits(message):
            break
    return limits.fit(message)
