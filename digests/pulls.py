"""Pull requests as a reader should see them: the state word, the area, which few are key,
and when stored details are due a refresh. Pure: data in, data out (no HTTP, no SQL).

The rules differ per repository (pytorch/pytorch lands by bot: its PRs end *closed* with a
``Merged`` label), so they come in as :class:`PrRules`, built from each show's settings.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from digests.models import Episode, PrInfo, PullRequestRef
from digests.types import PrDetails, PrKey

ShownState = Literal["open", "draft", "merged", "closed", "reverted"]

# Open PRs change while their episode is news; after that nobody rereads the digest.
OPEN_WINDOW = timedelta(days=14)
# Settled (closed, merged) PRs are watched a little longer: a revert comes days later.
SETTLED_WINDOW = OPEN_WINDOW + timedelta(days=3)
# However often the bot polls, one PR is asked about at most this often.
MIN_REFRESH_INTERVAL = timedelta(hours=1)
KEY_PRS = 5

_PULL_URL = re.compile(r"^https?://github\.com/([\w.-]+/[\w.-]+)/pull/\d+")
# Labels whose value names the area, most specific first.
_AREA_PREFIXES = ("release notes:", "module:")
# Tiers: what GitHub says decides first. Unknown (not fetched yet) ranks with the live ones,
# so before details arrive the order is the episode's own.
_TIERS: Mapping[ShownState | None, int] = {
    "merged": 0,
    "reverted": 0,
    "open": 0,
    "draft": 0,
    None: 0,
    "closed": 1,
}
_MISSING_TIER = 2


def _fold(labels: Iterable[str]) -> frozenset[str]:
    # GitHub treats label names case-insensitively (no two labels differ only by case).
    return frozenset(label.casefold() for label in labels)


@dataclass(frozen=True)
class PrRules:
    """One show's reading of its repository's labels."""

    merged_labels: frozenset[str] = frozenset()
    reverted_labels: frozenset[str] = frozenset()
    # label (casefolded) → weight added to a PR's importance; negative pushes it down.
    label_weights: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        merged: Iterable[str] = (),
        reverted: Iterable[str] = (),
        weights: Mapping[str, int] | None = None,
    ) -> PrRules:
        return cls(
            merged_labels=_fold(merged),
            reverted_labels=_fold(reverted),
            label_weights={k.casefold(): v for k, v in (weights or {}).items()},
        )


def shown_state(details: PrDetails | None, rules: PrRules) -> ShownState | None:
    """The word a reader sees; None when unknown (not fetched, or no such PR).

    A revert label wins over everything: the revert is the news, even when the PR was
    reopened for a re-land. A merge label turns *closed* into *merged* (bot-landed repos).
    """
    if details is None or details.missing:
        return None
    labels = _fold(details.labels)
    if labels & rules.reverted_labels:
        return "reverted"
    if details.state == "merged":
        return "merged"
    if details.state == "open":
        return "draft" if details.draft else "open"
    return "merged" if labels & rules.merged_labels else "closed"


def area(labels: Iterable[str]) -> str | None:
    """The area from a ``release notes: <area>`` label, else a ``module: <area>`` one."""
    labels = tuple(labels)
    for prefix in _AREA_PREFIXES:
        for label in labels:
            if label.casefold().startswith(prefix):
                value = label[len(prefix) :].strip()
                if value:
                    return value
    return None


@dataclass(frozen=True)
class Mention:
    """How an episode names one PR: ``position`` 0 is the first PR it names."""

    number: int
    position: int
    count: int = 1


def mentions(episode: Episode) -> list[Mention]:
    """The episode's PRs in order of first mention, each with how often the text names it."""
    text = " ".join((episode.title, episode.summary, episode.transcript))
    found: list[Mention] = []
    for position, pr in enumerate(episode.pull_requests):
        times = len(re.findall(rf"(?<![\w/]){pr.number}(?!\w)", text))
        found.append(Mention(pr.number, position, max(times, 1)))
    return found


def importance(
    mention: Mention, details: PrDetails | None, rules: PrRules
) -> tuple[int, int, float, int]:
    """A sort key, smallest first: state tier, then labels, then how early and how often.

    Being named first is worth one more mention, the second half of one, and so on.
    """
    if details is not None and details.missing:
        tier = _MISSING_TIER
    else:
        tier = _TIERS[shown_state(details, rules)]
    weight = label_weight(details, rules)
    prominence = mention.count + 1 / (1 + mention.position)
    return (tier, -weight, -prominence, mention.position)


def label_weight(details: PrDetails | None, rules: PrRules) -> int:
    if details is None:
        return 0
    return sum(rules.label_weights.get(label, 0) for label in _fold(details.labels))


def state_tier(state: str | None) -> int:
    """0 for merged, reverted, open, draft and unknown; 1 for closed (see ``importance``)."""
    return 1 if state == "closed" else 0


