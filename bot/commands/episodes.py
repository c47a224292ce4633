"""Read-only subcommands: recent, latest, nearby, pr, search, week.

Each takes the parsed command and the app's parts and returns a ``Message``; the store is
the only I/O, and the caller runs these off the event loop.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta

from bot import messages as msg
from bot.commands.base import Deps, Invocation
from bot.commands.parse import (
    Latest,
    NearbyDate,
    NearbyPr,
    NearbyTitle,
    NearbyUrl,
    Pr,
    Recent,
    Search,
    Week,
    show_day,
    week_containing,
)
from bot.commands.replies import context, divider, mark_empty, message, nothing, section
from bot.enrichment import attach_details, pr_details_line
from bot.recap_build import week_message
from digests.models import Episode
from digests.recap import week_bounds
from digests.render import escape
from digests.render.limits import Message
from digests.types import PrMention

MAX_MENTIONS = 20
MAX_SEARCH = 10
MAX_CONTEXT = 400
# `nearby <date>` answers with an episode at most this far away; farther is "no episode".
NEAR_WINDOW = timedelta(days=14)
# Title matches are refined from this many newest candidates that contain every word.
TITLE_CANDIDATES = 50

_WORD_RE = re.compile(r"\w+")

NearbyCommand = NearbyDate | NearbyTitle | NearbyPr | NearbyUrl


def recent(command: Recent, deps: Deps) -> Message:
    episodes = deps.store.recent(command.n)
    if not episodes:
        return nothing(msg.NO_EPISODES)
    title = msg.RECENT_TITLE_ONE if len(episodes) == 1 else msg.RECENT_TITLE.format(n=len(episodes))
    return deps.renderer.episode_list(episodes, title)


def latest(command: Latest, deps: Deps) -> Message:
    episodes = deps.store.recent(1)
    if not episodes:
        return nothing(msg.NO_EPISODES)
    latest_one = attach_details(deps.settings, deps.store, episodes[:1])[0]
    return deps.renderer.digest(latest_one, buttons=True)


def _noon(day: date, deps: Deps) -> datetime:
    """Midday in the team's timezone: "nearest to a date" should not favour either edge."""
    return datetime.combine(day, time(12), tzinfo=deps.settings.tz).astimezone(UTC)


def title_words(text: str) -> list[str]:
    return _WORD_RE.findall(text.casefold())


def title_match(wanted: Sequence[str], headline: str) -> int | None:
    """How well a headline matches the words of ``nearby <words>``: 0 when they appear in it
    as a phrase, 1 when all appear as whole words in any order, None otherwise (one word in
    common is not a match: "5" must not find "PR 5")."""
    have = title_words(headline)
    n = len(wanted)
    if not n:
        return None
    if any(have[i : i + n] == list(wanted) for i in range(len(have) - n + 1)):
        return 0
    if set(wanted) <= set(have):
        return 1
    return None


def best_title_match(words: str, candidates: Sequence[Episode]) -> Episode | None:
    """The best of ``candidates`` (newest first) by ``title_match`` of the headline or the
    full title (``Show: Headline``); newest on a tie."""
    wanted = title_words(words)
    ranked = []
    for i, episode in enumerate(candidates):
        ranks = [title_match(wanted, text) for text in (episode.headline, episode.title)]
        known = [r for r in ranks if r is not None]
        if known:
            ranked.append((min(known), i, episode))
    return min(ranked, key=lambda r: (r[0], r[1]))[2] if ranked else None


def _by_title(words: str, deps: Deps) -> Episode | None:
    found = deps.store.by_title(words)
    if found is not None:
        return found
    candidates = deps.store.by_title_words(title_words(words), limit=TITLE_CANDIDATES)
    return best_title_match(words, candidates)


def _local_day(episode: Episode, deps: Deps) -> date:
    return episode.published_at.astimezone(deps.settings.tz).date()


def _nearby_date(command: NearbyDate, deps: Deps) -> Message:
    day = show_day(command.day)
    episode = deps.store.nearest(_noon(command.day, deps))
    if episode is None:
        return nothing(msg.NOTHING_NEAR.format(what=day))
    distance = abs(_local_day(episode, deps) - command.day)
    if distance > NEAR_WINDOW:
        # Silently answering with an episode months away reads as "this is that day's".
        text = msg.NOTHING_WITHIN.format(day=day)
        return nothing(text, section(deps.renderer.episode_line(episode)))
    note = msg.NEAREST_TO.format(day=day) if distance else None
    return nearby_of(episode, deps, note=note)


def nearby(command: NearbyCommand, deps: Deps) -> Message:
    if isinstance(command, NearbyDate):
        return _nearby_date(command, deps)
    if isinstance(command, NearbyUrl):
        episode = deps.store.episode_by_url(command.url)
        if episode is None:
            url = escape.mrkdwn(escape.truncate(command.url, 200).replace("`", "'"))
            return nothing(msg.NOTHING_AT.format(url=f"`{url}`"))
        return nearby_of(episode, deps)
    if isinstance(command, NearbyPr):
        mentions = deps.store.by_pr(command.number)
        if not mentions:
            return nothing(msg.NOTHING_NEAR.format(what=msg.NEAR_PR.format(number=command.number)))
        return nearby_of(mentions[0].episode, deps)
    episode = _by_title(command.words, deps)
    if episode is None:
        words = escape.mrkdwn(escape.truncate(command.words, 80).replace("`", "'"))
        return nothing(msg.NO_TITLE_MATCH.format(words=words))
    return nearby_of(episode, deps)


