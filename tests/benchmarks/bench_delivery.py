"""Delivery benchmark. Run: ``python -m tests.benchmarks.bench_delivery [--postgres URL]``.

1. Fan-out: one episode (digest + its thread reply) to 1,000 channels through the Slack fake
   with 50 ms latency per call, by :class:`bot.delivery.Deliverer` (ledger included) at its
   default bound of 20 calls in flight. Compared in the same run with the ideal for that
   bound (calls × latency / bound) and with a bare client making the same calls under the
   same bound (no ledger, no pacing): what the fake and the client cost on their own.
2. A poll cycle over 500 unchanged feeds, each answering 304, through ``bot.jobs.pipeline.run_once``
   with one subscribed channel per show: the first such cycle plans every show (fetch state,
   conditional GET, candidates, ledger, decide), later ones only read and write the fetch
   state (``bot.jobs.poll_state``). Compared, round by round, with the same conditional GETs
   alone.

3. ``--workers N`` (PostgreSQL): one episode to 5,000 channels in 50 workspaces (100
   each; ``--channels``), no thread replies, fanned out by real ``digestbot worker``
   processes (their settings' defaults), first by 1 worker and then by N, each into a fresh
   schema. The poll waits until every worker is up. Printed: the time from the poll to the
   last post and from the first post to the last, the ideal (calls × latency ÷ total
   concurrency, workers × DELIVERY_CONCURRENCY, but no faster than the per-workspace rate
   allows: TEAM_POSTS_PER_SECOND for each of the workspaces whose jobs run at once, at most
   workers × WORKER_CONCURRENCY), the ratio, and the CPU each process used.

The fake and the feed server run in their own processes (``--in-process`` to share this
one), so their CPU does not count against the bot's on a 2-core machine. ``--only poll``
(or ``fan-out``) runs one of the two; ``--rounds N`` how many times each is measured;
``--metrics`` measures the fan-out also with the clock's metrics counting (bot.ops.metrics),
alternating with the plain one, and prints the ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import sqlalchemy as sa
from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery.deliverer import Deliverer
from bot.delivery.items import Delivery
from bot.delivery.outbox import SlackOutbox
from bot.jobs.pipeline import FETCH_CONCURRENCY, run_once
from config.settings import ScheduleConfig, Settings, ShowConfig
from digests.models import Episode, PullRequestRef
from digests.render.renderer import Renderer
from digests.sources.fetch import fetch, make_http_client, private_policy
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.delivery import rss, rss_item
from tests.slackfake import DEFAULT_TOKEN, SlackFake

TEAM = "T0BENCH"
LATENCY = 0.05
ROOT = Path(__file__).resolve().parents[2]

FEED_SERVER = """
import sys, threading
from tests.feedserver import FeedServer
from tests.fixtures.delivery import rss, rss_item
body = rss(rss_item(3), rss_item(2), rss_item(1))
server = FeedServer().start()
for n in range(int(sys.argv[1])):
    server.route(f"/f{n}.xml", body, etag=f'"v{n}"')
print(server.base_url, flush=True)
threading.Event().wait()
"""


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


def client(api_url: str, retry: bool = True) -> AsyncWebClient:
    kwargs: dict[str, Any] = {} if retry else {"retry_handlers": []}
    return AsyncWebClient(token=DEFAULT_TOKEN, base_url=api_url, timeout=30, **kwargs)


@contextmanager
def slack_api(in_process: bool, latency: float) -> Iterator[str]:
    if in_process:
        with SlackFake() as fake:
            fake.latency = latency
            yield fake.api_url
        return
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.slackfake", "--port", "0", "--latency", str(latency)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextmanager
def feed_base(in_process: bool, feeds: int) -> Iterator[str]:
    if in_process:
        with FeedServer() as server:
            body = rss(rss_item(3), rss_item(2), rss_item(1))
            for n in range(feeds):
                server.route(f"/f{n}.xml", body, etag=f'"v{n}"')
            yield server.base_url
        return
    proc = subprocess.Popen(
        [sys.executable, "-c", FEED_SERVER, str(feeds)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


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
    api_url: str, channels: list[str], message: dict[str, Any], reply: dict[str, Any], bound: int
) -> float:
    """The same calls, same bound, same shared session; no ledger and no pacing."""
    c = client(api_url, retry=False)
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
    await c.session.close()
    return elapsed


async def _deliver_once(
    db: _Db, api_url: str, items: list[Delivery], bound: int, metered: bool
) -> tuple[float, float, int]:
    """One fan-out into a fresh database: (seconds, CPU seconds, calls); ``metered``: with
    the process's metrics counting (bot.ops.metrics), as the clock delivers."""
    from bot.ops.metrics import Metrics

    store = Store.open(db.url())
    outbox = SlackOutbox(client(api_url), client(api_url, retry=False))
    metrics = Metrics() if metered else None
    deliverer = Deliverer(store, outbox, concurrency=bound, metrics=metrics)
    t, c = time.perf_counter(), time.process_time()
    report = await deliverer.deliver(items)
    elapsed, cpu = time.perf_counter() - t, time.process_time() - c
    assert len(report.posted) == len(items), report.failed
    again = await deliverer.deliver(items)
    assert len(again.unchanged) == len(items) and again.calls == 0
    if metrics is not None:
        posted = metrics.registry.get_sample_value(
            "digestbot_deliveries_total", {"outcome": "posted", "reason": ""}
        )
        assert posted == len(items), posted
    await deliverer.aclose()
    await outbox.close()
    store.close()
    return elapsed, cpu, report.calls


