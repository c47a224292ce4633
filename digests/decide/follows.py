"""Who is told of what by direct message (``/episodes follow``). Pure: follows, episodes and
PR states in; hits out, each under the ledger key that makes it once.

A new episode hits a PR follow when it names that PR (its URL), and a words follow when
the follow's filter lets it through (``digests.filters``: the subscription filter syntax),
but only where the person's workspace follows the episode's show. A PR follow is hit
again when the PR's state becomes merged, closed or reverted and differs from the one last
told (or known when it was followed): once per change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from digests.decide.deliveries import episode_key
from digests.filters import Filter, FilterSyntaxError
from digests.models import Episode, PullRequestRef, guid_key
from digests.types import Follow, FollowKind

__all__ = [
    "FINAL_STATES",
    "FOLLOW_KEY",
    "EpisodeHit",
    "StateHit",
    "by_person",
    "episode_hits",
    "pr_url",
    "state_hits",
    "words_filter",
]

FINAL_STATES = frozenset({"merged", "closed", "reverted"})
FOLLOW_KEY = "follow:"  # every follow DM's ledger key starts so


@dataclass(frozen=True)
class EpisodeHit:
    """A new episode a follow asked for; ``pr``: the PR it names (a PR follow)."""

    follow: Follow
    episode: Episode
    pr: PullRequestRef | None = None

    @property
    def key(self) -> str:
        """One DM per person and episode, however many of their follows it hits (the ledger
        row names the person's team and DM channel beside this key)."""
        return f"{FOLLOW_KEY}{guid_key(episode_key(self.episode.show, self.episode.guid))}"


@dataclass(frozen=True)
class StateHit:
    """A followed PR that became ``state``."""

    follow: Follow
    state: str

    @property
    def key(self) -> str:
        return f"{FOLLOW_KEY}{self.follow.id}:state:{self.state}"


def pr_url(repo: str, number: int) -> str:
    """A PR's URL, as follows and ``PullRequestRef.url`` name it."""
    return f"https://github.com/{repo}/pull/{number}"


def words_filter(follow: Follow) -> Filter | None:
    """The filter a words follow stands for (None if its terms no longer parse)."""
    try:
        return Filter.parse(follow.target)
    except FilterSyntaxError:
        return None


def episode_hits(
    episodes: Sequence[Episode],
    follows: Iterable[Follow],
    sees: Callable[[str, str], bool],
) -> list[EpisodeHit]:
    """Each (follow, new episode) to tell of, once per pair; ``sees(team, show)``: whether
    the workspace follows the show."""
    hits: dict[tuple[int, str], EpisodeHit] = {}
    filters: dict[int, Filter | None] = {}
    for follow in follows:
        for episode in episodes:
            if (follow.id, episode.guid) in hits or not sees(follow.team_id, episode.show):
                continue
            if follow.kind is FollowKind.PR:
                pr = next((p for p in episode.pull_requests if p.url == follow.target), None)
                if pr is not None:
                    hits[(follow.id, episode.guid)] = EpisodeHit(follow, episode, pr)
                continue
            if follow.id not in filters:
                filters[follow.id] = words_filter(follow)
            wanted = filters[follow.id]
            if wanted is not None and not wanted.empty and wanted.matches(episode):
                hits[(follow.id, episode.guid)] = EpisodeHit(follow, episode)
    return list(hits.values())


def by_person(hits: Sequence[EpisodeHit]) -> list[list[EpisodeHit]]:
    """The hits of each (person, episode), in the order first met: one DM each."""
    groups: dict[tuple[str, str, str], list[EpisodeHit]] = {}
    for hit in hits:
        groups.setdefault((hit.follow.team_id, hit.follow.user_id, hit.key), []).append(hit)
    return list(groups.values())


def state_hits(follows: Iterable[Follow], states: Mapping[str, str | None]) -> list[StateHit]:
    """PR follows whose PR (by URL in ``states``) is now in a final state not told yet."""
    return [
        StateHit(f, state)
        for f in follows
        if f.kind is FollowKind.PR
        and (state := states.get(f.target)) in FINAL_STATES
        and state != f.last_state
    ]
