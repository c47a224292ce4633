"""Read-only subcommands: recent, latest, nearby, pr, search, week.

Each takes the parsed command and the app's parts and returns a ``Message``; the store is
the only I/O, and the caller runs these off the event loop.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta

from bot.jobs.enrichment import attach_details, pr_details_line
from bot.listeners.commands.base import Deps, Invocation
from bot.listeners.commands.dates import show_day
from bot.listeners.commands.model import (
    Latest,
    NearbyDate,
    NearbyPr,
    NearbyTitle,
    NearbyUrl,
    Pr,
    Recent,
    Search,
)
from bot.listeners.commands.replies import context, divider, message, nothing, section
from bot.listeners.commands.subscriptions import when
from bot.messages.answers import (
    FEED_HAD_NONE,
    FEED_NOT_POLLED,
    FEED_NOT_READ,
    NEAR_PR,
    NEARBY_AFTER,
    NEARBY_BEFORE,
    NEARBY_FROM_PAGE,
    NEARBY_THIS,
    NEARBY_TITLE,
    NEAREST_TO,
    NO_EPISODES,
    NO_EPISODES_MANY,
    NO_EPISODES_OF,
    NO_TITLE_MATCH,
    NOTHING_AT,
    NOTHING_FOR_PR,
    NOTHING_FOR_REPO_PR,
    NOTHING_FOUND,
    NOTHING_NEAR,
    NOTHING_WITHIN,
    PR_TEXT,
    PR_TITLE,
    PR_TITLE_REPO,
    RECENT_TITLE,
    RECENT_TITLE_ONE,
    SCOPE_SHOWS,
    SEARCH_TITLE,
    SOME_WORDS,
)
from bot.messages.home import HOME_MORE
from digests.models import Episode
from digests.render import escape
from digests.render.limits import Message
from digests.types import PrMention

MAX_MENTIONS = 20
MAX_SEARCH = 10
# The newest this many episodes with every word, re-ordered phrase first then newest.
SEARCH_POOL = 50
MAX_CONTEXT = 400
# `nearby <date>` answers with an episode at most this far away; farther is "no episode".
NEAR_WINDOW = timedelta(days=14)
# Title matches are refined from this many newest candidates that contain every word.
TITLE_CANDIDATES = 50

_WORD_RE = re.compile(r"\w+")

NearbyCommand = NearbyDate | NearbyTitle | NearbyPr | NearbyUrl


def channel_shows(deps: Deps, invocation: Invocation) -> list[str]:
    """The shows this channel follows, or every show when it follows none."""
    subs = deps.store.subscriptions(team_id=invocation.team_id, channel_id=invocation.channel_id)
    followed = sorted({s.show for s in subs})
    return followed or deps.shows


def scope(show: str | None, deps: Deps, invocation: Invocation | None) -> list[str] | None:
    """The shows a query is about: the one it names, else the channel's (None: all of
    them, which the store reads without a filter; also when no channel is known)."""
    if show:
        shows = [show]
    elif invocation is None or len(deps.shows) < 2:
        return None  # one show: the channel's choice cannot narrow it (no read needed)
    else:
        shows = channel_shows(deps, invocation)
    return None if set(shows) >= set(deps.shows) else shows


def spans_shows(episodes: Sequence[Episode | PrMention]) -> bool:
    """Whether list lines must name their show: the answer has more than one."""
    names = {e.episode.show if isinstance(e, PrMention) else e.show for e in episodes}
    return len(names) > 1


def _listed(
    deps: Deps, episodes: Sequence[Episode], title: str, shows: list[str] | None
) -> Message:
    """A list answer; a channel-scoped one says which shows it is from."""
    reply = deps.renderer.episode_list(episodes, title, show_names=spans_shows(episodes))
    if shows is None or len(deps.shows) < 2:
        return reply
    note = context(SCOPE_SHOWS.format(shows=", ".join(f"*{escape.mrkdwn(s)}*" for s in shows)))
    return message(reply["text"], [*reply["blocks"][:1], note, *reply["blocks"][1:]])


def _feed_news(show: str, deps: Deps) -> str:
    """What the polls found of a show with no episodes: none at its last poll (when), no
    poll yet, or a feed that could not be read yet. mrkdwn."""
    state = deps.store.fetch_state(show)
    name = escape.mrkdwn(show)
    if state.last_success_at is not None:
        return FEED_HAD_NONE.format(show=name, when=when(state.last_success_at, deps))
    if state.last_polled_at is not None:
        return FEED_NOT_READ.format(show=name, when=when(state.last_polled_at, deps))
    return FEED_NOT_POLLED.format(show=name)


def no_episodes(shows: list[str] | None, deps: Deps) -> Message:
    """The answer when the shows asked about have no episodes: why, show by show."""
    names = shows if shows is not None else deps.shows
    if not names:
        return nothing(NO_EPISODES)
    if len(names) == 1:
        return nothing(NO_EPISODES_OF.format(news=_feed_news(names[0], deps)))
    lines = "\n".join(f"• {_feed_news(show, deps)}" for show in names[:20])
    return nothing(NO_EPISODES_MANY, section(lines))


def recent(command: Recent, deps: Deps, invocation: Invocation | None = None) -> Message:
    shows = scope(command.show, deps, invocation)
    episodes = deps.store.recent(command.n, shows=shows)
    if not episodes:
        return no_episodes(shows, deps)
    title = RECENT_TITLE_ONE if len(episodes) == 1 else RECENT_TITLE.format(n=len(episodes))
    return _listed(deps, episodes, title, shows)


def latest(command: Latest, deps: Deps, invocation: Invocation | None = None) -> Message:
    shows = scope(command.show, deps, invocation)
    episodes = deps.store.recent(1, shows=shows)
    if not episodes:
        return no_episodes(shows, deps)
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


def _by_title(words: str, deps: Deps, shows: list[str] | None) -> Episode | None:
    found = deps.store.by_title(words, shows=shows)
    if found is not None:
        return found
    candidates = deps.store.by_title_words(title_words(words), limit=TITLE_CANDIDATES, shows=shows)
    return best_title_match(words, candidates)


def _local_day(episode: Episode, deps: Deps) -> date:
    return episode.published_at.astimezone(deps.settings.tz).date()


def _nearby_date(command: NearbyDate, deps: Deps, shows: list[str] | None) -> Message:
    day = show_day(command.day)
    episode = deps.store.nearest(_noon(command.day, deps), shows=shows)
    if episode is None:
        return nothing(NOTHING_NEAR.format(what=day))
    distance = abs(_local_day(episode, deps) - command.day)
    if distance > NEAR_WINDOW:
        # Silently answering with an episode months away reads as "this is that day's".
        text = NOTHING_WITHIN.format(day=day)
        return nothing(text, section(deps.renderer.episode_line(episode)))
    note = NEAREST_TO.format(day=day) if distance else None
    return nearby_of(episode, deps, note=note)


def nearby(command: NearbyCommand, deps: Deps, invocation: Invocation | None = None) -> Message:
    shows = scope(command.show, deps, invocation)
    if isinstance(command, NearbyDate):
        return _nearby_date(command, deps, shows)
    if isinstance(command, NearbyUrl):
        episode = deps.store.episode_by_url(command.url)
        if episode is None:
            url = escape.mrkdwn(escape.truncate(command.url, 200).replace("`", "'"))
            return nothing(NOTHING_AT.format(url=f"`{url}`"))
        return nearby_of(episode, deps)
    if isinstance(command, NearbyPr):
        mentions = deps.store.by_pr(command.number, shows=shows)
        if not mentions:
            return nothing(NOTHING_NEAR.format(what=NEAR_PR.format(number=command.number)))
        return nearby_of(mentions[0].episode, deps)
    episode = _by_title(command.words, deps, shows)
    if episode is None:
        words = escape.mrkdwn(escape.truncate(command.words, 80).replace("`", "'"))
        return nothing(NO_TITLE_MATCH.format(words=words))
    return nearby_of(episode, deps)


def nearby_of(episode: Episode, deps: Deps, *, note: str | None = None) -> Message:
    """An episode with the ones just before and after it, and its page's own nearby list.

    ``note`` (composed mrkdwn) says why this episode, when it is not exactly what was asked.
    """
    before, after = deps.store.neighbours(episode)
    several = len(deps.shows) > 1

    def line(one: Episode) -> str:
        return deps.renderer.episode_line(one, show_name=several)

    headline = escape.mrkdwn(escape.truncate(episode.headline, 140))
    blocks = [section(f"*{NEARBY_TITLE.format(headline=headline)}*")]
    if note:
        blocks.append(context(note))
    if before is not None:
        blocks.append(section(f"*{NEARBY_BEFORE}*\n{line(before)}"))
    blocks.append(section(f"*{NEARBY_THIS}*\n{line(episode)}"))
    if after is not None:
        blocks.append(section(f"*{NEARBY_AFTER}*\n{line(after)}"))
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
        blocks.append(section(f"*{NEARBY_FROM_PAGE}*\n" + "\n".join(listed)))
    return message(NEARBY_TITLE.format(headline=headline), blocks)


def _pr_url(episode: Episode, number: int) -> str | None:
    return next((p.url for p in episode.pull_requests if p.number == number), None)


def _mention_url(mention: PrMention, number: int) -> str | None:
    """The URL of the PR a mention is of (an episode may name the number in two repos)."""
    return mention.url or _pr_url(mention.episode, number)


def _same_repo(url: str | None, repo: str) -> bool:
    return url is not None and _repo_of(url).casefold() == repo.casefold()


def own_repo(deps: Deps, show: str) -> str | None:
    config = deps.settings.show(show)
    # A show added from Slack: its repository as the renderer has it (Deps.refresh_shows).
    return config.repo if config is not None else deps.renderer.repos.get(show)


def pr_label(deps: Deps, show: str, url: str | None, number: int) -> str:
    """``#n`` for a PR of the show's own repository, ``owner/repo#n`` for another's."""
    repo = _repo_of(url) if url else None
    own = own_repo(deps, show)
    if repo is None or repo == url or own is None or _same_repo(url, own):
        return f"#{number}"
    return f"{repo}#{number}"


