"""GitHub enrichment benchmark. Run: ``python -m tests.benchmarks.bench_github``.

100 episodes × 10 PRs (1,000 PRs over 3 repositories) enriched through the GitHub fake
answering every call in 50 ms (``--latency``), into a SQLite store:

1. With a token (GraphQL batches): calls and wall time cold, then a re-run at once (all
   fresh: target 0 calls), then an hour later (everything due again).
2. Without a token (REST, serial): cold; a re-run at once (target 0 calls); an hour later
   (target: all 304s, no rate budget spent).
3. Digest latency from poll to post while GitHub takes 10 s to answer (``--slow``): a
   ``run_once`` with GitHub enabled vs the same with it disabled (target: not delayed).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from digests.enrich.client import GitHubClient
from digests.enrich.details import EnrichReport, enrich
from digests.models import Episode, PullRequestRef
from digests.store import Store
from digests.store.pr_details import PrDetailsStore
from tests.githubfake import GitHubFake

REPOS = ("pytorch/pytorch", "pytorch/vision", "pytorch/audio")
NOW = datetime(2026, 10, 20, 12, 0, tzinfo=UTC)


def make_episodes(count: int, per: int) -> list[tuple[Episode, str]]:
    episodes = []
    for i in range(count):
        repo = REPOS[i % len(REPOS)]
        prs = tuple(
            PullRequestRef(n, f"https://github.com/{repo}/pull/{n}", f"PR {n} does a thing.")
            for n in range(200_000 + i * per, 200_000 + (i + 1) * per)
        )
        episodes.append(
            (
                Episode(
                    guid=f"g{i}",
                    show="PyTorch",
                    title=f"PyTorch: episode {i}",
                    headline=f"episode {i}",
                    published_at=NOW - timedelta(hours=i),
                    pull_requests=prs,
                ),
                repo,
            )
        )
    return episodes


def seed(fake: GitHubFake, episodes: list[tuple[Episode, str]]) -> int:
    count = 0
    for episode, repo in episodes:
        for pr in episode.pull_requests:
            labels = ["Merged", "module: nn"] if pr.number % 3 else ["topic: bc breaking"]
            fake.add_pr(
                repo, pr.number, title=f"Make {pr.number} faster", state="closed", labels=labels
            )
            count += 1
    return count


async def timed(
    client: GitHubClient, prs: PrDetailsStore, episodes: list[tuple[Episode, str]], now: datetime
) -> tuple[EnrichReport, float]:
    started = time.perf_counter()
    report = await enrich(client, prs, episodes, now)
    return report, time.perf_counter() - started


def line(label: str, report: EnrichReport, seconds: float, fake: GitHubFake, kind: str) -> None:
    statuses = [c.status for c in fake.calls_of(kind)]
    print(
        f"  {label:<26} {report.calls:5d} calls  {seconds:7.2f} s  asked {report.asked:5d}  "
        f"learnt {report.learnt:5d}  304s {statuses.count(304):5d}  "
        f"stopped: {report.stopped or '-'}"
    )


async def bench_enrich(episodes_count: int, per: int, latency: float) -> None:
    episodes = make_episodes(episodes_count, per)
    for token in (True, False):
        with tempfile.TemporaryDirectory() as tmp, GitHubFake() as fake:
            total = seed(fake, episodes)
            fake.latency = latency
            fake.rest_limit = 10 * total  # the benchmark measures calls, not the hourly cap
            store = Store.open(f"sqlite:///{Path(tmp) / 'bench.sqlite3'}")
            prs = PrDetailsStore(store)
            mode = "token (GraphQL)" if token else "no token (REST + ETag)"
            print(
                f"{mode}: {len(episodes)} episodes × {per} PRs = {total} PRs, "
                f"{latency * 1000:.0f} ms per call"
            )
            kind = "graphql" if token else "rest"
            async with httpx.AsyncClient(timeout=30) as http:
                client = GitHubClient(http, fake.api_url, fake.token if token else None)
                for label, when in (
                    ("cold", NOW),
                    ("re-run, all fresh", NOW + timedelta(minutes=5)),
                    ("an hour later (refresh)", NOW + timedelta(hours=1, minutes=5)),
                ):
                    fake.reset()
                    report, seconds = await timed(client, prs, episodes, when)
                    line(label, report, seconds, fake, kind)
            store.close()


async def post_latency(github: GitHubFake | None, slow: float) -> tuple[float, float, int]:
    """(seconds from the cycle's start to the digest's post, to the cycle's end, edits)."""
    from bot.delivery.deliverer import Deliverer
    from bot.jobs.pipeline import run_once
    from config.settings import Settings, ShowConfig
    from digests.sources.fetch import make_http_client
    from tests.feedserver import FeedServer
    from tests.fixtures.delivery import rss, rss_item, slack_outbox
    from tests.slackfake import SlackFake

    extra = {} if github is None else {"github_api_url": github.api_url, "github_token": "ghp_test"}
    with tempfile.TemporaryDirectory() as tmp, FeedServer() as feeds, SlackFake() as slack:
        if github is not None:
            github.add_pr("pytorch/pytorch", 199603, title="A fix", state="open")
            github.latency = slow
        url = feeds.route("/feed.xml", rss(rss_item(3)))
        settings = Settings(shows=[ShowConfig(name="PyTorch", feed=url)], team_id="T1", **extra)
        store = Store.open(f"sqlite:///{Path(tmp) / 'latency.sqlite3'}")
        store.ensure_show("PyTorch", "", "pytorch/pytorch")
        store.subscribe("T1", "C1", "PyTorch", source="config")
        deliverer = Deliverer(store, slack_outbox(slack), per_channel_interval=0.0)
        started = time.perf_counter()
        async with make_http_client() as http:
            cycle = asyncio.create_task(
                run_once(settings, store, deliverer.outbox, http, NOW, deliverer=deliverer)
            )
            while not slack.calls_to("chat.postMessage") and not cycle.done():
                await asyncio.sleep(0.001)
            posted = time.perf_counter() - started
            await cycle
        total = time.perf_counter() - started
        await deliverer.aclose()
        await deliverer.outbox.close()
        store.close()
        return posted, total, len(slack.calls_to("chat.update"))


async def bench_latency(slow: float, rounds: int) -> None:
    print(f"digest latency, poll to post (GitHub answering in {slow:.0f} s), median of {rounds}")
    await post_latency(None, slow)  # warm-up: first imports and connections
    off, fast, on, cycles, edits = [], [], [], [], 0
    for _ in range(rounds):
        off.append((await post_latency(None, slow))[0])
        with GitHubFake() as github:
            fast.append((await post_latency(github, 0.0))[0])
        with GitHubFake() as github:
            post, total, edits = await post_latency(github, slow)
        on.append(post)
        cycles.append(total)
    base, quick, post = (statistics.median(x) for x in (off, fast, on))
    print(f"  GitHub off (baseline)  posted after {base * 1000:8.1f} ms")
    print(f"  GitHub on, instant     posted after {quick * 1000:8.1f} ms")
    print(
        f"  GitHub on, {slow:.0f} s slow    posted after {post * 1000:8.1f} ms, cycle "
        f"{statistics.median(cycles):6.2f} s, edits once details came: {edits}"
    )
    print(
        f"  the post waited for GitHub: {(post - quick) * 1000:+.1f} ms (slow vs instant); "
        f"enrichment's own cost: {(quick - base) * 1000:+.1f} ms (instant vs off)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--prs", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--slow", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", choices=("enrich", "latency"))
    args = parser.parse_args()
    if args.only != "latency":
        asyncio.run(bench_enrich(args.episodes, args.prs, args.latency))
    if args.only != "enrich":
        asyncio.run(bench_latency(args.slow, args.rounds))


if __name__ == "__main__":
    main()
