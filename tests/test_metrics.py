"""bot.ops.metrics: one registry per Metrics (none global), label values from fixed sets."""

from __future__ import annotations

from prometheus_client import REGISTRY

from bot.ops.metrics import Metrics
from tests.githubfake import GitHubFake


def test_each_metrics_has_its_own_registry_and_none_is_global() -> None:
    one, two = Metrics(process=False), Metrics(process=False)
    one.replays.inc()
    assert one.registry.get_sample_value("digestbot_replays_refused_total") == 1
    assert two.registry.get_sample_value("digestbot_replays_refused_total") == 0
    assert REGISTRY.get_sample_value("digestbot_replays_refused_total") is None


def test_label_values_are_bounded() -> None:
    metrics = Metrics(process=False)
    for n in range(50):
        metrics.request({"command": "/episodes", "text": f"word{n} C0CHANNEL"}, 0.01, "ok")
        metrics.slack_call("chat.postMessage", f"cannot connect: 10.0.0.{n}")
        metrics.request({"type": "event_callback", "event": {"type": f"e{n}"}}, 0.01, "ok")
    metrics.request({"command": "/episodes", "text": "RECENT"}, 0.01, "ok")
    metrics.slack_call("chat.postMessage", "is_archived")
    sample = metrics.registry.get_sample_value
    assert sample("digestbot_slash_commands_total", {"subcommand": "other", "outcome": "ok"}) == 50
    assert sample("digestbot_slash_commands_total", {"subcommand": "recent", "outcome": "ok"}) == 1
    calls = "digestbot_slack_api_calls_total"
    assert sample(calls, {"method": "chat.postMessage", "error": "other"}) == 50
    assert sample(calls, {"method": "chat.postMessage", "error": "is_archived"}) == 1
    assert sample("digestbot_slack_events_total", {"type": "other"}) == 50
    series = [
        s
        for family in metrics.registry.collect()
        for s in family.samples
        if s.name.startswith(("digestbot_slash", "digestbot_slack_api", "digestbot_slack_events"))
    ]
    assert len(series) <= 12


def test_a_cycle_report_counts_polls_episodes_and_dropped_pr_mentions() -> None:
    from datetime import UTC, datetime

    from bot.jobs.cycle import PollResult, RunReport
    from digests.models import Episode, PullRequestRef

    now = datetime(2026, 12, 1, tzinfo=UTC)
    prs = tuple(PullRequestRef(n, f"https://github.com/o/r/pull/{n}") for n in range(3))
    capped = Episode(
        guid="g1", show="S", title="T", headline="H", published_at=now, pull_requests=prs,
        pull_requests_named=5,
    )  # fmt: skip
    whole = Episode(guid="g2", show="S", title="T2", headline="H2", published_at=now)
    report = RunReport(
        polls=[
            PollResult("S", "ok", added=(capped,), changed=(whole,), lenient=True),
            PollResult("A", "ok"),
            PollResult("B", "not_modified"),
            PollResult("C", "failed", reason="parse"),
            PollResult("D", "busy"),
        ]
    )
    metrics = Metrics(process=False)
    metrics.polled(report)
    sample = metrics.registry.get_sample_value
    polls = "digestbot_feed_polls_total"
    assert sample(polls, {"outcome": "new", "reason": ""}) == 1
    assert sample(polls, {"outcome": "unchanged_200", "reason": ""}) == 1
    assert sample(polls, {"outcome": "unchanged_304", "reason": ""}) == 1
    assert sample(polls, {"outcome": "failed", "reason": "parse"}) == 1
    assert sample(polls, {"outcome": "busy", "reason": ""}) == 1
    assert sample("digestbot_episodes_stored_total", {"status": "new"}) == 1
    assert sample("digestbot_episodes_stored_total", {"status": "changed"}) == 1
    assert sample("digestbot_pr_mentions_over_budget_total") == 2
    assert sample("digestbot_feed_lenient_reads_total") == 1


async def test_github_calls_and_budget_as_the_fake_saw_them(github_fake: GitHubFake) -> None:
    from collections import Counter as Tally
    from datetime import UTC, datetime

    from bot.jobs.enrichment import GitHubSession
    from config.settings import Settings

    github_fake.add_pr("pytorch/pytorch", 1, title="One")
    github_fake.fail_next("rest", status=500, times=1)
    settings = Settings(github=True, github_api_url=github_fake.api_url, github_retry_seconds=0)
    metrics = Metrics(process=False)
    session = GitHubSession(settings)
    session.observe = metrics.github_answer
    client = session.client()
    assert client is not None
    try:
        wanted = [("pytorch/pytorch", 1), ("pytorch/pytorch", 2)]
        await client.fetch(wanted, {}, datetime.now(UTC))
    finally:
        await session.aclose()
    seen = Tally((c.kind, str(c.status)) for c in github_fake.calls)
    assert seen[("rest", "500")] == 1 and seen[("rest", "404")] == 1, seen
    sample = metrics.registry.get_sample_value
    for (kind, status), count in seen.items():
        assert sample("digestbot_github_calls_total", {"kind": kind, "status": status}) == count
    remaining = sample("digestbot_github_rate_remaining", {"kind": "rest"})
    assert remaining == github_fake.remaining("rest")
    assert sample("digestbot_github_rate_limit", {"kind": "rest"}) == github_fake.rest_limit


def test_a_failed_poll_has_one_word_for_why() -> None:
    from bot.jobs.poll_state import failure_reason
    from digests.errors import (
        FeedHTTPError,
        FeedParseError,
        FeedUnavailable,
        FetchError,
        StoreError,
    )

    url = "https://feeds.example/f.xml"
    assert failure_reason(FeedHTTPError(url, "Not Found", 404)) == "http_4xx"
    assert failure_reason(FeedHTTPError(url, "Bad Gateway", 502)) == "http_5xx"
    assert failure_reason(FeedUnavailable(url, "busy", 30.0)) == "unavailable"
    assert failure_reason(FeedParseError(url, "not a feed")) == "parse"
    assert failure_reason(FetchError(url, "cannot connect")) == "fetch"
    assert failure_reason(StoreError("locked")) == "other"