def pr(command: Pr, deps: Deps, invocation: Invocation | None = None) -> Message:
    """Every episode naming the PR, newest first, each with the sentence that names it.

    Shows can follow different repositories, where #123 is a different PR: one heading per
    PR URL, in order of the newest mention; a pasted link keeps only its repository's PR.
    """
    shows = scope(command.show, deps, invocation)
    mentions = deps.store.by_pr(command.number, shows=shows)
    if command.repo is not None:
        mentions = _of_repo(mentions, command.number, command.repo)
        if not mentions and command.show is None and shows is not None:
            # The link names its repository: the other shows' episodes of it count too.
            mentions = _of_repo(deps.store.by_pr(command.number), command.number, command.repo)
        if not mentions:
            repo = escape.mrkdwn(command.repo)
            return nothing(NOTHING_FOR_REPO_PR.format(repo=repo, number=command.number))
    if not mentions:
        return nothing(NOTHING_FOR_PR.format(number=command.number))
    title = PR_TITLE.format(number=command.number)
    groups: dict[str | None, list[PrMention]] = {}
    for mention in mentions[:MAX_MENTIONS]:
        groups.setdefault(_mention_url(mention, command.number), []).append(mention)
    several = spans_shows(mentions[:MAX_MENTIONS])
    blocks = []
    for url, group in groups.items():
        label = _group_title(deps, group[0].episode.show, url, command.number, len(groups))
        heading = escape.link(url, label) if url else escape.mrkdwn(label)
        blocks.append(section(f"*{heading}*"))
        details = pr_details_line(deps.settings, deps.store, url, command.number)
        if details:
            blocks.append(section(details))
        for mention in group:
            sentence = escape.mrkdwn(escape.truncate(escape.oneline(mention.context), MAX_CONTEXT))
            quote = f"\n>{sentence}" if sentence else ""
            episode_line = deps.renderer.episode_line(mention.episode, show_name=several)
            blocks.append(section(f"{episode_line}{quote}"))
    if len(mentions) > MAX_MENTIONS:
        blocks.append(context(HOME_MORE.format(count=len(mentions) - MAX_MENTIONS)))
    count = len({(m.episode.show, m.episode.guid) for m in mentions})
    return message(
        PR_TEXT.format(title=title, count=count, s="" if count == 1 else "s"), blocks
    )