async def fan_out(
    db: _Db, channels: int, bound: int, rounds: int, in_process: bool, metrics: bool = False
) -> None:
    renderer = Renderer()
    ep = episode()
    message = dict(renderer.digest(ep))
    replies = tuple(dict(m) for m in renderer.thread_reply(ep))
    names = [f"C{n:09d}" for n in range(channels)]
    calls = channels * (1 + len(replies))
    # Each channel's replies wait out the 1 s per-channel pace after its digest.
    paced = len(replies) * 1.0 + (1 + len(replies)) * LATENCY
    ideal = max(calls * LATENCY / bound, paced)
    key = "PyTorch:" + ep.guid
    items = [
        Delivery(TEAM, ch, "episode", key, message, replies, ep.content_hash()) for ch in names
    ]
    times, bares, cpus = [], [], []
    metered_times, metered_cpus = [], []
    with slack_api(in_process, LATENCY) as api_url:
        for n in range(rounds):
            # With --metrics, plain and metered alternate which goes first (load drifts).
            order = [False, True] if metrics else [False]
            for metered in order if n % 2 == 0 else order[::-1]:
                elapsed, cpu, made = await _deliver_once(db, api_url, items, bound, metered)
                assert made == calls
                (metered_times if metered else times).append(elapsed)
                (metered_cpus if metered else cpus).append(cpu)
            bares.append(await bare(api_url, names, message, replies[0], bound))
    best, floor = min(times), min(bares)
    print(f"fan-out: 1 episode → {channels} channels, {calls} calls ({len(replies)} reply each)")
    print(f"  latency {LATENCY * 1000:.0f} ms per call, bound {bound} calls in flight")
    print(
        f"  deliverer      {statistics.median(times):7.2f} s median, {best:.2f} s best of {rounds}"
    )
    print(
        f"  ideal          {ideal:7.2f} s  (calls × latency / bound, at least one channel's pace)"
    )
    print(f"  bare client    {floor:7.2f} s  (same calls, bound and session; no ledger)")
    print(f"  ratio          {best / ideal:7.2f}× ideal, {best / floor:.2f}× bare client")
    if metrics:
        wall = statistics.median(metered_times) / statistics.median(times)
        cpu_ratio = statistics.median(metered_cpus) / statistics.median(cpus)
        print(
            f"  with metrics   {statistics.median(metered_times):7.2f} s median: "
            f"×{wall:.3f} the wall time, ×{cpu_ratio:.3f} the CPU "
            f"({statistics.median(metered_cpus):.2f} s vs {statistics.median(cpus):.2f} s)"
        )


