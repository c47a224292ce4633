"""Channel-control subcommands: preview, pause, resume.

``preview`` runs a filter over a show's newest episodes exactly as delivery does
(``digests.filters`` over headline, summary, transcript and PR titles and areas) and says,
per episode, which term decided; it reads the store and changes nothing.

``pause`` holds a channel's subscriptions for a while (``digests.store.holds``): what
arrives meanwhile is never posted there, unless ``resume --catch-up`` gives the newest of
it pending ledger rows, which the next poll (or the recovery sweep) delivers; in a daily
channel one ``daily`` row for the pause instead, which the daily job posts as one message.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, time

from bot.listeners.commands import announce
from bot.listeners.commands.base import Deps, Invocation
from bot.listeners.commands.dates import show_day
from bot.listeners.commands.model import Pause, Preview, Resume, Subscribe
from bot.listeners.commands.replies import context, message, nothing, section
from bot.messages.basics import COMMAND
from bot.messages.command_text import command_arg, subscribe_args
from bot.messages.control import (
    CAUGHT_UP_ALL,
    CAUGHT_UP_NEWEST,
    CAUGHT_UP_ONE,
    LIST_HELD_OPEN,
    LIST_HELD_UNTIL,
    MISSED_MANY,
    MISSED_ONE,
    PAUSE_NOT_SUBSCRIBED,
    PAUSED_HOW_TO_RESUME,
    PAUSED_OPEN,
    PAUSED_UNTIL,
    PREVIEW_FOOTER,
    PREVIEW_FOOTER_EVERY,
    PREVIEW_FOOTER_EVERY_NEW,
    PREVIEW_FOOTER_FOLLOWED,
    PREVIEW_FOOTER_NONE,
    PREVIEW_HINT,
    PREVIEW_HINT_MANY,
    PREVIEW_HINT_ONE,
    PREVIEW_NEWEST_MANY,
    PREVIEW_NEWEST_ONE,
    PREVIEW_NO_EPISODES,
    PREVIEW_ONLY_EXCLUDES,
    PREVIEW_POST,
    PREVIEW_POST_TERM,
    PREVIEW_SKIP_EXCLUDED,
    PREVIEW_SKIP_NONE,
    PREVIEW_SKIP_REQUIRED,
    PREVIEW_SUMMARY,
    PREVIEW_SUMMARY_ONE_POSTED,
    PREVIEW_SUMMARY_ONE_SKIPPED,
    PREVIEW_TEXT,
    PREVIEW_TITLE,
    RESUME_NOT_PAUSED,
    RESUME_NOT_SUBSCRIBED,
    RESUME_NOTHING_PAUSED,
    RESUMED,
    RESUMED_CATCH_UP,
    RESUMED_CATCH_UP_DAILY,
    RESUMED_MISSED,
    RESUMED_NONE_MISSED,
)
from bot.messages.subscriptions import ANY_SHOW
from digests.decide.daily import catch_up_key
from digests.decide.deliveries import (
    CATCH_UP,
    MISSED_SCAN,
    UNFINISHED,
    episode_key,
    matches,
    promised,
)
from digests.filters import Check, Filter, Verdict
from digests.models import Episode
from digests.render import escape
from digests.render.limits import Block, Message
from digests.store.ledger import Ledger, NewRow
from digests.types import Subscription

PREVIEW_EPISODES = 20
# Lines per section: twenty episode lines in one would pass Slack's 3,000 characters.
LINES_PER_SECTION = 5
HEADLINE_CHARS = 90


def pr_text(episode: Episode) -> list[str]:
    """What a filter reads besides the episode's own text (as
    ``digests.decide.deliveries.matches``)."""
    return [f"{info.title} {info.area or ''}" for info in episode.pr_info]


def _term(term: str | None) -> str:
    return f"“{escape.mrkdwn(term or '')}”"


def episode_line(episode: Episode, check: Check, chosen: Filter, deps: Deps) -> str:
    day = f"*{show_day(episode.published_at.astimezone(deps.settings.tz).date())}*"
    headline = escape.mrkdwn(escape.truncate(episode.headline, HEADLINE_CHARS))
    parts = {"day": day, "headline": headline}
    match check.verdict:
        case Verdict.MATCHED if check.term:
            return PREVIEW_POST_TERM.format(**parts, term=_term(check.term))
        case Verdict.MATCHED:
            return PREVIEW_POST.format(**parts)
        case Verdict.EXCLUDED:
            return PREVIEW_SKIP_EXCLUDED.format(**parts, term=_term(check.term))
        case Verdict.MISSING_REQUIRED:
            return PREVIEW_SKIP_REQUIRED.format(**parts, term=_term(check.term))
    terms = ", ".join(_term(t) for t in chosen.any_of)
    return PREVIEW_SKIP_NONE.format(**parts, terms=terms)


def preview(command: Preview, deps: Deps, invocation: Invocation) -> Message:
    show = escape.mrkdwn(command.show)
    episodes = deps.store.recent(PREVIEW_EPISODES, shows=[command.show])
    if not episodes:
        return nothing(PREVIEW_NO_EPISODES.format(show=show))
    chosen = Filter.from_terms(command.terms)
    checks = [(e, chosen.check(e, pr_text(e))) for e in episodes]
    posted = sum(1 for _, c in checks if c.matched)
    title = PREVIEW_TITLE.format(filter=escape.mrkdwn(chosen.describe()), show=show)
    summary = _summary(len(checks), posted)
    blocks: list[Block] = [section(f"{title}\n{summary}")]
    if chosen.none_of and not (chosen.any_of or chosen.all_of):
        blocks.append(context(PREVIEW_ONLY_EXCLUDES))
    lines = [episode_line(e, c, chosen, deps) for e, c in checks]
    for start in range(0, len(lines), LINES_PER_SECTION):
        blocks.append(section("\n".join(lines[start : start + LINES_PER_SECTION])))
    args = escape.mrkdwn(subscribe_args(command.show, chosen.terms(), deps.shows))
    blocks.append(context(_footer(command.show, chosen, episodes, args, deps, invocation)))
    # The fallback text is one line: the title needs its full stop there, not in the blocks.
    return message(PREVIEW_TEXT.format(title=title, summary=summary), blocks)


def backfill(
    show: str,
    chosen: Filter,
    deps: Deps,
    invocation: Invocation,
    recent: Sequence[Episode] | None = None,
) -> list[Episode]:
    """What a new subscription of this channel to ``show`` with ``chosen`` posts at once,
    newest first: of the show's last ``PREVIEW_EPISODES`` (``recent`` when read already),
    the newest ``backfill`` the filter lets through (``digests.decide.deliveries.promised``) that
    the
    channel has not had. ``subscribe`` records them (:func:`promise`); ``preview`` says so."""
    if recent is None:
        recent = deps.store.recent(PREVIEW_EPISODES, shows=[show])
    picks = {episode_key(show, e.guid): e for e in promised(recent, chosen, deps.settings.backfill)}
    if not picks:
        return []
    where = (invocation.team_id, invocation.channel_id)
    had = Ledger.for_store(deps.store).entries("episode", picks, [where]).get(where, {})
    return [e for k, e in picks.items() if k not in had or had[k].state in UNFINISHED]


def promise(sub: Subscription, episodes: Sequence[Episode], deps: Deps) -> None:
    """Pending ledger rows for what a subscribe reply promised: the next plan of the show
    (or the recovery sweep) posts them, and what arrives after them, as they are newer
    than what the channel then has."""
    rows = [
        NewRow(sub.team_id, sub.channel_id, "episode", episode_key(sub.show, e.guid), show=sub.show)
        for e in episodes
    ]
    if rows:
        ledger = Ledger.for_store(deps.store)
        ledger.run(lambda conn: ledger.ensure(conn, rows, deps.now()))


def _footer(
    show: str,
    chosen: Filter,
    episodes: Sequence[Episode],
    args: str,
    deps: Deps,
    invocation: Invocation,
) -> str:
    """What ``subscribe`` with this filter would do here, as its own reply would say it."""
    parts = {"command": COMMAND, "args": args, "show": escape.mrkdwn(show)}
    followed = deps.store.subscriptions(
        team_id=invocation.team_id, channel_id=invocation.channel_id, show=show
    )
    if followed:
        return PREVIEW_FOOTER_FOLLOWED.format(**parts)
    if chosen.empty:
        count = deps.settings.backfill
        if count <= 0:
            return PREVIEW_FOOTER_EVERY_NEW.format(**parts)
        newest = PREVIEW_NEWEST_ONE if count == 1 else PREVIEW_NEWEST_MANY
        return PREVIEW_FOOTER_EVERY.format(**parts, newest=newest.format(count=count))
    found = backfill(show, chosen, deps, invocation, episodes)
    if not found:
        return PREVIEW_FOOTER_NONE.format(**parts)
    listed = ", ".join(str(deps.renderer.episode_line(e)) for e in found)
    return PREVIEW_FOOTER.format(**parts, episodes=listed)


def _summary(total: int, posted: int) -> str:
    if total == 1:  # "Of its last 1 episodes, 1 would be …" is no sentence
        return PREVIEW_SUMMARY_ONE_POSTED if posted else PREVIEW_SUMMARY_ONE_SKIPPED
    return PREVIEW_SUMMARY.format(total=total, posted=posted, skipped=total - posted)


def with_preview_hint(reply: Message, command: Subscribe) -> Message:
    """A subscribe reply plus where to see what its filter lets through (own block, so the
    confirmation line stays as it was)."""
    if len(command.shows) == 1:
        args = escape.mrkdwn(subscribe_args(command.show, command.keywords))
        hint = context(PREVIEW_HINT.format(command=COMMAND, args=args))
    else:  # one preview per show: each has its own episodes
        each = [
            PREVIEW_HINT_ONE.format(
                command=COMMAND, args=escape.mrkdwn(subscribe_args(s, command.keywords))
            )
            for s in command.shows
        ]
        hint = context(PREVIEW_HINT_MANY.format(commands=" · ".join(each)))
    return Message(text=reply["text"], blocks=[*reply["blocks"], hint])


# -- pause / resume ------------------------------------------------------------------------


def until_text(when: datetime, deps: Deps) -> str:
    """``Mon 7 Dec 2026 00:00 UTC``: a pause's end in the team's timezone."""
    local = when.astimezone(deps.settings.tz)
    return f"{local:%a} {show_day(local.date())} {local:%H:%M} {deps.settings.timezone}"


def hold_note(sub: Subscription, deps: Deps) -> str:
    """The " — paused until …" of list, status and App Home; empty when no user pause is on."""
    if not sub.held(deps.now()):
        return ""
    if sub.held_until is None:
        return LIST_HELD_OPEN
    return LIST_HELD_UNTIL.format(until=until_text(sub.held_until, deps))


def _names(subs: Sequence[Subscription]) -> str:
    return ", ".join(f"*{escape.mrkdwn(s.show)}*" for s in subs)


def _reply(text: str, *more: str) -> Message:
    return message(text, [section(text), *(context(m) for m in more)])


def _what(shows: Sequence[str]) -> str:
    """The shows named, for "not subscribed to …" / "… was not paused"; none: any show."""
    return " or ".join(f"*{escape.mrkdwn(s)}*" for s in shows) if shows else ANY_SHOW


def pause(command: Pause, deps: Deps, invocation: Invocation) -> Message:
    return pause_with_announcement(command, deps, invocation)[0]


def _unfollowed(named: Sequence[str], done: Sequence[Subscription]) -> list[str]:
    """The shows named that ``done`` (what the store changed) does not have."""
    have = {s.show for s in done}
    return [s for s in named if s not in have]


def pause_with_announcement(
    command: Pause, deps: Deps, invocation: Invocation
) -> tuple[Message, Message | None]:
    """The shows named (every show of the channel when none) paused at once; the reply and
    the channel's announcement (None when nothing was paused)."""
    now = deps.now()
    until: datetime | None = None
    if command.duration is not None:
        until = now + command.duration
    elif command.until is not None:
        until = datetime.combine(command.until, time(0), tzinfo=deps.settings.tz).astimezone(UTC)
    which = command.shows or None
    held = deps.store.hold(invocation.team_id, invocation.channel_id, which, now, until)
    if not held:
        return nothing(PAUSE_NOT_SUBSCRIBED.format(what=_what(command.shows))), None
    names = _names(held)
    ends = until_text(until, deps) if until is not None else None
    text = (
        PAUSED_UNTIL.format(shows=names, until=ends)
        if ends is not None
        else PAUSED_OPEN.format(shows=names)
    )
    # The channel is told the shows by name, as the reply names them: "every show" in a
    # channel of one show read as more than was paused. A bare `resume` still ends it all.
    shown = [s.show for s in held]
    named = shown if command.shows else []
    args = "".join(f" {escape.mrkdwn(command_arg(s))}" for s in named)
    notes = [PAUSED_HOW_TO_RESUME.format(command=COMMAND, args=args, limit=CATCH_UP)]
    if missing := _unfollowed(command.shows, held):
        notes.insert(0, PAUSE_NOT_SUBSCRIBED.format(what=_what(missing)))
    return _reply(text, *notes), announce.paused(shown, ends, invocation)


