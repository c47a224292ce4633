"""Delivery benchmark. Run: ``python -m tests.benchmarks.bench_delivery [--postgres URL]``.

1. Fan-out: one episode (digest + one thread reply) to 1,000 channels through the Slack fake
   with 50 ms latency per call, by :class:`bot.delivery.Deliverer` (ledger included) at its
   default bound of 20 calls in flight. Compared in the same run with the ideal for that
   bound (calls × latency / bound) and with a bare client making the same calls under the
   same bound (no ledger, no pacing): what the fake and the client cost on their own.
2. A poll cycle over 500 unchanged feeds, each answering 304, through ``bot.poll.run_once``
   (fetch state, conditional GET, candidates, ledger, decide) with one subscribed channel
   per show.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import sqlalchemy as sa
from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery import Deliverer, Delivery
from bot.outbox import SlackOutbox
from bot.poll import run_once
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.fetch import make_http_client
from digests.models import Episode, PullRequestRef
from digests.render import Renderer
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.delivery import rss, rss_item
from tests.slackfake import SlackFake

TEAM = "T0BENCH"
LATENCY = 0.05


def episode() -> Episode:
    return Episode(
        guid="pytorch-2026-10-05",
        show="PyTorch",
        title="PyTorch: All-Gather Showdown and Stack-Aware Merges",
        headline="All-Gather Showdown and Stack-Aware Merges",
        summary="Sharded training weighs three all-gather designs; the merge bot learns stacks.",
        published_at=datetime(2026, 10, 5, 13, 0, 40, tzinfo=UTC),
        duration_seconds=151,
        url="https://example.test/pytorch/2026-10-05",
        pull_requests=tuple(
            PullRequestRef(
                number=n,
                url=f"https://github.com/pytorch/pytorch/pull/{n}",
                context=f"PR {n} is one of the day's changes.",
            )
            for n in (199720, 199721, 199726, 199714, 199716, 199715, 199687)
        ),
        transcript="Fully sharded data parallel is at a design fork over the all-gather contract.",
    )


def client(fake: SlackFake, retry: bool = True) -> AsyncWebClient:
    kwargs = {} if retry else {"retry_handlers": []}
    return AsyncWebClient(token=fake.token, base_url=fake.api_url, timeout=30, **kwargs)


class _Db:
    """A fresh database per measurement: a SQLite file, or a PostgreSQL schema."""

    def __init__(self, postgres: str | None, tmp: Path) -> None:
        self.postgres = postgres
        self.tmp = tmp
        self.schemas: list[str] = []

    def url(self) -> str:
        if not self.postgres:
            return f"sqlite:///{self.tmp / f'bench-{uuid.uuid4().hex[:8]}.sqlite3'}"
        schema = f"bench_{uuid.uuid4().hex[:12]}"
        engine = sa.create_engine(self.postgres, poolclass=sa.pool.NullPool)
        with engine.begin() as conn:
            conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
        engine.dispose()
        self.schemas.append(schema)
        sep = "&" if "?" in self.postgres else "?"
        return f"{self.postgres}{sep}options=-csearch_path%3D{schema}"

    def cleanup(self) -> None:
        if not self.postgres:
            return
        engine = sa.create_engine(self.postgres, poolclass=sa.pool.NullPool)
        with engine.begin() as conn:
            for schema in self.schemas:
                conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        engine.dispose()


async def bare(
    fake: SlackFake, channels: list[str], message: dict, reply: dict, bound: int
) -> float:
    """The same calls, same bound, no ledger and no pacing."""
    c = client(fake, retry=False)
    c.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=100))
    sem = asyncio.Semaphore(bound)

    async def one(channel: str) -> None:
        async with sem:
            r = await c.chat_postMessage(
                channel=channel, text=message["text"], blocks=message["blocks"]
            )
        async with sem:
            await c.chat_postMessage(
                channel=channel, text=reply["text"], blocks=reply["blocks"], thread_ts=r["ts"]
            )

    t = time.perf_counter()
    await asyncio.gather(*(one(ch) for ch in channels))
    elapsed = time.perf_counter() - t
    if c.session is not None:
        await c.session.close()
    return elapsed


async def fan_out(db: _Db, channels: int, bound: int, rounds: int) -> None:
    renderer = Renderer()
    ep = episode()
    message = dict(renderer.digest(ep))
    replies = [dict(m) for m in renderer.thread_reply(ep)]
    names = [f"C{n:09d}" for n in range(channels)]
    calls = channels * (1 + len(replies))
    ideal = calls * LATENCY / bound
    with SlackFake() as fake:
        fake.latency = LATENCY
        times, bares = [], []
        for _ in range(rounds):
            store = Store.open(db.url())
            outbox = SlackOutbox(client(fake), client(fake, retry=False))
            deliverer = Deliverer(store, outbox, concurrency=bound)
            items = [
                Delivery(
                    TEAM,
                    ch,
                    "episode",
                    "PyTorch:" + ep.guid,
                    message,
                    tuple(replies),
                    ep.content_hash(),
                )
                for ch in names
            ]
            fake.reset()
            fake.max_in_flight = 0
            t = time.perf_counter()
            report = await deliverer.deliver(items)
            times.append(time.perf_counter() - t)
            assert len(report.posted) == channels, report.failed
            assert fake.max_in_flight <= bound
            again = await deliverer.deliver(items)
            assert len(again.unchanged) == channels
            deliverer.close()
            await outbox.close()
            store.close()
            fake.reset()
            bares.append(await bare(fake, names, message, replies[0], bound))
    best, floor = min(times), min(bares)
    print(
        f"fan-out: 1 episode → {channels} channels, {calls} calls, latency {LATENCY * 1000:.0f} ms, bound {bound}"
    )
    print(
        f"  deliverer      {statistics.median(times):7.2f} s median, {best:.2f} s best of {rounds}"
    )
    print(f"  ideal          {ideal:7.2f} s  (calls × latency / bound)")
    print(f"  bare client    {floor:7.2f} s  (same calls and bound, no ledger)")
    print(f"  ratio          {best / ideal:7.2f}× ideal, {best / floor:.2f}× bare client")


async def poll_cycle(db: _Db, feeds: int, rounds: int) -> None:
    with FeedServer() as server:
        shows = []
        for n in range(feeds):
            url = server.route(
                f"/f{n}.xml", rss(rss_item(3), rss_item(2), rss_item(1)), etag=f'"v{n}"'
            )
            shows.append(ShowConfig(name=f"Show{n:03d}", feed=url))
        settings = Settings(
            shows=shows,
            schedule=ScheduleConfig(poll_minutes=15),
            team_id=TEAM,
            thread_replies=False,
        )
        store = Store.open(db.url())
        for n, show in enumerate(shows):
            store.ensure_show(show.name, show.feed, show.repo)
            store.subscribe(TEAM, f"C{n:09d}", show.name, source="config")
        with SlackFake() as fake:
            outbox = SlackOutbox(client(fake), client(fake, retry=False))
            deliverer = Deliverer(store, outbox)
            async with make_http_client() as http:
                t = time.perf_counter()
                first = await run_once(
                    settings, store, outbox, http, datetime.now(UTC), deliverer=deliverer
                )
                cold = time.perf_counter() - t
                # Note: the feeds all say the show is "PyTorch"; episodes take the configured name.
                assert len(first.delivery.posted) == 0 or first.polls[0].status == "ok"
                times = []
                for _ in range(rounds):
                    server.clear_requests()
                    t = time.perf_counter()
                    report = await run_once(
                        settings, store, outbox, http, datetime.now(UTC), deliverer=deliverer
                    )
                    times.append(time.perf_counter() - t)
                    assert {p.status for p in report.polls} == {"not_modified"}, {
                        p.status for p in report.polls
                    }
                    assert not report.delivery.posted
                    assert len(server.requests) == feeds
            deliverer.close()
            await outbox.close()
        store.close()
    med = statistics.median(times)
    print(f"poll cycle: {feeds} feeds")
    print(
        f"  first cycle (200s, store, {len(first.delivery.posted)} digests posted)  {cold:6.2f} s"
    )
    print(f"  unchanged (all 304)       {med:6.2f} s median of {rounds}, {min(times):.2f} s best")
    print(f"  per feed                  {med / feeds * 1000:6.2f} ms")


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--channels", type=int, default=1000)
    parser.add_argument("--bound", type=int, default=20)
    parser.add_argument("--feeds", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--postgres", metavar="URL", help="PostgreSQL URL instead of SQLite")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = _Db(args.postgres, Path(tmp))
        try:
            print(f"database: {'PostgreSQL' if args.postgres else 'SQLite file'}")
            await fan_out(db, args.channels, args.bound, args.rounds)
            await poll_cycle(db, args.feeds, args.rounds)
        finally:
            db.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