def _of_repo(mentions: Sequence[PrMention], number: int, repo: str) -> list[PrMention]:
    return [m for m in mentions if _same_repo(_mention_url(m, number), repo)]


def _group_title(deps: Deps, show: str, url: str | None, number: int, groups: int) -> str:
    """One PR's heading: ``#n`` of the show's own repository, ``owner/repo#n`` of another's
    (and the repository named when several share the number)."""
    title = PR_TITLE.format(number=number)
    if groups > 1 and url is not None:
        return f"{title} ({_repo_of(url)})"
    label = pr_label(deps, show, url, number)
    if label != f"#{number}":
        return PR_TITLE_REPO.format(repo=label.rsplit("#", 1)[0], number=number)
    return title


def _repo_of(url: str) -> str:
    """``owner/repo`` of a GitHub pull-request URL (the URL itself when it is not one)."""
    parts = url.split("/")
    return "/".join(parts[3:5]) if len(parts) > 5 and parts[5] == "pull" else url


def _phrase_rank(words: Sequence[str], episode: Episode) -> int:
    """0: the words as a phrase in the episode's text, 1: all of them anywhere, 2: some.

    Words as ``title_words`` reads them (runs of ``\\w`` in the case-folded text), found by
    regular expressions over the text instead of a list of its every word: a phrase is the
    words with only non-word characters between them, a word is one with none beside it.
    """
    if not words:
        return 1
    text = "\n".join((episode.headline, episode.summary, episode.transcript)).casefold()
    phrase = r"\W+".join(re.escape(w) for w in words)
    if re.search(rf"(?<!\w){phrase}(?!\w)", text):
        return 0
    found = all(re.search(rf"(?<!\w){re.escape(w)}(?!\w)", text) for w in words)
    return 1 if found else 2


