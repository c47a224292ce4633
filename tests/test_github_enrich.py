"""The enrich phase against the GitHub fake and a real store (SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from digests.enrich.client import GitHubClient
from digests.enrich.details import enrich
from digests.models import Episode, PullRequestRef
from digests.store import Store
from digests.store.pr_details import PrDetailsStore
from tests.githubfake import GitHubFake

NOW = datetime(2026, 10, 20, 12, 0, tzinfo=UTC)
REPO = "pytorch/pytorch"


def episode(guid: str, numbers: list[int], age: timedelta = timedelta(0)) -> Episode:
    return Episode(
        guid=guid,
        show="PyTorch",
        title="PyTorch: news",
        headline="news",
        published_at=NOW - age,
        pull_requests=tuple(
            PullRequestRef(n, f"https://github.com/{REPO}/pull/{n}") for n in numbers
        ),
    )


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=2.0) as client:
        yield client


@pytest.mark.parametrize("token", [True, False])
async def test_fetches_once_then_only_when_due(
    store: Store, github_fake: GitHubFake, http: httpx.AsyncClient, token: bool
) -> None:
    for n in (1, 2, 3):
        github_fake.add_pr(REPO, n, title=f"T{n}", state="open")
    client = GitHubClient(http, github_fake.api_url, github_fake.token if token else None)
    prs = PrDetailsStore(store)
    episodes = [(episode("a", [1, 2]), REPO), (episode("b", [2, 3, 4]), REPO)]
    first = await enrich(client, prs, episodes, NOW)
    assert (first.named, first.asked, first.stopped) == (4, 4, None)
    assert first.changed == {(REPO, n) for n in (1, 2, 3, 4)}
    assert prs.get([(REPO, 4)])[(REPO, 4)].missing
    calls = len(github_fake.calls)
    again = await enrich(client, prs, episodes, NOW + timedelta(minutes=30))
    assert again.asked == 0 and len(github_fake.calls) == calls
    github_fake.update_pr(REPO, 2, state="merged")
    later = await enrich(client, prs, episodes, NOW + timedelta(hours=2))
    assert later.asked == 3  # the missing one is not asked again
    assert later.changed == {(REPO, 2)}
    assert prs.get([(REPO, 2)])[(REPO, 2)].state == "merged"


async def test_github_down_stores_nothing_and_tries_later(
    store: Store, github_fake: GitHubFake, http: httpx.AsyncClient
) -> None:
    github_fake.add_pr(REPO, 1, title="T1")
    client = GitHubClient(http, github_fake.api_url, github_fake.token, backoff=0.01)
    prs = PrDetailsStore(store)
    github_fake.fail_next(status=503, times=3)
    down = await enrich(client, prs, [(episode("a", [1]), REPO)], NOW)
    assert down.stopped is not None and prs.get([(REPO, 1)]) == {}
    back = await enrich(client, prs, [(episode("a", [1]), REPO)], NOW + timedelta(minutes=1))
    assert back.changed == {(REPO, 1)} and prs.get([(REPO, 1)])[(REPO, 1)].title == "T1"


async def test_old_episodes_are_not_refreshed(
    store: Store, github_fake: GitHubFake, http: httpx.AsyncClient
) -> None:
    github_fake.add_pr(REPO, 1, title="T1")
    client = GitHubClient(http, github_fake.api_url, github_fake.token)
    prs = PrDetailsStore(store)
    old = [(episode("a", [1], age=timedelta(days=20)), REPO)]
    assert (await enrich(client, prs, old, NOW)).asked == 1  # never fetched: asked once
    assert (await enrich(client, prs, old, NOW + timedelta(days=1))).asked == 0
