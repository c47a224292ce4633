"""Where in the episode each PR is named: a timed transcript's cues → the first time each
PR is named. Pure: cues in, records out.

The cues are read as one text, so a mention split over two cues ("PRs 199720," / "199721
and 199726") is found as in the transcript's text; a mention is timed by the cue it
starts in.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from digests.extract.prs import mention_positions
from digests.models import Cue, PrTime

__all__ = ["format_offset", "pr_times"]


def pr_times(cues: Sequence[Cue], repo: str) -> tuple[PrTime, ...]:
    """Each PR the cues name, with the start of the cue it is first named in (whole
    seconds), in order of first mention."""
    if not cues:
        return ()
    starts: list[int] = []
    parts: list[str] = []
    offset = 0
    for cue in cues:
        starts.append(offset)
        parts.append(cue.text)
        offset += len(cue.text) + 1
    times: dict[str, int] = {}
    for pos, url in mention_positions(" ".join(parts), repo):
        if url not in times:
            times[url] = int(cues[bisect_right(starts, pos) - 1].start)
    return tuple(PrTime(url, at) for url, at in times.items())


def format_offset(seconds: int) -> str:
    """``83`` → ``1:23``; ``3723`` → ``1:02:03``."""
    hours, rest = divmod(max(0, int(seconds)), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
