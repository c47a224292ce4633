"""The GitHub client against the GitHub fake (real HTTP on 127.0.0.1): GraphQL batches with a
token, REST with ETags without one; rate limits, retries, missing PRs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import httpx
import pytest

from digests.enrich.client import GitHubClient
from digests.enrich.wire import graphql_url
from digests.types import PrDetails
from tests.githubfake import GitHubFake

NOW = datetime(2026, 10, 6, 12, 0, tzinfo=UTC)
REPOS = ("pytorch/pytorch", "pytorch/vision", "pytorch/audio")


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    # Generous: a loaded machine can take seconds to answer 100 PRs in one query, and a
    # timeout would be retried, changing the call counts these tests assert.
    async with httpx.AsyncClient(timeout=httpx.Timeout(10.0)) as client:
        yield client


def seed(fake: GitHubFake, count: int, repos: tuple[str, ...] = REPOS) -> list[tuple[str, int]]:
    keys = []
    for i in range(count):
        repo = repos[i % len(repos)]
        number = 100_000 + i
        fake.add_pr(repo, number, title=f"Fix {number}", labels=["module: nn"], author="dev")
        keys.append((repo, number))
    return keys


def client(
    fake: GitHubFake, http: httpx.AsyncClient, *, token: bool, **kwargs: float
) -> GitHubClient:
    return GitHubClient(
        http, fake.api_url, fake.token if token else None, backoff=0.01, max_wait=2.0, **kwargs
    )


async def test_graphql_batches_many_prs_across_repositories(
    github_fake: GitHubFake, http: httpx.AsyncClient
) -> None:
    keys = seed(github_fake, 250)
    report = await client(github_fake, http, token=True).fetch(keys, {}, NOW)
    assert report.stopped is None
    assert report.calls == 3 == len(github_fake.calls_of("graphql"))
    assert all(len(c.keys) <= 100 for c in github_fake.calls)
    got = {d.key: d for d in report.details}
    assert set(got) == set(keys)
    first = got[keys[0]]
    assert (first.title, first.state, first.author, first.labels) == (
        "Fix 100000",
        "open",
        "dev",
        ("module: nn",),
    )
    assert first.fetched_at == NOW and not first.missing


async def test_graphql_states_and_missing(github_fake: GitHubFake, http: httpx.AsyncClient) -> None:
    github_fake.add_pr(
        "pytorch/pytorch", 1, title="Landed", state="merged", merged_at="2026-10-05T10:00:00Z"
    )
    github_fake.add_pr(
        "pytorch/pytorch",
        2,
        title="Bot-landed",
        state="closed",
        labels=["Merged", "release notes: distributed"],
    )
    github_fake.add_pr("pytorch/pytorch", 3, title="WIP", draft=True, author=None)
    wanted = [("pytorch/pytorch", n) for n in (1, 2, 3, 4)] + [("nobody/nothing", 5)]
    report = await client(github_fake, http, token=True).fetch(wanted, {}, NOW)
    got = {d.number: d for d in report.details}
    assert got[1].state == "merged" and got[1].merged_at == datetime(2026, 10, 5, 10, tzinfo=UTC)
    assert got[2].state == "closed" and got[2].labels == ("Merged", "release notes: distributed")
    assert got[3].draft and got[3].author is None
    assert got[4].missing and got[5].missing
    assert report.calls == 1


async def test_rest_without_token_revalidates_with_etags(
    github_fake: GitHubFake, http: httpx.AsyncClient
) -> None:
    keys = seed(github_fake, 6)
    rest = client(github_fake, http, token=False)
    first = await rest.fetch(keys, {}, NOW)
    assert first.calls == 6 and all(d.etag for d in first.details)
    assert github_fake.remaining("rest") == 54
    known = {d.key: d for d in first.details}
    github_fake.update_pr(*keys[0], title="Renamed")
    again = await rest.fetch(keys, known, NOW)
    assert again.not_modified == 5
    assert [c.status for c in github_fake.calls_of("rest")[6:]] == [200, 304, 304, 304, 304, 304]
    assert {d.key: d.title for d in again.details}[keys[0]] == "Renamed"
    assert github_fake.remaining("rest") == 53  # the 304s cost nothing
    assert github_fake.max_in_flight == 1


async def test_rest_404_is_missing(github_fake: GitHubFake, http: httpx.AsyncClient) -> None:
    report = await client(github_fake, http, token=False).fetch([("a/b", 7)], {}, NOW)
    assert report.details == [PrDetails("a/b", 7, fetched_at=NOW, missing=True)]


@pytest.mark.parametrize("token", [True, False])
async def test_5xx_is_retried_with_backoff(
    github_fake: GitHubFake, http: httpx.AsyncClient, token: bool
) -> None:
    keys = seed(github_fake, 1)
    github_fake.fail_next(status=502, times=2)
    report = await client(github_fake, http, token=token).fetch(keys, {}, NOW)
    assert report.stopped is None and report.calls == 3
    assert [d.key for d in report.details] == keys


async def test_github_down_stops_after_bounded_retries(
    github_fake: GitHubFake, http: httpx.AsyncClient
) -> None:
    keys = seed(github_fake, 5)
    github_fake.fail_next(status=500, times=100)
    report = await client(github_fake, http, token=False).fetch(keys, {}, NOW)
    assert report.stopped == "GitHub unavailable: HTTP 500"
    assert report.calls == 3 and report.details == []


async def test_timeouts_are_retried_then_given_up(github_fake: GitHubFake) -> None:
    keys = seed(github_fake, 2)
    github_fake.fail_next(delay=1.0, times=10)
    async with httpx.AsyncClient(timeout=httpx.Timeout(0.2)) as http:
        report = await client(github_fake, http, token=True).fetch(keys, {}, NOW)
    assert report.stopped == "GitHub unavailable: timed out"
    assert report.calls == 3


@pytest.mark.parametrize(("status", "token"), [(403, True), (429, False), (403, False)])
async def test_secondary_limit_waits_retry_after(
    github_fake: GitHubFake, http: httpx.AsyncClient, status: int, token: bool
) -> None:
    keys = seed(github_fake, 2)
    github_fake.fail_next(status=status, retry_after=0.2)
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    report = await client(github_fake, http, token=token, sleep=sleep).fetch(keys, {}, NOW)  # type: ignore[arg-type]
    assert report.stopped is None and {d.key for d in report.details} == set(keys)
    assert waits == [0.2]


async def test_long_retry_after_blocks_later_fetches(
    github_fake: GitHubFake, http: httpx.AsyncClient
) -> None:
    keys = seed(github_fake, 3)
    github_fake.fail_next(status=429, retry_after=600)
    rest = client(github_fake, http, token=False)
    report = await rest.fetch(keys, {}, NOW)
    assert report.stopped is not None and report.stopped.startswith("GitHub rate limit")
    later = await rest.fetch(keys, {}, NOW)
    assert later.calls == 0 and later.stopped is not None
    assert len(github_fake.calls) == 1


async def test_rest_budget_is_never_exceeded(
    github_fake: GitHubFake, http: httpx.AsyncClient
) -> None:
    github_fake.rest_limit = 5
    keys = seed(github_fake, 8)
    rest = client(github_fake, http, token=False)
    report = await rest.fetch(keys, {}, NOW)
    assert len(report.details) == 5 and report.calls == 5
    assert report.stopped is not None
    assert [c.status for c in github_fake.calls] == [200] * 5
    await rest.fetch(keys[5:], {}, NOW)
    assert len(github_fake.calls) == 5  # blocked until the reset: no refused call


async def test_graphql_rate_limited_stops_and_blocks(
    github_fake: GitHubFake, http: httpx.AsyncClient
) -> None:
    github_fake.graphql_limit = 1
    keys = seed(github_fake, 150)
    gql = client(github_fake, http, token=True)
    report = await gql.fetch(keys, {}, NOW)
    assert len(report.details) == 100 and report.calls == 1  # the budget ran out: no refused call
    assert report.stopped is not None
    assert (await gql.fetch(keys[100:], {}, NOW)).calls == 0


async def test_concurrent_fetches_do_not_burst(
    github_fake: GitHubFake, http: httpx.AsyncClient
) -> None:
    github_fake.latency = 0.02
    keys = seed(github_fake, 6)
    rest = client(github_fake, http, token=False)
    await asyncio.gather(rest.fetch(keys[:3], {}, NOW), rest.fetch(keys[3:], {}, NOW))
    assert github_fake.max_in_flight == 1 and len(github_fake.calls) == 6


async def test_enterprise_server_urls(github_fake: GitHubFake, http: httpx.AsyncClient) -> None:
    assert graphql_url("https://ghe.example/api/v3") == "https://ghe.example/api/graphql"
    assert graphql_url("https://api.github.com/") == "https://api.github.com/graphql"
    keys = seed(github_fake, 1)
    ghes = GitHubClient(http, github_fake.api_url + "/api/v3", github_fake.token)
    assert len((await ghes.fetch(keys, {}, NOW)).details) == 1
    assert github_fake.calls[0].path == "/api/graphql"
    rest = GitHubClient(http, github_fake.api_url + "/api/v3")
    assert len((await rest.fetch(keys, {}, NOW)).details) == 1


@pytest.mark.parametrize("token", [True, False])
async def test_a_closed_prs_close_time_stands_in_for_its_merge(
    github_fake: GitHubFake, http: httpx.AsyncClient, token: bool
) -> None:
    github_fake.add_pr(
        "pytorch/pytorch", 1, state="closed", labels=["Merged"], closed_at="2026-10-06T09:00:00Z"
    )
    github_fake.add_pr("pytorch/pytorch", 2, state="open", closed_at=None)
    keys = [("pytorch/pytorch", 1), ("pytorch/pytorch", 2)]
    report = await client(github_fake, http, token=token).fetch(keys, {}, NOW)
    got = {d.number: d.merged_at for d in report.details}
    assert got == {1: datetime(2026, 10, 6, 9, tzinfo=UTC), 2: None}
