"""Thread replies under delivered digests say only what the digest does not: run end to end
through ``bot.jobs.pipeline.run_once``, a feed on loopback and the Slack fake."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import httpx
import pytest

from bot.delivery.deliverer import Deliverer
from bot.jobs.pipeline import run_once
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.delivery import keys_in, rss, rss_item
from tests.slackfake import SlackFake

TEAM = "T1"
NOW = datetime(2026, 10, 6, 8, 0, tzinfo=UTC)
CHANNEL = "C1"


MORE = "The release slips a week."


def ten_prs() -> str:
    return " ".join(f"PR {199900 + n} moves part {n} along." for n in range(10))


@pytest.mark.parametrize(
    ("item", "thread_prs", "transcript"),
    [
        # Every PR in the digest, show notes that repeat the summary: no thread reply at all.
        (rss_item(3, summary="PR 199603 lands a fix.", prs="PR 199603 lands a fix."), [], False),
        # Every PR in the digest, a transcript that is only their sentences: nothing to add.
        (rss_item(3, prs="PR 199603 lands a fix; PR 199703 follows up."), [], False),
        # Every PR in the digest, a transcript with more to say: the transcript only.
        (rss_item(3), [], True),
        (rss_item(3, prs=f"{MORE} PR 199603 lands a fix."), [], True),
        # Ten PRs, eight in the digest: the other two, then the transcript.
        (rss_item(3, prs=f"{ten_prs()} {MORE}"), [199908, 199909], True),
        # ... and without the transcript when it only repeats the PRs' sentences.
        (rss_item(3, prs=ten_prs()), [199908, 199909], False),
    ],
)
async def test_thread_reply_under_a_delivered_digest(
    store: Store,
    slack_fake: SlackFake,
    feed_server: FeedServer,
    http: httpx.AsyncClient,
    deliverer: Deliverer,
    item: str,
    thread_prs: list[int],
    transcript: bool,
) -> None:
    url = feed_server.route("/feed.xml", rss(item))
    settings = Settings(
        shows=[ShowConfig(name="PyTorch", feed=url, repo="pytorch/pytorch")],
        schedule=ScheduleConfig(poll_minutes=15),
        team_id=TEAM,
        slack_bot_token=None,
        thread_replies=True,
    )
    store.ensure_show("PyTorch", "", "pytorch/pytorch")
    store.subscribe(TEAM, CHANNEL, "PyTorch", source="config")

    result = await run_once(settings, store, deliverer.outbox, http, NOW, deliverer=deliverer)
    assert result.delivery.failed == {}
    messages = slack_fake.messages(CHANNEL)
    assert keys_in(messages) == ["PyTorch:pytorch-2026-10-03"]
    (digest,) = [m for m in messages if not m.get("thread_ts")]
    replies = [m for m in messages if m.get("thread_ts")]
    in_digest = [int(n) for n in re.findall(r"/pull/(\d+)\|#", json.dumps(digest["blocks"]))]
    in_thread = [int(n) for n in re.findall(r"/pull/(\d+)\|#", json.dumps(replies))]
    assert in_thread == thread_prs
    assert in_digest and not set(in_digest) & set(in_thread)  # nothing said twice
    assert ("Transcript excerpt" in json.dumps(replies)) is transcript
    assert len(replies) == (1 if thread_prs or transcript else 0)
    assert all(r["thread_ts"] == digest["ts"] for r in replies)
