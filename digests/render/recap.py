"""The weekly recap as Block Kit (a post plus thread replies) or as plain text.

Pure: a ``WeeklyRecap`` in, messages out. The wording lives in ``templates/recap*.j2``
(rendered with the render package's Slack environment, so every value is mrkdwn-escaped);
this module decides what goes where. The post must fit Block Kit (50 blocks, ~10,000
characters of text, see ``limits``): it carries every episode and the top PRs when it can;
what does not fit goes to thread replies, and the post says how many went there — nothing
is dropped silently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from jinja2 import Environment, TemplateError

from digests.models import RecapPullRequest, WeeklyRecap
from digests.render import layout, limits
from digests.render.environment import format_duration, make_environment, pr_groups
from digests.render.escape import Mrkdwn, unescape
from digests.render.limits import Message
from digests.render.prs import pr_repo
from digests.render.renderer import Renderer, template_error

__all__ = [
    "TOP_PRS",
    "format_listening",
    "format_range",
    "recap_text",
    "recap_title",
    "render_recap",
]

# The post shows about this many PRs; a reader in a hurry needs the few that mattered.
TOP_PRS = 10
# Below this many PRs in the post, episodes start moving to the thread instead.
MIN_PRS = 5
# More shows than this and the header says "7 shows" instead of naming them.
MAX_NAMED_SHOWS = 3

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def format_range(first: date, last: date) -> str:
    """``5 Oct – 11 Oct 2026``; ``28 Dec 2026 – 3 Jan 2027`` across a year."""
    tail = f"{last.day} {_MONTHS[last.month - 1]} {last.year}"
    if first.year == last.year:
        return f"{first.day} {_MONTHS[first.month - 1]} – {tail}"
    return f"{first.day} {_MONTHS[first.month - 1]} {first.year} – {tail}"


def format_listening(seconds: int, untimed: int = 0) -> str:
    """Total listening time: ``14 min``, ``1 h 05 min``; unknown durations are said, not hidden."""
    minutes = (seconds + 30) // 60
    if seconds and not minutes:
        text = "under 1 min"
    elif minutes >= 60:
        text = f"{minutes // 60} h {minutes % 60:02d} min"
    else:
        text = f"{minutes} min"
    if untimed:
        text += f" (+{untimed} of unknown length)"
    return text


def recap_title(recap: WeeklyRecap) -> str:
    shows = list(dict.fromkeys(recap.shows))
    named = ", ".join(shows) if 0 < len(shows) <= MAX_NAMED_SHOWS else f"{len(shows)} shows"
    return f"{named} — week {recap.week}, {format_range(recap.first_day, recap.last_day)}"


# -- view model -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _EpisodeView:
    day: str
    show: str
    headline: str
    url: str | None
    duration: str
    prs: int


@dataclass(frozen=True)
class _PrView:
    """One line of the PR list: PRs named side by side in one sentence of the same
    episodes (as the digest groups them), with that sentence once."""

    prs: tuple[RecapPullRequest, ...]
    days: str
    context: str
    show: str = ""  # the episodes' show: its own repository's PRs are plain #n
    full: bool = False  # owner/repo#n: the recap names this number in several repositories


def _tz(recap: WeeklyRecap) -> ZoneInfo:
    try:
        return ZoneInfo(recap.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def _day(when: datetime, tz: ZoneInfo) -> str:
    local = (when if when.tzinfo else when.replace(tzinfo=UTC)).astimezone(tz)
    return f"{_DAYS[local.weekday()]} {local.day} {_MONTHS[local.month - 1]}"


def _episode_views(recap: WeeklyRecap) -> list[_EpisodeView]:
    tz = _tz(recap)
    return [
        _EpisodeView(
            # Our own words and digits (nothing to escape): marked so, the templates'
            # finalize passes them through instead of escaping each one again.
            day=Mrkdwn(_day(e.published_at, tz)),
            show=e.show,
            headline=e.headline,
            url=e.url,
            duration=Mrkdwn(format_duration(e.duration_seconds)),
            prs=e.pr_count,
        )
        for e in recap.episodes
    ]


@dataclass(frozen=True)
class _Episodes:
    """Per episode of a recap, what its PR lines name: its weekday and its show (computed
    once per recap; the post is tried at a few sizes, each with its own PR lines)."""

    weekday: dict[str, str]
    show: dict[str, str]

    @classmethod
    def of(cls, recap: WeeklyRecap) -> _Episodes:
        tz = _tz(recap)
        return cls(
            {e.guid: _DAYS[e.published_at.astimezone(tz).weekday()] for e in recap.episodes},
            {e.guid: e.show for e in recap.episodes},
        )


def _pr_lines(
    recap: WeeklyRecap, prs: Sequence[RecapPullRequest], known: _Episodes | None = None
) -> list[_PrView]:
    """``prs`` (a slice of the recap's, in its order) as lines: one per group."""
    known = known or _Episodes.of(recap)
    weekday, show = known.weekday, known.show
    repos: dict[int, set[str]] = {}
    for p in recap.pull_requests:
        repos.setdefault(p.number, set()).add(pr_repo(p.url) or "")
    return [
        _PrView(
            prs=tuple(g.prs),
            # Weekday names: nothing to escape (see _episode_views).
            days=Mrkdwn(", ".join(dict.fromkeys(weekday.get(u, "?") for u in g.prs[0].guids))),
            context=g.context,
            show=next((show[guid] for guid in g.prs[0].guids if guid in show), ""),
            full=any(len(repos[p.number]) > 1 for p in g.prs),
        )
        # A PR with a title from GitHub gets a line of its own (title, state, area).
        for g in pr_groups(prs, key=lambda p: (p.guids, p.number) if p.title else p.guids)
    ]


# -- environment ------------------------------------------------------------------------------


def _environment(renderer_or_env: Renderer | Environment | None) -> Environment:
    """The Slack Jinja environment: given directly, or the one a ``Renderer`` holds."""
    if isinstance(renderer_or_env, Environment):
        return renderer_or_env
    if isinstance(renderer_or_env, Renderer):
        return renderer_or_env.env
    if renderer_or_env is None:
        return make_environment()
    raise TypeError(f"not a Renderer or a Jinja2 Environment: {type(renderer_or_env)!r}")


def _script(env: Environment, name: str, **values: Any) -> Message:
    try:
        script = env.get_template(name).render(**values)
    except TemplateError as exc:
        # A user's template override is configuration: say which one is broken, and where.
        raise template_error(name, exc) from exc
    return layout.build(script, template=name)


def _episode_lines(
    env: Environment, episodes: Sequence[_EpisodeView], multi_show: bool
) -> list[Any]:
    """Each episode's line, rendered once by ``recap_common.j2``'s macro: the post is tried
    at a few sizes and the thread takes the rest, and every one of them reuses these."""
    name = "recap_common.j2"
    try:
        line = env.get_template(name).module.episode_line  # type: ignore[attr-defined]
        return [line(e, multi_show) for e in episodes]
    except TemplateError as exc:
        raise template_error(name, exc) from exc


def _fits(message: Message) -> bool:
    return (
        len(message["blocks"]) <= limits.BLOCKS_PER_MESSAGE
        and limits.message_text_size(message) <= limits.MESSAGE_TEXT_BUDGET
    )


# -- rendering --------------------------------------------------------------------------------


def _plans(n_episodes: int, n_prs: int) -> list[tuple[int, int]]:
    """(episodes, PRs) in the post, best first: every episode and the top PRs; then fewer
    PRs (down to ``MIN_PRS``); then fewer episodes; at worst a single line of each."""
    # Moving two or three PRs to a thread of their own helps nobody: show them.
    top = n_prs if n_prs <= TOP_PRS + 3 else TOP_PRS
    floor = min(top, MIN_PRS)
    plans = [(n_episodes, p) for p in range(top, floor - 1, -1)]
    plans += [(e, floor) for e in range(n_episodes - 1, 0, -1)]
    plans += [(1, min(1, n_prs)), (min(1, n_episodes), 0)]
    return plans


def _overflow(message: Message) -> float:
    """How far over (>1) or under the post's limits a rendered post is."""
    return max(
        len(message["blocks"]) / limits.BLOCKS_PER_MESSAGE,
        limits.message_text_size(message) / limits.MESSAGE_TEXT_BUDGET,
    )


# About what a "…and 12 more episodes" line adds to a post that leaves episodes out: only
# for the estimate of where the post starts to fit, never for deciding that it does.
_MORE_LINE = 40


def _measured_guess(
    plans: Sequence[tuple[int, int]], post: Message, dropped: Callable[[int], int]
) -> int | None:
    """The first plan whose post should fit: plans[0]'s ``post`` measured, and the text each
    plan leaves out of it (its lines, known before it is rendered). None when the blocks,
    not the text, are what overflows."""
    if len(post["blocks"]) > limits.BLOCKS_PER_MESSAGE:
        return None
    over = limits.message_text_size(post) - limits.MESSAGE_TEXT_BUDGET
    return next((i for i in range(1, len(plans)) if dropped(i) >= over), len(plans) - 1)


def _best_plan(
    plans: Sequence[tuple[int, int]], post_for: Callable[[tuple[int, int]], Message]
) -> tuple[int, Message]:
    """The first plan whose post fits (the last when none does), and that post.

    Most weeks fit whole: one render. Otherwise plans shrink monotonically, so the boundary
    is searched outward from an estimate of it, then bisected: a few renders, each about
    the size of the answer, rather than halving from the top. Posts that can say about
    how much text plans[i] leaves out of plans[0]'s (``_Posts.dropped``) get a measured
    estimate (usually the boundary itself: three renders); others an interpolated one.
    """
    posts: dict[int, Message] = {}

    def fits(index: int) -> bool:
        if index not in posts:
            posts[index] = post_for(plans[index])
        return _fits(posts[index])

    last = len(plans) - 1
    if fits(0) or last == 0:
        return 0, posts[0]
    guess = None
    if isinstance(post_for, _Posts):
        guess = _measured_guess(plans, posts[0], post_for.dropped)
    if guess is None:
        guess = _interpolated_guess(plans, posts, fits)
    bad, good = 0, last  # plans[bad] does not fit; plans[good] fits, or is the last resort
    step = 1
    if fits(guess):
        good = guess
        while good - step > bad and fits(good - step):
            good, step = good - step, step * 2
        bad = max(bad, good - step)
    else:
        bad = guess
        while bad + step < good and not fits(bad + step):
            bad, step = bad + step, step * 2
        good = min(good, bad + step)
    while good - bad > 1:
        mid = (bad + good) // 2
        if fits(mid):
            good = mid
        else:
            bad = mid
    fits(good)
    return good, posts[good]


def _interpolated_guess(
    plans: Sequence[tuple[int, int]], posts: dict[int, Message], fits: Callable[[int], bool]
) -> int:
    """Size grows about linearly with the lines: a proportional guess, then a secant step
    through it and the whole week, usually lands on the boundary or next to it."""
    last = len(plans) - 1

    def plan_of(items: float) -> int:
        return next((i for i, plan in enumerate(plans) if sum(plan) <= items), last)

    n0, o0 = sum(plans[0]), _overflow(posts[0])
    guess = plan_of(n0 * 0.95 / o0)
    fits(guess)
    n1, o1 = sum(plans[guess]), _overflow(posts[guess])
    if o0 != o1:
        guess = plan_of(n1 + (1 - o1) * (n0 - n1) / (o0 - o1))
    return guess


def _dropped(
    plans: Sequence[tuple[int, int]], lines: Sequence[Any], pr_sizes: Sequence[int]
) -> Callable[[int], int]:
    """``dropped`` for ``_best_plan``: the episode and PR lines plans[i] leaves out of
    plans[0]'s post (each with its newline), less the line that counts them."""
    n_e0, n_p0 = plans[0]
    after = [0] * (len(lines) + 1)  # after[k]: the characters of lines[k:]
    for k in range(len(lines) - 1, -1, -1):
        after[k] = after[k + 1] + len(lines[k]) + 1

    def dropped(index: int) -> int:
        n_e, n_p = plans[index]
        more = _MORE_LINE if n_e < n_e0 else 0
        return after[n_e] - after[n_e0] + sum(pr_sizes[n_p:n_p0]) - more

    return dropped


def _pr_sizes(env: Environment, views: Sequence[_PrView]) -> list[int]:
    """Each PR's share of the lines ``views`` render to (``recap_common.j2``'s pr_line, as
    the post calls it), with their newlines: what leaving that PR out saves."""
    name = "recap_common.j2"
    try:
        line = env.get_template(name).module.pr_line  # type: ignore[attr-defined]
        sizes: list[int] = []
        for view in views:
            size = len(line(view, 140)) + 1
            sizes += [size // len(view.prs)] * len(view.prs)
        return sizes
    except TemplateError as exc:
        raise template_error(name, exc) from exc


class _Posts:
    """The recap post at each plan, rendered when asked (``post_for`` of ``_best_plan``),
    and what a plan leaves out of plans[0]'s post, measured on the lines it drops."""

    def __init__(
        self,
        env: Environment,
        recap: WeeklyRecap,
        episodes: Sequence[_EpisodeView],
        lines: Sequence[Any],
        common: dict[str, Any],
        plans: Sequence[tuple[int, int]],
    ) -> None:
        self.env, self.recap, self.episodes, self.lines = env, recap, episodes, lines
        self.common, self.plans = common, plans
        self.known = _Episodes.of(recap)
        self._pr_lines: dict[int, list[_PrView]] = {}  # by how many PRs: plans share counts
        self._dropped: Callable[[int], int] | None = None

    def pr_lines(self, n_p: int) -> list[_PrView]:
        if n_p not in self._pr_lines:
            prs = self.recap.pull_requests[:n_p]
            self._pr_lines[n_p] = _pr_lines(self.recap, prs, self.known)
        return self._pr_lines[n_p]

    def __call__(self, plan: tuple[int, int]) -> Message:
        n_e, n_p = plan
        return _script(
            self.env,
            "recap.j2",
            episodes=self.episodes[:n_e],
            episode_lines=self.lines[:n_e],
            prs=self.pr_lines(n_p),
            more_episodes=len(self.episodes) - n_e,
            more_prs=len(self.recap.pull_requests) - n_p,
            **self.common,
        )

    def dropped(self, index: int) -> int:
        """About how much text plans[index] leaves out of plans[0]'s post (asked only when
        the whole week does not fit): the post is then rendered at its likely size and
        beside it, not searched for."""
        if self._dropped is None:
            sizes = _pr_sizes(self.env, self.pr_lines(self.plans[0][1]))
            self._dropped = _dropped(self.plans, self.lines, sizes)
        return self._dropped(index)


def render_recap(
    recap: WeeklyRecap,
    renderer_or_env: Renderer | Environment | None,
    *,
    quiet_week: bool = False,
    thread: bool = True,
) -> tuple[Message, list[Message]] | None:
    """The recap post and its thread replies (overflow), or None for an empty week.

    ``quiet_week``: an empty week still gets a short post. ``thread=False`` (a slash command
    answer, which cannot have a thread): the overflow is counted in the post, not sent.
    """
    env = _environment(renderer_or_env)
    title = recap_title(recap)
    if not recap.episodes:
        if not quiet_week:
            return None
        return limits.fit(_script(env, "recap_quiet.j2", recap=recap, title=title)), []

    episodes = _episode_views(recap)
    prs = recap.pull_requests
    listening = format_listening(recap.total_seconds, recap.untimed_episodes)
    multi_show = len({e.show for e in recap.episodes}) > 1
    lines = _episode_lines(env, episodes, multi_show)
    common = {
        "recap": recap,
        "title": title,
        "listening": listening,
        "multi_show": multi_show,
        "thread": thread,
        "repeated": any(len(p.guids) > 1 for p in recap.pull_requests),
    }

    plans = _plans(len(episodes), len(prs))
    posts = _Posts(env, recap, episodes, lines, common, plans)
    hi, best = _best_plan(plans, posts)
    n_e, n_p = plans[hi]
    post = best
    replies: list[Message] = []
    if thread and (n_e < len(episodes) or n_p < len(prs)):
        script = _script(
            env,
            "recap_thread.j2",
            episodes=episodes[n_e:],
            episode_lines=lines[n_e:],
            prs=_pr_lines(recap, prs[n_p:], posts.known),
            first_pr=n_p + 1,
            last_pr=len(prs),
            **common,
        )
        replies = layout.paginate(script["blocks"], script["text"])
    return limits.fit(post), replies


def recap_text(recap: WeeklyRecap, renderer_or_env: Renderer | Environment | None = None) -> str:
    """The whole recap as plain text: every episode and every PR, no size limits."""
    env = _environment(renderer_or_env)
    listening = format_listening(recap.total_seconds, recap.untimed_episodes)
    rendered = env.get_template("recap.txt.j2").render(
        recap=recap,
        title=recap_title(recap),
        listening=listening,
        episodes=_episode_views(recap),
        prs=_pr_lines(recap, recap.pull_requests),
        multi_show=len({e.show for e in recap.episodes}) > 1,
        repeated=any(len(p.guids) > 1 for p in recap.pull_requests),
    )
    # The environment escapes for mrkdwn; plain text wants the characters back.
    return unescape(rendered).rstrip("\n") + "\n"
