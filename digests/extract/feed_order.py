"""Dates for a feed's undated items, from their place among its dated ones. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from digests.models import Episode
from digests.types import is_undated


def feed_order_dates(
    episodes: Sequence[Episode], *, newest_at: datetime | None = None
) -> dict[int, datetime]:
    """Dates for the undated episodes of a feed, from their place among the dated ones.

    ``episodes`` in feed order (index → date; dated items have no entry). An undated item
    between two dated ones gets the moment halfway between them; one older than every
    dated item, a microsecond per place below the oldest. One newer than every dated item
    is the newest news: ``newest_at`` (when the bot first saw it) when given, a microsecond
    per place ahead otherwise. Feeds list the newest first unless their dates say
    otherwise. A feed with no dates at all gets none.
    """
    dated = [(i, e.published_at) for i, e in enumerate(episodes) if not is_undated(e.published_at)]
    if not dated:
        return {}
    step = timedelta(microseconds=1)
    newest_first = len(dated) < 2 or dated[0][1] >= dated[-1][1]
    out: dict[int, datetime] = {}
    at = 0
    for i, episode in enumerate(episodes):
        if not is_undated(episode.published_at):
            continue
        while at < len(dated) and dated[at][0] < i:
            at += 1
        before = dated[at - 1] if at > 0 else None
        after = dated[at] if at < len(dated) else None
        if before and after:
            out[i] = before[1] + (after[1] - before[1]) / 2
            continue
        edge = after or before
        assert edge is not None
        distance = abs(edge[0] - i)
        newer = (after is not None) == newest_first
        if not newer:
            out[i] = edge[1] - step * distance
        elif newest_at is not None:
            rank = i if newest_first else len(episodes) - 1 - i  # 0: the newest
            out[i] = newest_at - step * rank
        else:
            out[i] = edge[1] + step * distance
    return out
