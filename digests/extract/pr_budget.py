"""PR references per feed poll: a bound on the whole poll, not only on each item.

``digests.extract.prs`` keeps at most ``MAX_PULL_REQUESTS`` per episode; a feed of thousands of
items each naming hundreds still adds up to hundreds of thousands of rows in one poll (a
19.9 MB feed: 4,327 items × 200 = 865,400). The newest episodes keep theirs first; the
oldest give theirs up, in feed order among equals. Pure: episodes in, episodes out.
"""

from __future__ import annotations

from collections.abc import Sequence

from digests.models import Episode

MAX_POLL_PULL_REQUESTS = 10_000


def within_poll_budget(
    episodes: Sequence[Episode], limit: int = MAX_POLL_PULL_REQUESTS
) -> list[Episode]:
    """``episodes`` in their order, with at most ``limit`` PR references among them."""
    if sum(len(e.pull_requests) for e in episodes) <= limit:
        return list(episodes)
    kept = list(episodes)
    newest_first = sorted(range(len(kept)), key=lambda i: kept[i].published_at, reverse=True)
    left = limit
    for index in newest_first:
        prs = kept[index].pull_requests
        if len(prs) > left:
            kept[index] = kept[index].model_copy(update={"pull_requests": prs[:left]})
        left -= len(kept[index].pull_requests)
    return kept
