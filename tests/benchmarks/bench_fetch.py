"""Fetch and Slack-fake benchmark. Run: ``python -m tests.benchmarks.bench_fetch``.

1. ``digests.sources.fetch.fetch`` of an 8 MB feed from the loopback feed server: a full download
   vs. a conditional poll answered 304 (what every poll of an unchanged feed costs), with
   the ratio; and the peak Python memory of a capped fetch of a 50 MB body (tracemalloc).
2. The Slack fake's own ceiling, so benchmarks of delivery know what they measure against:
   ``chat.postMessage`` through an aiohttp client (httpx saturates its own CPU first, see
   slack-notes.md) at concurrency 1 (p50) and 50 (p99, throughput), and the same 50-way
   burst with ``latency=0.05`` (how much the fake overlaps slow calls).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import tracemalloc

import aiohttp

from digests.errors import FetchError
from digests.sources.fetch import fetch, make_http_client
from tests.feedserver import FeedServer
from tests.slackfake import SlackFake

MB = 1024 * 1024


def feed_bytes(size: int) -> bytes:
    item = (
        b"<item><title>PyTorch: Episode</title><guid>g</guid>"
        b"<description>Compiler and sharding news.</description>"
        b"<itunes:duration>PT2M31S</itunes:duration></item>"
    )
    head = b'<?xml version="1.0"?><rss version="2.0"><channel><title>PyTorch</title>'
    body = item * ((size - len(head)) // len(item))
    return head + body + b"</channel></rss>"


async def bench_fetch(rounds: int) -> None:
    data = feed_bytes(8 * MB)
    with FeedServer() as server:
        url = server.route("/feed.xml", data, etag='"v1"')
        server.huge("/huge.xml", 50 * MB, declare_length=False)
        async with make_http_client() as client:
            full, cond = [], []
            for _ in range(rounds):
                t = time.perf_counter()
                result = await fetch(client, url)
                full.append(time.perf_counter() - t)
                assert result.content == data
                t = time.perf_counter()
                result = await fetch(client, url, etag='"v1"')
                cond.append(time.perf_counter() - t)
                assert result.status == "not_modified"
            f, c = statistics.median(full), statistics.median(cond)
            print(f"fetch 8 MB feed, full download     median {f * 1000:8.2f} ms")
            print(f"fetch 8 MB feed, 304 not modified  median {c * 1000:8.2f} ms")
            print(f"  full / conditional ratio         {f / c:8.1f}x")

            tracemalloc.start()
            try:
                await fetch(client, server.url("/huge.xml"))
            except FetchError as exc:
                _, peak = tracemalloc.get_traced_memory()
                print(
                    f"50 MB body, 20 MB cap: '{exc.reason}', peak Python memory {peak / MB:.1f} MB"
                )
            finally:
                tracemalloc.stop()


async def post_many(
    session: aiohttp.ClientSession, url: str, token: str, n: int, concurrency: int
) -> list[float]:
    sem = asyncio.Semaphore(concurrency)
    times: list[float] = []
    body = json.dumps({"channel": "C1", "text": "digest"})
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    async def one() -> None:
        async with sem:
            t = time.perf_counter()
            async with session.post(url, data=body, headers=headers) as response:
                payload = await response.json()
            times.append(time.perf_counter() - t)
            assert payload["ok"], payload

    await asyncio.gather(*(one() for _ in range(n)))
    return times


async def bench_slack(n: int) -> None:
    with SlackFake() as fake:
        fake.check_blocks = False
        url = fake.api_url + "chat.postMessage"
        connector = aiohttp.TCPConnector(limit=100)
        async with aiohttp.ClientSession(connector=connector) as session:
            await post_many(session, url, fake.token, 50, 10)  # warm up
            seq = await post_many(session, url, fake.token, n // 4, 1)
            print(f"slack fake chat.postMessage c=1    p50 {statistics.median(seq) * 1000:8.2f} ms")
            t = time.perf_counter()
            par = await post_many(session, url, fake.token, n, 50)
            wall = time.perf_counter() - t
            p99 = statistics.quantiles(par, n=100)[98]
            print(
                f"slack fake chat.postMessage c=50   p99 {p99 * 1000:8.2f} ms, "
                f"{n / wall:,.0f} calls/s"
            )
            fake.latency = 0.05
            fake.max_in_flight = 0
            t = time.perf_counter()
            await post_many(session, url, fake.token, 50, 50)
            wall = time.perf_counter() - t
            print(
                f"50 calls at once, latency 50 ms    wall {wall * 1000:8.1f} ms "
                f"(serial would be {50 * 50} ms), max in flight {fake.max_in_flight}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    asyncio.run(bench_fetch(args.rounds))
    asyncio.run(bench_slack(args.calls))


if __name__ == "__main__":
    main()