def rank(found: Sequence[Mention], details: Mapping[int, PrDetails], rules: PrRules) -> list[int]:
    """PR numbers, most important first (see :func:`importance`)."""
    ordered = sorted(found, key=lambda m: importance(m, details.get(m.number), rules))
    return [m.number for m in ordered]


def key_prs(
    episode: Episode,
    details: Mapping[int, PrDetails],
    rules: PrRules,
    limit: int = KEY_PRS,
) -> list[PullRequestRef]:
    """The episode's few most important PRs, ranked."""
    by_number = {pr.number: pr for pr in episode.pull_requests}
    return [by_number[n] for n in rank(mentions(episode), details, rules)[:limit]]


def pr_infos(
    episode: Episode, details: Mapping[PrKey, PrDetails], repo: str, rules: PrRules
) -> tuple[PrInfo, ...]:
    """The episode's PRs, in its order, each with what is known of it and its rank."""
    known = {
        pr.number: details[key]
        for pr in episode.pull_requests
        if (key := pr_key(pr, repo)) in details
    }
    order = {n: i for i, n in enumerate(rank(mentions(episode), known, rules))}
    infos = []
    for pr in episode.pull_requests:
        d = known.get(pr.number)
        state = shown_state(d, rules)
        infos.append(
            PrInfo(
                number=pr.number,
                title=d.title if d is not None and not d.missing else "",
                state=state,
                area=area(d.labels) if d is not None else None,
                author=d.author if d is not None else None,
                missing=d is not None and d.missing,
                rank=order[pr.number],
                weight=label_weight(d, rules),
                merged_at=d.merged_at if d is not None and state == "merged" else None,
            )
        )
    return tuple(infos)


def with_details(
    episode: Episode, details: Mapping[PrKey, PrDetails], repo: str, rules: PrRules
) -> Episode:
    """The episode carrying its PRs' details (``pr_info``); unchanged when none is known,
    so a bot without GitHub renders and hashes exactly as before."""
    if not any(pr_key(pr, repo) in details for pr in episode.pull_requests):
        return episode
    return episode.model_copy(update={"pr_info": pr_infos(episode, details, repo, rules)})


def ranked_prs(episode: Episode) -> list[tuple[PullRequestRef, PrInfo | None]]:
    """The episode's PRs, most important first when details are attached."""
    pairs = with_info(episode.pull_requests, episode)
    return sorted(pairs, key=lambda p: p[1].rank if p[1] is not None else 0)


def with_info(
    prs: Iterable[PullRequestRef], episode: Episode
) -> list[tuple[PullRequestRef, PrInfo | None]]:
    info = {i.number: i for i in episode.pr_info}
    return [(pr, info.get(pr.number)) for pr in prs]


def refresh_due(details: PrDetails | None, newest_episode_at: datetime, now: datetime) -> bool:
    """Whether to ask GitHub about a PR now. ``newest_episode_at``: when the newest episode
    naming it was published (a PR named again is news again).

    Never fetched: yes. No such PR: no (remembered). Otherwise at most hourly, open and
    draft ones while that episode is under 14 days old, settled ones 3 days longer.
    """
    if details is None or details.fetched_at is None:
        return True
    if details.missing or now - details.fetched_at < MIN_REFRESH_INTERVAL:
        return False
    age = now - newest_episode_at
    window = OPEN_WINDOW if details.state == "open" else SETTLED_WINDOW
    return age < window


def pr_key(pr: PullRequestRef, repo: str) -> PrKey:
    """The PR's (repo, number): the repository in its GitHub link, else the show's."""
    match = _PULL_URL.match(pr.url)
    return (match[1], pr.number) if match else (repo, pr.number)


def named_prs(episodes: Iterable[tuple[Episode, str]]) -> dict[PrKey, datetime]:
    """Every PR the episodes name (episode, show's repo), with the newest naming episode's
    publication time (what :func:`refresh_due` measures the window from)."""
    newest: dict[PrKey, datetime] = {}
    for episode, repo in episodes:
        for pr in episode.pull_requests:
            key = pr_key(pr, repo)
            if key not in newest or episode.published_at > newest[key]:
                newest[key] = episode.published_at
    return newest


def due_for_refresh(
    named: Mapping[PrKey, datetime], stored: Mapping[PrKey, PrDetails], now: datetime
) -> list[PrKey]:
    """The PRs to ask GitHub about now, most urgent first: never fetched before refreshes,
    then those of the newest episodes (a budget that runs out spends itself on news)."""
    due = [key for key, when in named.items() if refresh_due(stored.get(key), when, now)]
    return sorted(due, key=lambda key: (key in stored, -named[key].timestamp(), key))


def shown_fields(details: PrDetails | None) -> tuple[object, ...]:
    """What a rendered line depends on: a change here means posted messages are stale."""
    if details is None:
        return ()
    return (
        details.title,
        details.state,
        details.draft,
        details.author,
        details.labels,
        details.missing,
    )
