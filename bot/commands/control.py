"""Channel-control subcommands (issue 14): ``preview`` so far.

``preview`` runs a filter over a show's newest episodes exactly as delivery does
(``digests.filters`` over headline, summary, transcript and PR titles and areas) and says,
per episode, which term decided; it reads the store and changes nothing.
"""

from __future__ import annotations

from bot import messages as msg
from bot.commands.base import Deps
from bot.commands.dates import show_day
from bot.commands.model import Preview, Subscribe
from bot.commands.replies import context, message, nothing, section
from digests.filters import Check, Filter, Verdict
from digests.models import Episode
from digests.render import escape
from digests.render.limits import Block, Message

PREVIEW_EPISODES = 20
# Lines per section: twenty episode lines in one would pass Slack's 3,000 characters.
LINES_PER_SECTION = 5
HEADLINE_CHARS = 90


def pr_text(episode: Episode) -> list[str]:
    """What a filter reads besides the episode's own text (as ``digests.decide.matches``)."""
    return [f"{info.title} {info.area or ''}" for info in episode.pr_info]


def _term(term: str | None) -> str:
    return f"“{escape.mrkdwn(term or '')}”"


def episode_line(episode: Episode, check: Check, chosen: Filter, deps: Deps) -> str:
    day = f"*{show_day(episode.published_at.astimezone(deps.settings.tz).date())}*"
    headline = escape.mrkdwn(escape.truncate(episode.headline, HEADLINE_CHARS))
    parts = {"day": day, "headline": headline}
    match check.verdict:
        case Verdict.MATCHED if check.term:
            return msg.PREVIEW_POST_TERM.format(**parts, term=_term(check.term))
        case Verdict.MATCHED:
            return msg.PREVIEW_POST.format(**parts)
        case Verdict.EXCLUDED:
            return msg.PREVIEW_SKIP_EXCLUDED.format(**parts, term=_term(check.term))
        case Verdict.MISSING_REQUIRED:
            return msg.PREVIEW_SKIP_REQUIRED.format(**parts, term=_term(check.term))
    terms = ", ".join(_term(t) for t in chosen.any_of)
    return msg.PREVIEW_SKIP_NONE.format(**parts, terms=terms)


def preview(command: Preview, deps: Deps) -> Message:
    show = escape.mrkdwn(command.show)
    episodes = deps.store.recent(PREVIEW_EPISODES, shows=[command.show])
    if not episodes:
        return nothing(msg.PREVIEW_NO_EPISODES.format(show=show))
    chosen = Filter.from_terms(command.terms)
    checks = [(e, chosen.check(e, pr_text(e))) for e in episodes]
    posted = sum(1 for _, c in checks if c.matched)
    title = msg.PREVIEW_TITLE.format(filter=escape.mrkdwn(chosen.describe()), show=show)
    summary = msg.PREVIEW_SUMMARY.format(
        total=len(checks), posted=posted, skipped=len(checks) - posted
    )
    blocks: list[Block] = [section(f"{title}\n{summary}")]
    if chosen.none_of and not (chosen.any_of or chosen.all_of):
        blocks.append(context(msg.PREVIEW_ONLY_EXCLUDES))
    lines = [episode_line(e, c, chosen, deps) for e, c in checks]
    for start in range(0, len(lines), LINES_PER_SECTION):
        blocks.append(section("\n".join(lines[start : start + LINES_PER_SECTION])))
    args = escape.mrkdwn(" ".join(filter(None, (msg.command_arg(command.show), chosen.unparse()))))
    blocks.append(context(msg.PREVIEW_FOOTER.format(command=msg.COMMAND, args=args)))
    return message(f"{title} {summary}", blocks)


def with_preview_hint(reply: Message, command: Subscribe) -> Message:
    """A subscribe reply plus where to see what its filter lets through (own block, so the
    confirmation line stays as it was)."""
    args = escape.mrkdwn(msg.subscribe_args(command.show, command.keywords))
    hint = context(msg.PREVIEW_HINT.format(command=msg.COMMAND, args=args))
    return Message(text=reply["text"], blocks=[*reply["blocks"], hint])
