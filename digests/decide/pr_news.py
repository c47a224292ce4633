"""PR news for a posted digest's thread (``subscribe … pr-updates on``). Pure: the episode
with its PR details in, the news out.

A key PR of the digest (the ones it shows, most important first) is news once it settles
after the episode: merged or closed after the episode was published (GitHub's merge or
close time), or reverted. News is grouped by the day it happened, each day one thread
reply, so the PRs one refresh learnt arrive together and a later day's arrive as a new
reply; every part is derived again from the PRs' state, so it is posted once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date

from digests.models import Episode, PullRequestRef
from digests.pulls import KEY_PRS, ranked_prs
from digests.types import PrDetails, PrKey

__all__ = ["PrNews", "PrNewsDay", "news_hash", "pr_news"]


@dataclass(frozen=True, slots=True)
class PrNews:
    """One key PR that settled: its state, and how many days after the episode (None when
    GitHub gives no time, as for a revert)."""

    pr: PullRequestRef
    state: str
    days_after: int | None


@dataclass(frozen=True, slots=True)
class PrNewsDay:
    """The news of one day (None: of no known day), one thread reply."""

    day: date | None
    news: tuple[PrNews, ...]


def pr_news(
    episode: Episode, details: Mapping[PrKey, PrDetails], keys: Mapping[int, PrKey]
) -> tuple[PrNewsDay, ...]:
    """The news of ``episode``'s key PRs; ``keys``: each PR number's (repo, number)."""
    found: list[tuple[date | None, PrNews]] = []
    for pr, info in ranked_prs(episode)[:KEY_PRS]:
        if info is None or info.state not in ("merged", "closed", "reverted"):
            continue
        known = details.get(keys.get(pr.number, ("", pr.number)))
        when = known.merged_at if known is not None else None
        if info.state != "reverted" and (when is None or when <= episode.published_at):
            continue  # settled before the episode: the digest said so from the start
        after = (when - episode.published_at).days if when is not None else None
        found.append((when.date() if when is not None else None, PrNews(pr, info.state, after)))
    by_day: dict[date | None, list[PrNews]] = {}
    for day, news in sorted(found, key=lambda f: (f[0] is None, f[0] or date.min)):
        by_day.setdefault(day, []).append(news)
    return tuple(PrNewsDay(day, tuple(news)) for day, news in by_day.items())


def news_hash(content_hash: str, days: Sequence[PrNewsDay]) -> str:
    """A channel's content hash of an episode whose thread carries ``days`` of news: the
    episode's own when there is none, so a channel without news hashes as before."""
    if not days:
        return content_hash
    return hashlib.sha256((content_hash + repr(tuple(days))).encode()).hexdigest()
