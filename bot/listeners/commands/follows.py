"""``follow``, ``unfollow`` and ``following``: a person's follows, told by direct message
(``bot.jobs.follows``). Replies are private; nothing is announced in the channel."""

from __future__ import annotations

from bot.catalog import all_shows
from bot.listeners.commands.base import Deps, Invocation
from bot.listeners.commands.model import (
    CommandError,
    FollowTarget,
    ListFollows,
    StartFollow,
    StopFollow,
)
from bot.listeners.commands.replies import message, nothing, section
from bot.messages.follows import (
    FOLLOW_WHICH_REPO,
    FOLLOWING_ADDED,
    FOLLOWING_ALREADY,
    FOLLOWING_FULL,
    FOLLOWING_NONE,
    FOLLOWING_PR_TOO,
    FOLLOWING_TITLE,
    NOT_FOLLOWING,
    UNFOLLOWED,
)
from digests.decide.follows import pr_url
from digests.filters import Filter
from digests.pulls import PrRules, shown_state
from digests.render import escape
from digests.render.limits import Message
from digests.store.follows import MAX_FOLLOWS, Added, FollowStore
from digests.store.pr_details import PrDetailsStore
from digests.types import Follow, FollowKind

__all__ = ["follow", "following", "unfollow"]


def _repo(target: FollowTarget, deps: Deps, invocation: Invocation, head: str) -> str:
    """The repository of a PR named by number alone: the one the channel's shows point to
    (every show's, in a channel that follows none), when there is only one."""
    if target.repo:
        return target.repo
    followed = {
        s.show for s in deps.store.subscriptions(invocation.team_id, invocation.channel_id)
    }
    every = all_shows(deps.settings, deps.store)  # the added shows' repositories count too
    shows = [s for s in every if not followed or s.name in followed]
    repos = sorted({s.repo for s in shows if s.repo})
    if len(repos) == 1:
        return repos[0]
    example = repos[0] if repos else "pytorch/pytorch"
    raise CommandError(FOLLOW_WHICH_REPO.format(number=target.number, example=example), head)


def _kind_and_target(
    target: FollowTarget, deps: Deps, invocation: Invocation, head: str
) -> tuple[FollowKind, str]:
    if target.number is not None:
        return FollowKind.PR, pr_url(_repo(target, deps, invocation, head), target.number)
    return FollowKind.WORDS, Filter.from_terms(target.terms).unparse()


def describe(follow_kind: FollowKind, target: str) -> str:
    """A follow as replies name it (mrkdwn, escaped)."""
    if follow_kind is FollowKind.PR:
        repo, _, number = target.removeprefix("https://github.com/").partition("/pull/")
        return escape.link(target, f"{repo}#{number}")
    return "`" + escape.mrkdwn(target.replace("`", "'")) + "`"


def _arg(follow_kind: FollowKind, target: str) -> str:
    if follow_kind is FollowKind.PR:
        repo, _, number = target.removeprefix("https://github.com/").partition("/pull/")
        return f"{repo}#{number}"
    return escape.mrkdwn(target)


def follow(command: StartFollow, deps: Deps, invocation: Invocation) -> Message:
    kind, target = _kind_and_target(command.target, deps, invocation, "follow")
    state = None
    if kind is FollowKind.PR and command.target.number is not None:
        # Known already: a change from this state is news, this state is not.
        key = (target.removeprefix("https://github.com/").partition("/pull/")[0],
               command.target.number)  # fmt: skip
        details = PrDetailsStore(deps.store).get([key]).get(key)
        state = shown_state(details, _rules(deps, key[0]))
    added = FollowStore(deps.store).add(
        invocation.team_id, invocation.user_id, kind, target, deps.now(), last_state=state
    )
    what = describe(kind, target)
    if added is Added.ALREADY:
        return nothing(FOLLOWING_ALREADY.format(what=what))
    if added is Added.FULL:
        return nothing(FOLLOWING_FULL.format(limit=MAX_FOLLOWS))
    text = FOLLOWING_ADDED.format(
        what=what,
        pr_too=FOLLOWING_PR_TOO if kind is FollowKind.PR else "",
        arg=_arg(kind, target),
    )
    return message(text, [section(text)])


def _rules(deps: Deps, repo: str) -> PrRules:
    every = all_shows(deps.settings, deps.store)
    show = next((s for s in every if s.repo.casefold() == repo.casefold()), None)
    return show.pr_rules() if show is not None else PrRules()


def unfollow(command: StopFollow, deps: Deps, invocation: Invocation) -> Message:
    kind, target = _kind_and_target(command.target, deps, invocation, "unfollow")
    gone = FollowStore(deps.store).remove(invocation.team_id, invocation.user_id, kind, target)
    what = describe(kind, target)
    if not gone:
        return _listing(deps, invocation, NOT_FOLLOWING.format(what=what))
    text = UNFOLLOWED.format(what=what)
    return message(text, [section(text)])


def following(command: ListFollows, deps: Deps, invocation: Invocation) -> Message:
    return _listing(deps, invocation)


def _listing(deps: Deps, invocation: Invocation, first: str | None = None) -> Message:
    follows: list[Follow] = FollowStore(deps.store).of_user(invocation.team_id, invocation.user_id)
    if not follows:
        return nothing(f"{first}\n{FOLLOWING_NONE}" if first else FOLLOWING_NONE)
    lines = "\n".join(f"• {describe(f.kind, f.target)}" for f in follows)
    head = f"{first}\n{FOLLOWING_TITLE}" if first else FOLLOWING_TITLE
    return message(head, [section(head), section(lines)])