def _not_resumed(shows: Sequence[str], deps: Deps, invocation: Invocation) -> list[str]:
    """Why each show named was not resumed: the channel does not follow it, or it follows it
    and it was not paused (each kind one line, "or" within it)."""
    if not shows:
        return []
    subs = deps.store.subscriptions(team_id=invocation.team_id, channel_id=invocation.channel_id)
    followed = {s.show for s in subs}
    lines = []
    if unfollowed := [s for s in shows if s not in followed]:
        lines.append(RESUME_NOT_SUBSCRIBED.format(what=_what(unfollowed)))
    if running := [s for s in shows if s in followed]:
        lines.append(RESUME_NOT_PAUSED.format(what=_what(running)))
    return lines


def missed(sub: Subscription, deps: Deps, now: datetime) -> list[Episode]:
    """What reached ``sub``'s show during its pause and its filter wants, newest first."""
    if sub.held_at is None:
        return []
    arrived = deps.store.arrived_between(sub.show, sub.held_at, now, MISSED_SCAN)
    return [e for e in arrived if matches(e, sub.keywords)]


def catch_up(
    subs: Sequence[Subscription], wanted: dict[str, list[Episode]], deps: Deps, now: datetime
) -> list[str]:
    """Pending ledger rows for the newest ``CATCH_UP`` of each show's missed episodes, and
    the reply's lines saying so. Per episode: a row each, which the next plan offers again,
    so they are posted. In a daily channel (where plans post nothing one by one): one
    ``daily`` row for the pause, which the daily job posts as one message listing them."""
    rows: list[NewRow] = []
    counts = {False: [0, 0], True: [0, 0]}  # daily? → [posted, arrived]
    for s in subs:
        found = wanted[s.show]
        if not found:
            continue
        counts[s.daily][0] += min(len(found), CATCH_UP)
        counts[s.daily][1] += len(found)
        if s.daily and s.held_at is not None:
            key = catch_up_key(s.show, s.held_at, now)
            rows.append(NewRow(s.team_id, s.channel_id, "daily", key, show=s.show))
        else:
            rows += [
                NewRow(s.team_id, s.channel_id, "episode", episode_key(s.show, e.guid), show=s.show)
                for e in found[:CATCH_UP]
            ]
    if rows:
        ledger = Ledger.for_store(deps.store)
        ledger.run(lambda conn: ledger.ensure(conn, rows, deps.now()))
    said = {False: RESUMED_CATCH_UP, True: RESUMED_CATCH_UP_DAILY}
    return [
        said[daily].format(which=_caught_up(posted, count))
        for daily, (posted, count) in counts.items()
        if count
    ]


