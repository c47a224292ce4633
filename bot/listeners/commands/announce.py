"""What the whole channel is told after a change its author's own reply confirms.

Only real changes are announced, in words that say what changed: a new subscription, a
filter replaced, the daily mode switched or moved, the weekly recap turned on or off, a
subscription Slack had paused made active again, a pause or its end. A command that changed
nothing (the same subscribe again) is told to its author only, so the channel is not told of
"new" subscriptions it already had.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.listeners.commands.base import Deps, Invocation
from bot.listeners.commands.filter_words import filter_text
from bot.listeners.commands.replies import message, section, who
from bot.messages.subscriptions import (
    ANNOUNCE_AND,
    ANNOUNCE_DAILY,
    ANNOUNCE_DAILY_MOVED,
    ANNOUNCE_EVERY_SHOW,
    ANNOUNCE_FILTER,
    ANNOUNCE_FILTER_DROPPED,
    ANNOUNCE_FILTER_EXCEPT,
    ANNOUNCE_FILTER_RULE,
    ANNOUNCE_FILTER_WORDS,
    ANNOUNCE_NEW_DAILY,
    ANNOUNCE_PAUSED_OPEN,
    ANNOUNCE_PAUSED_UNTIL,
    ANNOUNCE_PER_EPISODE,
    ANNOUNCE_PR_NEWS_OFF,
    ANNOUNCE_PR_NEWS_ON,
    ANNOUNCE_REACTIVATED,
    ANNOUNCE_RECAP_OFF,
    ANNOUNCE_RECAP_ON,
    ANNOUNCE_RESUMED,
    ANNOUNCE_SUBSCRIBED,
    ANNOUNCE_UNSUBSCRIBED,
    ANNOUNCE_UNSUBSCRIBED_ALL,
    DAILY_TIME_MOVED,
    SUBSCRIBED_EXCEPT,
    SUBSCRIBED_FILTER,
    SUBSCRIBED_RULE,
)
from digests.render import escape
from digests.render.limits import Message
from digests.types import Subscription


@dataclass(frozen=True)
class Change:
    """One show's subscription before a subscribe (None: there was none) and after it."""

    before: Subscription | None
    after: Subscription

    @property
    def changed(self) -> bool:
        return self.before is None or bool(_clauses(self.before, self.after, "", ""))


def folded(keywords: Sequence[str]) -> set[str]:
    """A filter's terms as compared: case, order and runs of spaces do not count."""
    return {" ".join(k.split()).casefold() for k in keywords}


def _bold(show: str) -> str:
    return f"*{escape.mrkdwn(show)}*"


def _new_filter(terms: Sequence[str], show: str) -> str:
    if not terms:
        return ANNOUNCE_FILTER_DROPPED.format(show=show)
    wanted = filter_text(
        terms,
        plain=ANNOUNCE_FILTER_WORDS,
        rule_of=ANNOUNCE_FILTER_RULE,
        only_excludes=ANNOUNCE_FILTER_EXCEPT,
    )
    return ANNOUNCE_FILTER.format(show=show, filter=wanted)


def _mode(before: Subscription, after: Subscription, show: str, zone: str) -> str | None:
    if before.daily_at == after.daily_at:
        return None
    if after.daily_at is None:
        return ANNOUNCE_PER_EPISODE.format(show=show)
    template = ANNOUNCE_DAILY if before.daily_at is None else ANNOUNCE_DAILY_MOVED
    return template.format(show=show, at=after.daily_at, timezone=zone)


def _clauses(before: Subscription, after: Subscription, show: str, zone: str) -> list[str]:
    """What changed for one show, each a clause after "<@U> " ("changed *X*'s filter to …")."""
    out: list[str] = []
    if before.paused:  # subscribing again makes one Slack had paused active
        out.append(ANNOUNCE_REACTIVATED.format(show=show))
    if folded(before.keywords) != folded(after.keywords):
        out.append(_new_filter(after.keywords, show))
    mode = _mode(before, after, show, zone)
    if mode is not None:
        out.append(mode)
    if before.recap != after.recap:
        template = ANNOUNCE_RECAP_ON if after.recap else ANNOUNCE_RECAP_OFF
        out.append(template.format(show=show))
    if before.pr_updates != after.pr_updates:
        template = ANNOUNCE_PR_NEWS_ON if after.pr_updates else ANNOUNCE_PR_NEWS_OFF
        out.append(template.format(show=show))
    return out


def _joined(clauses: Sequence[str]) -> str:
    if len(clauses) == 1:
        return clauses[0]
    return ", ".join(clauses[:-1]) + ANNOUNCE_AND + clauses[-1]


def subscribed(
    changes: Sequence[Change], moved_to: str | None, deps: Deps, invocation: Invocation
) -> Message | None:
    """The channel's message after a subscribe: its new subscriptions in one sentence, then
    each changed one's changes; None when nothing changed. ``moved_to``: the time the
    channel's other daily subscriptions moved to (a channel has one daily time)."""
    author, zone = who(invocation.user_id), deps.settings.timezone
    sentences: list[str] = []
    new = [c.after for c in changes if c.before is None]
    if new:
        daily = new[0].daily_at
        sentences.append(
            ANNOUNCE_SUBSCRIBED.format(
                who=author,
                show="*, *".join(escape.mrkdwn(s.show) for s in new),
                filter=filter_text(
                    new[0].keywords,
                    plain=SUBSCRIBED_FILTER,
                    rule_of=SUBSCRIBED_RULE,
                    only_excludes=SUBSCRIBED_EXCEPT,
                ),
                mode=ANNOUNCE_NEW_DAILY.format(at=daily, timezone=zone) if daily else "",
            )
        )
    for change in changes:
        if change.before is not None:
            clauses = _clauses(change.before, change.after, _bold(change.after.show), zone)
            if clauses:
                sentences.append(f"{author} {_joined(clauses)}.")
    if not sentences:
        return None
    if moved_to is not None:
        sentences.append(DAILY_TIME_MOVED.format(at=moved_to))
    text = " ".join(sentences)
    return message(text, [section(text)])


def _shows(shows: Sequence[str]) -> str:
    return ", ".join(_bold(s) for s in shows) if shows else ANNOUNCE_EVERY_SHOW


def unsubscribed(shows: Sequence[str], invocation: Invocation) -> Message:
    """After an unsubscribe that removed something: ``shows`` named, or every show."""
    author = who(invocation.user_id)
    if shows:
        text = ANNOUNCE_UNSUBSCRIBED.format(
            who=author, show="*, *".join(escape.mrkdwn(s) for s in shows)
        )
    else:
        text = ANNOUNCE_UNSUBSCRIBED_ALL.format(who=author)
    return message(text, [section(text)])


def paused(shows: Sequence[str], until: str | None, invocation: Invocation) -> Message:
    """After a pause: ``shows`` named (none: every show), ``until`` in words or open."""
    author, what = who(invocation.user_id), _shows(shows)
    text = (
        ANNOUNCE_PAUSED_UNTIL.format(who=author, what=what, until=until)
        if until is not None
        else ANNOUNCE_PAUSED_OPEN.format(who=author, what=what)
    )
    return message(text, [section(text)])


def resumed(shows: Sequence[str], invocation: Invocation) -> Message:
    text = ANNOUNCE_RESUMED.format(who=who(invocation.user_id), what=_shows(shows))
    return message(text, [section(text)])