async def poll_cycle(db: _Db, feeds: int, rounds: int, in_process: bool) -> None:
    with feed_base(in_process, feeds) as base, slack_api(in_process, 0.0) as api_url:
        shows = [ShowConfig(name=f"Show{n:03d}", feed=f"{base}/f{n}.xml") for n in range(feeds)]
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
        outbox = SlackOutbox(client(api_url), client(api_url, retry=False))
        deliverer = Deliverer(store, outbox)
        async with make_http_client() as http:
            t = time.perf_counter()
            first = await run_once(
                settings, store, outbox, http, datetime.now(UTC), deliverer=deliverer
            )
            cold = time.perf_counter() - t
            assert {p.status for p in first.polls} == {"ok"}
            # The first unchanged cycle plans every show and finds nothing due; from then on
            # an unchanged feed skips planning while nothing it reads moves (bot.jobs.poll_state).
            t = time.perf_counter()
            await run_once(settings, store, outbox, http, datetime.now(UTC), deliverer=deliverer)
            planned = time.perf_counter() - t
            # The floor: the same conditional GETs (same server, client and its kept-alive
            # connections, address policy, concurrency), nothing else. Measured in turn with
            # the cycles, so a machine whose load changes meanwhile weighs on both alike.
            states = [store.fetch_state(show.name) for show in shows]
            gate = asyncio.Semaphore(FETCH_CONCURRENCY)

            async def get(show: ShowConfig, etag: str | None) -> None:
                async with gate:
                    policy = private_policy(show.feed, show.allow_private)
                    result = await fetch(http, show.feed, etag=etag, allow_private=policy)
                    assert result.status == "not_modified"

            times, floors, cpu, cpu_floors = [], [], [], []
            for _ in range(rounds):
                t, c = time.perf_counter(), time.process_time()
                report = await run_once(
                    settings, store, outbox, http, datetime.now(UTC), deliverer=deliverer
                )
                times.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
                assert {p.status for p in report.polls} == {"not_modified"}
                assert not report.delivery.posted and not report.errors
                t, c = time.perf_counter(), time.process_time()
                await asyncio.gather(
                    *(get(sh, st.etag) for sh, st in zip(shows, states, strict=True))
                )
                floors.append(time.perf_counter() - t)
                cpu_floors.append(time.process_time() - c)
        await deliverer.aclose()
        await outbox.close()
        store.close()
    med = statistics.median(times)
    print(f"poll cycle: {feeds} feeds, one channel each")
    print(f"  first cycle (200s; {len(first.delivery.posted)} digests posted)   {cold:6.2f} s")
    print(f"  first unchanged (planned) {planned:6.2f} s")
    print(f"  unchanged (all 304)       {med:6.2f} s median of {rounds}, {min(times):.2f} s best")
    print(f"  per feed                  {med / feeds * 1000:6.2f} ms")
    floor = statistics.median(floors)
    print(f"  the 304 GETs alone        {floor:6.2f} s median (fetch, bound {FETCH_CONCURRENCY})")
    print(f"  ratio                     {med / floor:6.2f}× the GETs alone")
    pairs = sorted(t / f for t, f in zip(times, floors, strict=True))
    print(f"  ratio round by round      {', '.join(f'{r:.2f}' for r in pairs)}×")
    # This process's CPU (every thread; the feed server's is its own process's): the
    # machine's other load weighs on it less than on the wall times.
    used, floor_cpu = statistics.median(cpu), statistics.median(cpu_floors)
    print(f"  CPU: cycle {used:.2f} s, GETs alone {floor_cpu:.2f} s (medians)")
    pairs = sorted(t / f for t, f in zip(cpu, cpu_floors, strict=True))
    print(f"  CPU ratio round by round  {', '.join(f'{r:.2f}' for r in pairs)}×")