def _caught_up(posted: int, count: int) -> str:
    """"The episode …" / "The 3 episodes …" / "The newest 10 of the 14 episodes …": counts
    in words that agree with them."""
    if count == 1:
        return CAUGHT_UP_ONE
    if posted == count:
        return CAUGHT_UP_ALL.format(count=count)
    return CAUGHT_UP_NEWEST.format(posted=posted, count=count)


def resume(command: Resume, deps: Deps, invocation: Invocation) -> Message:
    return resume_with_announcement(command, deps, invocation)[0]


def resume_with_announcement(
    command: Resume, deps: Deps, invocation: Invocation
) -> tuple[Message, Message | None]:
    """The shows named (every show of the channel when none) resumed at once; the reply and
    the channel's announcement (None when nothing was paused)."""
    now = deps.now()
    which = command.shows or None
    ended = deps.store.release(invocation.team_id, invocation.channel_id, which, now)
    if not ended:
        if not command.shows:
            return nothing(RESUME_NOTHING_PAUSED), None
        return nothing(" ".join(_not_resumed(command.shows, deps, invocation))), None
    # Named as the reply names them (a bare `resume` in a one-show channel is that show).
    told = announce.resumed([s.show for s in ended], invocation)
    notes = _not_resumed(_unfollowed(command.shows, ended), deps, invocation)
    wanted = {s.show: missed(s, deps, now) for s in ended}
    count = sum(len(found) for found in wanted.values())
    text = RESUMED.format(shows=_names(ended))
    if count == 0:
        return _reply(text, RESUMED_NONE_MISSED, *notes), told
    if command.catch_up:
        return _reply(text, *catch_up(ended, wanted, deps, now), *notes), told
    episodes = MISSED_ONE if count == 1 else MISSED_MANY.format(count=count)
    later = RESUMED_MISSED.format(episodes=episodes, command=COMMAND, limit=CATCH_UP)
    return _reply(text, later, *notes), told