def search(command: Search, deps: Deps, invocation: Invocation | None = None) -> Message:
    """The phrase first, then every word anywhere, newest first among equals; only when no
    episode has them all, those with some (and the header says so)."""
    shows = scope(command.show, deps, invocation)
    wanted = title_words(command.words)
    # The pool newest first, not by score (a score needs corpus statistics, which grow
    # with the archive), then phrase first; only the ten shown have their PRs read.
    results = deps.store.search(
        command.words,
        limit=SEARCH_POOL,
        shows=shows,
        any_words=False,
        ranked=False,
        pick=lambda pool: _phrase_first(wanted, pool)[:MAX_SEARCH],
    )
    words = escape.truncate(command.words, 60)
    title = SEARCH_TITLE.format(words=words)
    # One distinct word: "some of the words" would be the same search again.
    if not results and len(set(wanted)) > 1:
        results = deps.store.search(command.words, limit=MAX_SEARCH, shows=shows)
        title = SOME_WORDS.format(words=words)
    if not results:
        return nothing(NOTHING_FOUND.format(words=escape.mrkdwn(words.replace("`", "'"))))
    return _listed(deps, results[:MAX_SEARCH], title, shows)


def _phrase_first(wanted: Sequence[str], episodes: Sequence[Episode]) -> list[Episode]:
    """Phrase first, then newest: no score's tiny differences between two episodes with
    the same words put last week's above today's."""
    return sorted(
        episodes, key=lambda e: (min(_phrase_rank(wanted, e), 1), -e.published_at.timestamp())
    )