def _cpu_seconds(pid: int) -> float:
    """User + system CPU of a live process (/proc/<pid>/stat), in seconds."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _workers_once(postgres: str, api_url: str, fake_pid: int, count: int, channels: int,
                  teams: int) -> dict[str, float]:  # fmt: skip
    """One fan-out by ``count`` workers into a fresh schema: its times and CPU."""
    import threading

    from digests.store.schema import subscriptions
    from tests.fixtures.store import postgres_schema
    from tests.workerprocs import WorkerProcess, wait_for, worker_env

    with postgres_schema(postgres, prefix="bench") as url, FeedServer() as feeds, \
            tempfile.TemporaryDirectory() as tmp:  # fmt: skip
        gate = threading.Event()
        body = rss(rss_item(3))

        def held() -> Iterator[bytes]:
            gate.wait(timeout=300)
            yield body

        feed = feeds.route("/feed.xml", held, length=len(body))
        store = Store.open(url)
        store.ensure_show("PyTorch", feed, "pytorch/pytorch")
        now = datetime.now(UTC)
        per_team = channels // teams
        with store.engine.begin() as conn:
            conn.execute(sa.insert(subscriptions), [
                {"team_id": f"T0B{n // per_team:03d}", "channel_id": f"C{n:09d}",
                 "show": "PyTorch", "recap": False, "source": "slash", "created_at": now}
                for n in range(channels)
            ])  # fmt: skip
        config = Path(tmp) / "d.toml"
        config.write_text(
            f'timezone = "UTC"\nthread_replies = false\n[[shows]]\nname = "PyTorch"\n'
            f'feed = "{feed}"\n[schedule]\npoll_minutes = 60\njitter_seconds = 0\n'
        )
        env = worker_env(url, config, api_url, DEFAULT_TOKEN, SLACK_POST_INTERVAL="1")
        procs = [WorkerProcess(env, f"w{n + 1}") for n in range(count)]
        posted = sa.text("SELECT count(*) FROM deliveries WHERE state = 'posted'")
        span = sa.text(
            "SELECT max(ts::numeric) - min(ts::numeric) FROM deliveries WHERE state = 'posted'"
        )
        try:
            assert wait_for(lambda: all(w.up for w in procs), timeout=120), procs[0].tail()
            cpu0 = [_cpu_seconds(w.proc.pid) for w in procs]
            fake0 = _cpu_seconds(fake_pid)
            t = time.perf_counter()
            gate.set()

            def done() -> bool:
                with store.engine.connect() as conn:
                    return int(conn.execute(posted).scalar_one()) >= channels

            assert wait_for(done, timeout=900, every=0.05)
            wall = time.perf_counter() - t
            cpu = sum(_cpu_seconds(w.proc.pid) - c for w, c in zip(procs, cpu0, strict=True))
            fake_cpu = _cpu_seconds(fake_pid) - fake0
            with store.engine.connect() as conn:
                posts = float(conn.execute(span).scalar_one())
        finally:
            for w in procs:
                w.stop()
            store.close()
    return {"wall": wall, "posts": posts, "cpu": cpu, "fake_cpu": fake_cpu}


def workers_fan_out(postgres: str, workers: int, channels: int, teams: int, rounds: int) -> None:
    defaults = Settings()
    rate, bound, jobs = (
        defaults.team_posts_per_second, defaults.delivery_concurrency,
        defaults.worker_concurrency,
    )  # fmt: skip
    print(f"worker fan-out: 1 episode → {channels} channels in {teams} workspaces, "
          f"{LATENCY * 1000:.0f} ms a call; each worker {jobs} jobs, {bound} calls in flight; "
          f"{rate:g} posts/s per workspace")  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.slackfake", "--port", "0", "--latency", str(LATENCY)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        api_url = proc.stdout.readline().strip()
        results: dict[int, list[dict[str, float]]] = {1: [], workers: []}
        for _ in range(rounds):
            for count in results:
                results[count].append(
                    _workers_once(postgres, api_url, proc.pid, count, channels, teams)
                )
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    single = statistics.median(r["wall"] for r in results[1])
    for count, runs in results.items():
        wall = statistics.median(r["wall"] for r in runs)
        posts = statistics.median(r["posts"] for r in runs)
        cpu = statistics.median(r["cpu"] for r in runs)
        fake_cpu = statistics.median(r["fake_cpu"] for r in runs)
        by_bound = channels * LATENCY / (count * bound)
        by_rate = channels / (min(count * jobs, teams) * rate) if rate else 0.0
        ideal = max(by_bound, by_rate)
        print(f"  {count} worker(s): {wall:6.2f} s poll → last post ({posts:.2f} s first → last "
              f"post), median of {len(runs)}")  # fmt: skip
        print(f"     ideal {ideal:6.2f} s (calls × latency ÷ {count * bound} = {by_bound:.2f} s; "
              f"per-workspace rate: {by_rate:.2f} s); ratio {wall / ideal:.2f}× ideal, "
              f"{single / wall:.2f}× faster than 1 worker")  # fmt: skip
        print(f"     CPU: workers {cpu:.1f} s ({cpu / channels * 1000:.2f} ms a post), "
              f"the Slack fake {fake_cpu:.1f} s")  # fmt: skip


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--channels", type=int, default=1000)
    parser.add_argument("--bound", type=int, default=20)
    parser.add_argument("--feeds", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--postgres", metavar="URL", help="PostgreSQL URL instead of SQLite")
    parser.add_argument("--in-process", action="store_true", help="fakes in this process")
    parser.add_argument("--only", choices=("fan-out", "poll"), help="one of the two")
    parser.add_argument(
        "--workers", type=int, metavar="N",
        help="only the fan-out by 1 and by N digestbot workers (needs --postgres)",
    )  # fmt: skip
    parser.add_argument("--teams", type=int, default=50, help="workspaces (--workers)")
    parser.add_argument(
        "--metrics", action="store_true", help="fan-out also with metrics counting (ratio)"
    )
    args = parser.parse_args()
    if args.workers:
        if not args.postgres:
            parser.error("--workers needs --postgres")
        channels = 5000 if args.channels == 1000 else args.channels  # its own default
        workers_fan_out(args.postgres, args.workers, channels, args.teams, args.rounds)
        return
    with tempfile.TemporaryDirectory() as tmp:
        db = _Db(args.postgres, Path(tmp))
        try:
            where = "in this process" if args.in_process else "in their own processes"
            print(f"database: {'PostgreSQL' if args.postgres else 'SQLite file'}; fakes {where}")
            if args.only != "poll":
                await fan_out(
                    db, args.channels, args.bound, args.rounds, args.in_process, args.metrics
                )
            if args.only != "fan-out":
                await poll_cycle(db, args.feeds, args.rounds, args.in_process)
        finally:
            db.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