def nearby_of(episode: Episode, deps: Deps, *, note: str | None = None) -> Message:
    """An episode with the ones just before and after it, and its page's own nearby list.

    ``note`` (composed mrkdwn) says why this episode, when it is not exactly what was asked.
    """
    before, after = deps.store.neighbours(episode)
    line = deps.renderer.episode_line
    headline = escape.mrkdwn(escape.truncate(episode.headline, 140))
    blocks = [section(f"*{msg.NEARBY_TITLE.format(headline=headline)}*")]
    if note:
        blocks.append(context(note))
    if before is not None:
        blocks.append(section(f"*{msg.NEARBY_BEFORE}*\n{line(before)}"))
    blocks.append(section(f"*{msg.NEARBY_THIS}*\n{line(episode)}"))
    if after is not None:
        blocks.append(section(f"*{msg.NEARBY_AFTER}*\n{line(after)}"))
    if episode.nearby:
        listed = []
        for title in episode.nearby[:20]:
            known = deps.store.by_title(title, shows=[episode.show])
            label = escape.truncate(title, 150)
            if known is not None and known.url:
                listed.append(f"• {escape.link(known.url, label)}")
            else:
                listed.append(f"• {escape.mrkdwn(label)}")
        blocks.append(divider())
        blocks.append(section(f"*{msg.NEARBY_FROM_PAGE}*\n" + "\n".join(listed)))
    return message(msg.NEARBY_TITLE.format(headline=headline), blocks)


def _pr_url(episode: Episode, number: int) -> str | None:
    return next((p.url for p in episode.pull_requests if p.number == number), None)


def pr(command: Pr, deps: Deps) -> Message:
    """Every episode naming the PR, newest first, each with the sentence that names it.

    Shows can follow different repositories, where #123 is a different PR: one heading per
    PR URL, in order of the newest mention.
    """
    mentions = deps.store.by_pr(command.number)
    if not mentions:
        return nothing(msg.NOTHING_FOR_PR.format(number=command.number))
    title = msg.PR_TITLE.format(number=command.number)
    groups: dict[str | None, list[PrMention]] = {}
    for mention in mentions[:MAX_MENTIONS]:
        groups.setdefault(_pr_url(mention.episode, command.number), []).append(mention)
    blocks = []
    for url, group in groups.items():
        label = title if len(groups) == 1 or url is None else f"{title} ({_repo_of(url)})"
        heading = escape.link(url, label) if url else escape.mrkdwn(label)
        blocks.append(section(f"*{heading}*"))
        details = pr_details_line(deps.settings, deps.store, url, command.number)
        if details:
            blocks.append(section(details))
        for mention in group:
            sentence = escape.mrkdwn(escape.truncate(escape.oneline(mention.context), MAX_CONTEXT))
            quote = f"\n>{sentence}" if sentence else ""
            blocks.append(section(f"{deps.renderer.episode_line(mention.episode)}{quote}"))
    if len(mentions) > MAX_MENTIONS:
        blocks.append(context(msg.HOME_MORE.format(count=len(mentions) - MAX_MENTIONS)))
    count = len(mentions)
    return message(
        msg.PR_TEXT.format(title=title, count=count, s="" if count == 1 else "s"), blocks
    )


def _repo_of(url: str) -> str:
    """``owner/repo`` of a GitHub pull-request URL (the URL itself when it is not one)."""
    parts = url.split("/")
    return "/".join(parts[3:5]) if len(parts) > 5 and parts[5] == "pull" else url


def search(command: Search, deps: Deps) -> Message:
    results = deps.store.search(command.words, limit=MAX_SEARCH)
    words = escape.truncate(command.words, 60)
    if not results:
        return nothing(msg.NOTHING_FOUND.format(words=escape.mrkdwn(words.replace("`", "'"))))
    return deps.renderer.episode_list(results, msg.SEARCH_TITLE.format(words=words))


def week_shows(deps: Deps, invocation: Invocation) -> list[str]:
    """The shows this channel follows, or every show when it follows none."""
    subs = deps.store.subscriptions(team_id=invocation.team_id, channel_id=invocation.channel_id)
    followed = sorted({s.show for s in subs})
    return followed or deps.shows


def _week_count(week: Week, deps: Deps, shows: Sequence[str]) -> int:
    assert week.year is not None and week.number is not None
    start, end = week_bounds(week.year, week.number, deps.settings.tz)
    return deps.store.count_between(start, end, shows or None)


def resolve_week(command: Week, deps: Deps, invocation: Invocation) -> Week:
    """The week a bare ``week`` means: this one, or last week while this one has no
    episodes yet (on a Monday morning "this week" is empty, and last week is what people
    want to see). An explicit week is itself."""
    if command.monday is not None:
        return command
    shows = week_shows(deps, invocation)
    this = week_containing(deps.today())
    if _week_count(this, deps, shows):
        return this
    monday = this.monday
    assert monday is not None
    last = week_containing(monday - timedelta(days=7))
    if _week_count(last, deps, shows):
        return Week(last.year, last.number, fell_back=True)
    return this


def week(command: Week, deps: Deps, invocation: Invocation) -> Message:
    """The weekly recap of that week, for the shows this channel follows."""
    command = resolve_week(command, deps, invocation)
    monday = command.monday
    assert monday is not None
    shows = week_shows(deps, invocation)
    reply = week_message(deps.settings, deps.store, deps.renderer, monday, shows)
    if command.fell_back:
        this = week_containing(deps.today())
        note = context(msg.WEEK_FELL_BACK.format(week=this.number))
        reply = message(reply["text"], [*reply["blocks"][:1], note, *reply["blocks"][1:]])
    if not _week_count(command, deps, shows):
        return mark_empty(reply)
    return reply
