"""PR details in the poll cycle, end to end: a feed on loopback, the Slack fake, the GitHub
fake and a real store (SQLite and PostgreSQL).

A new digest waits for GitHub at most ``github_first_post_seconds``: answered in time, it is
posted complete and never edited; otherwise it is posted with what is known and, once
details arrive, the posted digest and its thread are edited in place, once; a state change
inside the refresh window edits again, outside it nothing is asked; without GitHub
configured nothing is asked.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import httpx
import pytest

from bot.delivery.deliverer import Deliverer
from bot.jobs.enrichment import make_github_http
from bot.jobs.pipeline import run_once
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.enrich.client import GitHubClient
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.delivery import rss, rss_item
from tests.githubfake import GitHubFake
from tests.slackfake import SlackFake
from tests.test_delivery_edits import CHANNEL, NOW, TEAM

REPO = "pytorch/pytorch"
# Day 3 names PRs 199603 and 199703 (tests.fixtures.delivery.rss_item).
FIRST, SECOND = 199603, 199703


def settings_for(
    url: str, fake: GitHubFake | None, *, token: bool = True, budget: float = 2.0
) -> Settings:
    github: dict[str, Any] = {"github_first_post_seconds": budget}
    if fake is not None:
        github |= {"github_api_url": fake.api_url, "github_token": fake.token if token else None}
    return Settings(
        shows=[ShowConfig(name="PyTorch", feed=url, repo=REPO)],
        schedule=ScheduleConfig(poll_minutes=15),
        team_id=TEAM,
        thread_replies=True,
        **github,
    )


def digest_text(slack: SlackFake) -> str:
    (parent,) = [m for m in slack.messages(CHANNEL) if not m.get("thread_ts")]
    return str(parent["blocks"])


def thread_text(slack: SlackFake) -> str:
    return str([m["blocks"] for m in slack.messages(CHANNEL) if m.get("thread_ts")])


@pytest.fixture
def feed(feed_server: FeedServer, store: Store) -> str:
    store.ensure_show("PyTorch", "", REPO)
    store.subscribe(TEAM, CHANNEL, "PyTorch", source="config")
    return feed_server.route("/feed.xml", rss(rss_item(3)))


def seed(github: GitHubFake) -> None:
    github.add_pr(
        REPO,
        FIRST,
        title="Fix the all-gather",
        state="open",
        author="alice",
        labels=["module: distributed"],
    )
    github.add_pr(REPO, SECOND, title="Follow up on the fix", state="closed", labels=["Merged"])


async def poll(
    settings: Settings,
    store: Store,
    deliverer: Deliverer,
    http: httpx.AsyncClient,
    at: timedelta = timedelta(0),
) -> Any:
    report = await run_once(settings, store, deliverer.outbox, http, NOW + at, deliverer=deliverer)
    assert report.errors == []
    return report


@pytest.mark.parametrize("token", [True, False])
async def test_posted_complete_when_github_answers_within_the_budget(
    store: Store,
    slack_fake: SlackFake,
    github_fake: GitHubFake,
    feed: str,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
    token: bool,
) -> None:
    seed(github_fake)
    settings = settings_for(feed, github_fake, token=token)
    await poll(settings, store, deliverer, http)
    # GitHub answered within the budget: the first post has the titles, nothing is edited.
    assert slack_fake.calls_to("chat.update") == []
    first = slack_fake.calls_to("chat.postMessage")[0].params
    assert "*Fix the all-gather* · open · distributed" in str(first["blocks"])
    text = digest_text(slack_fake)
    assert "*Follow up on the fix* · merged" in text
    assert "Fix the all-gather" in thread_text(slack_fake)
    calls = len(github_fake.calls)
    again = await poll(settings, store, deliverer, http, timedelta(minutes=15))
    assert not again.delivery.updated and len(github_fake.calls) == calls  # fresh: not asked
    assert slack_fake.calls_to("chat.update") == []


@pytest.mark.parametrize("token", [True, False])
async def test_posted_then_edited_once_with_titles(
    store: Store,
    slack_fake: SlackFake,
    github_fake: GitHubFake,
    feed: str,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
    token: bool,
) -> None:
    seed(github_fake)
    settings = settings_for(feed, github_fake, token=token, budget=0)
    await poll(settings, store, deliverer, http)
    # Posted with what was known (nothing), then edited once GitHub answered.
    assert len(slack_fake.calls_to("chat.update")) >= 1
    text = digest_text(slack_fake)
    assert "*Fix the all-gather* · open · distributed" in text
    assert "*Follow up on the fix* · merged" in text
    assert "Fix the all-gather" in thread_text(slack_fake)
    posts = len(slack_fake.calls_to("chat.postMessage"))
    updates = len(slack_fake.calls_to("chat.update"))
    calls = len(github_fake.calls)
    again = await poll(settings, store, deliverer, http, timedelta(minutes=15))
    assert not again.delivery.updated and len(github_fake.calls) == calls  # fresh: not asked
    assert len(slack_fake.calls_to("chat.postMessage")) == posts
    assert len(slack_fake.calls_to("chat.update")) == updates


async def test_posted_while_github_is_down_then_updated_once_it_is_back(
    store: Store,
    slack_fake: SlackFake,
    github_fake: GitHubFake,
    feed: str,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:
    seed(github_fake)
    github_fake.fail_next(status=503, times=1000)
    settings = settings_for(feed, github_fake)
    first = await poll(settings, store, deliverer, http)
    assert len(first.delivery.posted) == 1 and not first.delivery.updated
    assert "Fix the all-gather" not in digest_text(slack_fake)
    posts = len(slack_fake.calls_to("chat.postMessage"))
    github_fake.reset()  # back
    back = await poll(settings, store, deliverer, http, timedelta(minutes=15))
    assert back.delivery.updated == [(TEAM, CHANNEL, "episode", "PyTorch:pytorch-2026-10-03")]
    assert "*Fix the all-gather* · open" in digest_text(slack_fake)
    edits = len(slack_fake.calls_to("chat.update"))
    later = await poll(settings, store, deliverer, http, timedelta(minutes=30))
    assert not later.delivery.updated and len(slack_fake.calls_to("chat.update")) == edits
    assert len(slack_fake.calls_to("chat.postMessage")) == posts  # edited, never re-posted


async def test_a_state_change_inside_the_window_edits_outside_it_does_not(
    store: Store,
    slack_fake: SlackFake,
    github_fake: GitHubFake,
    feed: str,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:
    seed(github_fake)
    settings = settings_for(feed, github_fake)
    await poll(settings, store, deliverer, http)
    github_fake.update_pr(REPO, FIRST, state="closed", labels=["Merged", "module: distributed"])
    inside = await poll(settings, store, deliverer, http, timedelta(hours=2))
    assert len(inside.delivery.updated) == 1
    assert "*Fix the all-gather* · merged" in digest_text(slack_fake)

    github_fake.update_pr(REPO, SECOND, labels=["Merged", "Reverted"])
    calls = len(github_fake.calls)
    outside = await poll(settings, store, deliverer, http, timedelta(days=30))
    assert not outside.delivery.updated and len(github_fake.calls) == calls
    assert "reverted" not in digest_text(slack_fake)


async def test_without_github_configured_nothing_is_asked(
    store: Store,
    slack_fake: SlackFake,
    github_fake: GitHubFake,
    feed: str,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:
    seed(github_fake)
    await poll(settings_for(feed, None), store, deliverer, http)
    assert github_fake.calls == []
    assert "Fix the all-gather" not in digest_text(slack_fake)
    assert "lands a fix" in digest_text(slack_fake)


async def test_the_digest_does_not_wait_for_a_slow_github(
    store: Store,
    slack_fake: SlackFake,
    github_fake: GitHubFake,
    feed: str,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:
    seed(github_fake)
    github_fake.fail_next(delay=3.0, times=10)
    settings = settings_for(feed, github_fake, budget=0.2)
    cycle = asyncio.create_task(poll(settings, store, deliverer, http))
    # Posted while GitHub has not answered yet: the GitHub fake still holds the query.
    while not slack_fake.calls_to("chat.postMessage"):
        assert not cycle.done()
        await asyncio.sleep(0.01)
    assert github_fake.calls == []
    await cycle
    assert "*Fix the all-gather* · open" in digest_text(slack_fake)


async def test_one_shared_client_never_bursts_and_remembers_a_limit(
    store: Store,
    github_fake: GitHubFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
) -> None:
    """The clock's poll jobs share one client: two shows polled at once ask GitHub one call
    at a time, and a long Retry-After stops later cycles from calling before it ends."""
    url = feed_server.route("/feed.xml", rss(rss_item(3)))
    shows = [
        ShowConfig(name="PyTorch", feed=url, repo=REPO),
        ShowConfig(name="Vision", feed=url, repo="pytorch/vision"),
    ]
    settings = Settings(shows=shows, team_id=TEAM, github_api_url=github_fake.api_url)
    for repo in (REPO, "pytorch/vision"):
        for number in (FIRST, SECOND):
            github_fake.add_pr(repo, number, title=f"{repo} {number}")
    github_fake.latency = 0.05
    async with make_github_http() as github_http:
        client = GitHubClient(github_http, github_fake.api_url)

        async def cycle(show: ShowConfig, at: timedelta) -> Any:
            return await run_once(
                settings,
                store,
                deliverer.outbox,
                http,
                NOW + at,
                deliverer=deliverer,
                shows=[show],
                github=client,
            )

        await asyncio.gather(*(cycle(s, timedelta(0)) for s in shows))
        assert len(github_fake.calls) == 4 and github_fake.max_in_flight == 1
        github_fake.fail_next("rest", status=429, retry_after=3600)
        await cycle(shows[0], timedelta(hours=2))
        assert len(github_fake.calls) == 5  # refused: the client now waits out the hour
        await asyncio.gather(*(cycle(s, timedelta(hours=3)) for s in shows))
        assert len(github_fake.calls) == 5
