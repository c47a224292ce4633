"""PR news in a digest's thread (``subscribe … pr-updates on``): when a key PR of a posted
digest is merged, closed or reverted after the episode, a reply in that digest's thread
says so, once per change, batched by day, only in channels that asked. A real poll with
the GitHub fake changing the PR between refreshes, the Slack fake recording the thread;
SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import httpx

from bot.delivery.deliverer import Deliverer
from bot.jobs.pipeline import run_once
from bot.listeners.commands.model import Subscribe
from bot.listeners.commands.parse import parse_command, unparse
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.control import Rig
from tests.fixtures.delivery import rss, rss_item
from tests.githubfake import GitHubFake
from tests.slackfake import SlackFake
from tests.test_delivery_edits import CHANNEL, NOW, TEAM
from tests.test_github_poll import settings_for

REPO = "pytorch/pytorch"
QUIET = "C0QUIET001"  # follows the show without PR news


def test_pr_updates_is_read_and_written_back() -> None:
    command = parse_command("subscribe PyTorch fsdp pr-updates on", ["PyTorch"])
    assert command == Subscribe("PyTorch", ("fsdp",), pr_updates=True)
    assert parse_command(unparse(command), ["PyTorch"]) == command
    off = parse_command("subscribe PyTorch pr-updates off recap off", ["PyTorch"])
    assert off == Subscribe("PyTorch", recap=False, pr_updates=False)


async def test_pr_updates_on_and_off_through_signed_commands(rig: Rig) -> None:
    rig.slash("subscribe PyTorch")
    on = " ".join(rig.slash("subscribe PyTorch pr-updates on"))
    assert "a reply in that digest's thread now says so" in on
    assert "PR news in threads" in " ".join(rig.slash("list"))
    off = " ".join(rig.slash("subscribe PyTorch pr-updates off"))
    assert "no longer get PR news" in off
    assert "PR news" not in " ".join(rig.slash("list"))


def news_replies(slack: SlackFake, channel: str) -> list[str]:
    replies = [m for m in slack.messages(channel) if m.get("thread_ts")]
    return [m["text"] for m in replies if "PR news" in m["text"]]


async def test_a_key_pr_merged_after_the_episode_is_told_once_in_the_thread(
    store: Store,
    feed_server: FeedServer,
    slack_fake: SlackFake,
    github_fake: GitHubFake,
    deliverer: Deliverer,
    http: httpx.AsyncClient,
) -> None:
    store.ensure_show("PyTorch", "", REPO)
    store.subscribe(TEAM, CHANNEL, "PyTorch", source="config", pr_updates=True)
    store.subscribe(TEAM, QUIET, "PyTorch", source="config")
    url = feed_server.route("/feed.xml", rss(rss_item(5)))  # names 199605 and 199705
    github_fake.add_pr(REPO, 199605, title="Fix the all-gather", state="open")
    github_fake.add_pr(REPO, 199705, title="Follow up", state="open")
    settings = settings_for(url, github_fake)

    async def poll(minutes: int) -> None:
        at = NOW + timedelta(minutes=minutes)
        report = await run_once(settings, store, deliverer.outbox, http, at, deliverer=deliverer)
        assert report.errors == []

    await poll(0)
    assert news_replies(slack_fake, CHANNEL) == []  # both open: nothing settled yet
    github_fake.update_pr(REPO, 199605, state="merged", merged_at="2026-10-07T15:00:00Z")
    await poll(75)  # past the hourly refresh of an open PR
    (merged,) = news_replies(slack_fake, CHANNEL)
    assert merged.startswith("PR news: #199605")
    thread = [m for m in slack_fake.messages(CHANNEL) if m.get("thread_ts")]
    assert "/pull/199605|#199605> merged, 2 days after this episode" in str(thread[-1]["blocks"])
    assert not any(m.get("reply_broadcast") for m in thread)
    assert news_replies(slack_fake, QUIET) == []  # it did not ask
    await poll(150)
    assert len(news_replies(slack_fake, CHANNEL)) == 1  # told once

    # Another day, another PR: a new reply; the first one stays as it was.
    github_fake.update_pr(REPO, 199705, state="closed", closed_at="2026-10-08T10:00:00Z")
    await poll(225)
    replies = news_replies(slack_fake, CHANNEL)
    assert len(replies) == 2 and replies[1].startswith("PR news: #199705")
    assert "closed, 2 days after this episode" in str(
        [m["blocks"] for m in slack_fake.messages(CHANNEL) if m.get("thread_ts")]
    )
    await poll(300)
    assert len(news_replies(slack_fake, CHANNEL)) == 2
