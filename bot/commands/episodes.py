"""Read-only subcommands: recent, latest, nearby, pr, search, week.

Each takes the parsed command and the app's parts and returns a ``Message``; the store is
the only I/O, and the caller runs these off the event loop.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time

from bot import messages as msg
from bot.commands.base import Deps, Invocation
from bot.commands.parse import Latest, NearbyDate, NearbyPr, NearbyTitle, Pr, Recent, Search, Week
from bot.commands.replies import context, divider, message, section
from bot.recap import week_message
from digests.models import Episode
from digests.render import escape
from digests.render.limits import Message
from digests.store import PrMention

MAX_MENTIONS = 20
MAX_SEARCH = 10
MAX_CONTEXT = 400


def _nothing(text: str) -> Message:
    return message(text, [section(text)])


def recent(command: Recent, deps: Deps) -> Message:
    episodes = deps.store.recent(command.n)
    if not episodes:
        return _nothing(msg.NO_EPISODES)
    title = msg.RECENT_TITLE_ONE if len(episodes) == 1 else msg.RECENT_TITLE.format(n=len(episodes))
    return deps.renderer.episode_list(episodes, title)


def latest(command: Latest, deps: Deps) -> Message:
    episodes = deps.store.recent(1)
    if not episodes:
        return _nothing(msg.NO_EPISODES)
    return deps.renderer.digest(episodes[0], buttons=True)


def _noon(day: date, deps: Deps) -> datetime:
    """Midday in the team's timezone: "nearest to a date" should not favour either edge."""
    return datetime.combine(day, time(12), tzinfo=deps.settings.tz).astimezone(UTC)


def _find_nearby(command: NearbyDate | NearbyTitle | NearbyPr, deps: Deps) -> Episode | None:
    store = deps.store
    if isinstance(command, NearbyDate):
        return store.nearest(_noon(command.day, deps))
    if isinstance(command, NearbyPr):
        mentions = store.by_pr(command.number)
        return mentions[0].episode if mentions else None
    found = store.by_title(command.words)
    if found is None:
        matches = store.search(command.words, limit=1)
        found = matches[0] if matches else None
    return found


def _what(command: NearbyDate | NearbyTitle | NearbyPr) -> str:
    if isinstance(command, NearbyDate):
        return command.day.isoformat()
    if isinstance(command, NearbyPr):
        return msg.NEAR_PR.format(number=command.number)
    return f"“{escape.mrkdwn(escape.truncate(command.words, 80))}”"


def nearby(command: NearbyDate | NearbyTitle | NearbyPr, deps: Deps) -> Message:
    episode = _find_nearby(command, deps)
    if episode is None:
        return _nothing(msg.NOTHING_NEAR.format(what=_what(command)))
    return nearby_of(episode, deps)


def nearby_of(episode: Episode, deps: Deps) -> Message:
    """An episode with the ones just before and after it, and its page's own nearby list."""
    before, after = deps.store.neighbours(episode)
    line = deps.renderer.episode_line
    headline = escape.mrkdwn(escape.truncate(episode.headline, 140))
    blocks = [section(f"*{msg.NEARBY_TITLE.format(headline=headline)}*")]
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
        return _nothing(msg.NOTHING_FOR_PR.format(number=command.number))
    title = msg.PR_TITLE.format(number=command.number)
    groups: dict[str | None, list[PrMention]] = {}
    for mention in mentions[:MAX_MENTIONS]:
        groups.setdefault(_pr_url(mention.episode, command.number), []).append(mention)
    blocks = []
    for url, group in groups.items():
        label = title if len(groups) == 1 or url is None else f"{title} ({_repo_of(url)})"
        heading = escape.link(url, label) if url else escape.mrkdwn(label)
        blocks.append(section(f"*{heading}*"))
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
        return _nothing(msg.NOTHING_FOUND.format(words=escape.mrkdwn(words.replace("`", "'"))))
    return deps.renderer.episode_list(results, msg.SEARCH_TITLE.format(words=words))


def week_shows(deps: Deps, invocation: Invocation) -> list[str]:
    """The shows this channel follows, or every show when it follows none."""
    subs = deps.store.subscriptions(team_id=invocation.team_id, channel_id=invocation.channel_id)
    followed = sorted({s.show for s in subs})
    return followed or deps.shows


def week(command: Week, deps: Deps, invocation: Invocation) -> Message:
    """The weekly recap of that week, for the shows this channel follows."""
    day = command.day or deps.today()
    return week_message(deps.settings, deps.store, deps.renderer, day, week_shows(deps, invocation))
