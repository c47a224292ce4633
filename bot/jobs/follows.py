"""Follows in the pipeline: after a cycle has delivered, a direct message to each person
whose follow a new episode hits, and to each whose followed PR GitHub now says is merged,
closed or reverted. Decided by ``digests.decide.follows``; each DM goes through the delivery
ledger under a key naming the follow and the episode (or the state), so it is sent once
whichever process or retry gets there, and paced like any post."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from bot.catalog import all_shows
from bot.delivery.deliverer import Deliverer
from bot.delivery.items import Delivery
from bot.messages.follows import (
    FOLLOW_DM_EPISODE,
    FOLLOW_DM_STATE,
    FOLLOW_DM_WHY,
    FOLLOW_DM_WHY_MANY,
)
from config.settings import Settings
from digests.decide.follows import (
    FINAL_STATES,
    FOLLOW_KEY,
    EpisodeHit,
    StateHit,
    by_person,
    episode_hits,
    pr_url,
    state_hits,
)
from digests.enrich.details import EnrichReport
from digests.models import Episode
from digests.pulls import PrRules, shown_state
from digests.render import blocks, limits
from digests.render.escape import Mrkdwn, link, mrkdwn, oneline, truncate
from digests.render.prs import pr_repo
from digests.store import Store
from digests.store.follows import FollowStore
from digests.store.pr_details import PrDetailsStore
from digests.types import Follow, FollowKind, Ident, PrKey

if TYPE_CHECKING:
    from slack_bolt.async_app import AsyncApp, AsyncBoltContext

    from bot.jobs.cycle import PollResult
    from bot.listeners.commands.base import Deps

log = logging.getLogger(__name__)

__all__ = [
    "deliver_follows",
    "episode_dms",
    "news",
    "recoverable_dms",
    "register",
    "state_dms",
]

# A poll adding more than this many episodes is reading an archive, not news.
NEWS_PER_POLL = 25
NEWS_WINDOW = timedelta(days=7)


def _pr_label(url: str) -> str:
    repo = pr_repo(url) or ""
    return f"{repo}#{url.rsplit('/', 1)[-1]}" if repo else url


def _unfollow_arg(follow: Follow) -> str:
    return _pr_label(follow.target) if follow.kind is FollowKind.PR else follow.target


def _what(follow: Follow) -> Mrkdwn:
    if follow.kind is FollowKind.PR:
        return link(follow.target, _pr_label(follow.target))
    return Mrkdwn("`{}`").format(follow.target.replace("`", "'"))


def _message(text: Mrkdwn, follows: Sequence[Follow]) -> dict[str, Any]:
    if len(follows) == 1:
        why = Mrkdwn(FOLLOW_DM_WHY).format(
            what=_what(follows[0]), arg=_unfollow_arg(follows[0])
        )
    else:
        what = Mrkdwn(", ").join(_what(f) for f in follows)
        why = Mrkdwn(FOLLOW_DM_WHY_MANY).format(what=what)
    body = Mrkdwn(f"{text}\n{why}")
    return dict(limits.fit({"text": str(text), "blocks": [blocks.section(body)]}))


def episode_message(hits: Sequence[EpisodeHit]) -> dict[str, Any]:
    """One person's DM for one new episode: every follow of theirs it hits, the sentences
    naming their PRs, and how to stop."""
    e = hits[0].episode
    episode = link(e.url, truncate(oneline(e.headline), 150))
    named = Mrkdwn(", ").join(
        link(h.pr.url, _pr_label(h.pr.url)) if h.pr is not None else _what(h.follow)
        for h in hits
    )
    text = Mrkdwn(FOLLOW_DM_EPISODE).format(what=named, show=e.show, episode=episode)
    contexts = dict.fromkeys(h.pr.context for h in hits if h.pr is not None and h.pr.context)
    for context in list(contexts)[:3]:
        text = Mrkdwn(f"{text}\n> {Mrkdwn(truncate(mrkdwn(oneline(context)), 600))}")
    return _message(text, [h.follow for h in hits])


def state_message(hit: StateHit, title: str) -> dict[str, Any]:
    text = Mrkdwn(FOLLOW_DM_STATE).format(
        pr=link(hit.follow.target, _pr_label(hit.follow.target)),
        state=hit.state,
        title=Mrkdwn(": *{}*").format(oneline(title)) if title else Mrkdwn(""),
    )
    return _message(text, [hit.follow])


def _dm(follow: Follow, key: str, message: dict[str, Any]) -> Delivery:
    # Posting to a user id opens the bot's DM with them.
    return Delivery(follow.team_id, follow.user_id, "notice", key, message)


def news(polls: Sequence[PollResult], now: datetime) -> list[Episode]:
    """The episodes of a cycle that are news to a follower: added by a poll that read a few
    new items (not a show's first read of its archive) and published this past week."""
    since = now - NEWS_WINDOW
    return [
        e
        for p in polls
        if len(p.added) <= NEWS_PER_POLL
        for e in p.added
        if e.published_at >= since
    ]


def episode_dms(store: Store, episodes: Sequence[Episode]) -> list[Delivery]:
    """The DMs the new ``episodes`` owe to the follows they hit."""
    follows = FollowStore(store)
    urls = {pr.url for e in episodes for pr in e.pull_requests}
    candidates = [*follows.for_prs(urls), *follows.of_words()]
    if not candidates:
        return []
    followed = {(s.team_id, s.show) for s in store.subscriptions()}
    hits = episode_hits(episodes, candidates, lambda team, show: (team, show) in followed)
    return [_dm(group[0].follow, group[0].key, episode_message(group)) for group in by_person(hits)]


def state_dms(
    settings: Settings, store: Store, changed: frozenset[PrKey]
) -> tuple[list[Delivery], list[tuple[int, str]]]:
    """The DMs PR state changes owe to the follows of those PRs, and the states to record."""
    if not changed:
        return [], []
    follows = FollowStore(store).for_prs(pr_url(repo, n) for repo, n in changed)
    if not follows:
        return [], []
    details = PrDetailsStore(store).get(list(changed))
    rules = _rules_by_repo(settings, store)
    states: dict[str, str | None] = {}
    titles: dict[str, str] = {}
    for (repo, number), d in details.items():
        url = pr_url(repo, number)
        states[url] = shown_state(d, rules.get(repo.casefold(), PrRules()))
        titles[url] = d.title
    hits = state_hits(follows, states)
    dms = [_dm(h.follow, h.key, state_message(h, titles.get(h.follow.target, ""))) for h in hits]
    return dms, [(h.follow.id, h.state) for h in hits]


def _rules_by_repo(settings: Settings, store: Store) -> dict[str, PrRules]:
    return {s.repo.casefold(): s.pr_rules() for s in all_shows(settings, store)}


def recoverable_dms(store: Store, idents: set[Ident], now: datetime) -> list[Delivery]:
    """Follow DMs a dead clock left half-sent, made again for their rows: an episode's by
    the person's follows and the week's news (no DM is about an older episode), a PR state's
    by the follow and the state its key names."""
    wanted = {i for i in idents if i[3].startswith(FOLLOW_KEY)}
    if not wanted:
        return []
    people = {(team, user) for team, user, _, _ in wanted}
    follows = FollowStore(store)
    theirs = [f for team, user in sorted(people) for f in follows.of_user(team, user)]
    episodes = [e for e in store.recent(500) if e.published_at >= now - NEWS_WINDOW]
    followed = {(s.team_id, s.show) for s in store.subscriptions()}
    hits = episode_hits(episodes, theirs, lambda team, show: (team, show) in followed)
    items = [_dm(g[0].follow, g[0].key, episode_message(g)) for g in by_person(hits)]
    for follow in theirs:
        for state in FINAL_STATES:
            hit = StateHit(follow, state)
            if (follow.team_id, follow.user_id, "notice", hit.key) in wanted:
                items.append(_dm(follow, hit.key, state_message(hit, "")))
    return [i for i in items if i.ident in wanted]


async def deliver_follows(
    settings: Settings,
    store: Store,
    deliverer: Deliverer,
    added: Sequence[Episode],
    enriched: EnrichReport | None,
) -> None:
    """After a cycle's delivery: the follow DMs its new episodes and PR changes owe. A
    failure here is logged and never costs the cycle; the ledger keeps each DM once."""
    try:
        dms = await asyncio.to_thread(episode_dms, store, added) if added else []
        told: list[tuple[int, str]] = []
        if enriched is not None and enriched.changed:
            more, told = await asyncio.to_thread(state_dms, settings, store, enriched.changed)
            dms += more
        if not dms:
            return
        report = await deliverer.deliver(dms)
        failed = set(report.failed)
        done = [t for t, dm in zip(told, dms[len(dms) - len(told) :], strict=True)
                if dm.ident not in failed]  # fmt: skip
        await asyncio.to_thread(FollowStore(store).set_states, done)
    except Exception:
        log.exception("follow messages failed")


def register(app: AsyncApp, deps: Deps) -> None:
    """A person Slack deactivates (``user_change`` with ``deleted``) loses their follows:
    nobody is left to read the messages, and the rows name them."""

    async def forget(event: dict[str, Any], context: AsyncBoltContext) -> None:
        user = event.get("user")
        if not isinstance(user, dict) or user.get("deleted") is not True:
            return
        team = str(user.get("team_id") or context.team_id or "")
        user_id = str(user.get("id") or "")
        if team and user_id:
            gone = await asyncio.to_thread(FollowStore(deps.store).forget_user, team, user_id)
            if gone:
                log.info("%s was deactivated: %d follows removed", user_id, gone)

    app.event("user_change")(forget)
