"""Growth benchmark: every `/episodes` answer as the archive grows 1k → 10k → 100k episodes.

Seeds 20 shows with generated episodes of realistic size (a ~3 KB transcript, 6 PRs each,
one episode per show per day) on SQLite and, when ``DIGESTBOT_TEST_POSTGRES_URL`` is set,
PostgreSQL (a throw-away schema), then times each answer through the app's own answer
function (``bot.listeners.commands.answer``: parse, query, render — Slack itself is the only part
left out) and the weekly recap's build. Prints p50/p95 per answer and size, and the growth
from the smallest to the largest size. Run::

    python -m tests.benchmarks.bench_growth [--sizes 1000,10000,100000] [--repeat 30]
        [--keep DIR] [--engines sqlite,postgresql]

The same answers at every size in one run, so the growth column compares like with like.
``--keep DIR`` keeps the seeded databases for the next run (SQLite files in DIR, PostgreSQL
schemas ``growth_keep_<size>``): a database already holding its size is not seeded again,
only migrated by ``Store.open`` — so a run on newer code measures the same rows, migrated.
The heap is settled before timing as ``serve`` settles it after startup
(``bot.runtime.settle_heap``): a full collection of the startup heap is not a request's cost.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from bot.listeners.commands import answer
from bot.listeners.commands.base import Deps, Invocation
from bot.runtime import settle_heap
from config.settings import ChannelConfig, Settings, ShowConfig
from digests.models import Episode, PullRequestRef
from digests.recap import aggregate, week_of
from digests.render.renderer import Renderer
from digests.store import Store
from tests.fixtures.store import count_episodes, postgres_schema

SHOWS = [f"Show{i:02d}" for i in range(20)]
START = datetime(2010, 1, 1, 13, 0, tzinfo=UTC)
TEAM = "T0BENCH"
ALL_CHANNEL = "C0ALLSHOWS"
ONE_CHANNEL = "C0ONESHOW"
# A word in 80% of the episodes (the "common word"), and one in a handful.
COMMON, RARE = "collectives", "zephyrine"
WORDS = [
    "the",
    "compiler",
    "team",
    "reworked",
    "guards",
    "for",
    "dynamic",
    "shapes",
    "while",
    "the",
    "distributed",
    "side",
    "landed",
    "sharding",
    "fixes",
    "and",
    "memory",
    "planning",
    "for",
    "inductor",
    "kernels",
    "on",
    "accelerators",
]


def episode(show_index: int, day: int) -> Episode:
    n = day * len(SHOWS) + show_index
    show = SHOWS[show_index]
    base = 100000 + n * 6
    prs = tuple(
        PullRequestRef(
            number=base + i,
            url=f"https://github.com/example/{show.lower()}/pull/{base + i}",
            context=f"PR {base + i} tightens the guard for case {i} of episode {n}.",
        )
        for i in range(6)
    )
    words = [WORDS[(n + i) % len(WORDS)] for i in range(450)]  # ~3 KB
    if n % 5:
        words[7] = COMMON
    if n % 997 == 0:
        words[11] = RARE
    return Episode(
        guid=f"{show}-{day:06d}",
        show=show,
        title=f"{show}: Guards and sharding, day {day}",
        headline=f"Guards and sharding, day {day}",
        summary=f"Compiler guards and sharding news from day {day} of {show}.",
        published_at=START + timedelta(days=day, minutes=show_index),
        duration_seconds=120 + n % 200,
        url=f"https://briefings.example/{show.lower()}/{day}",
        pull_requests=prs,
        transcript=" ".join(words) + " " + " ".join(p.context for p in prs),
    )


def settings_for(url: str) -> Settings:
    return Settings(
        shows=[
            ShowConfig(name=s, feed=f"https://briefings.example/{s}.xml", repo=f"ex/{s.lower()}")
            for s in SHOWS
        ],
        channels=[
            ChannelConfig(id=ALL_CHANNEL, team=TEAM, shows=SHOWS),
            ChannelConfig(id=ONE_CHANNEL, team=TEAM, shows=[SHOWS[0]]),
        ],
        database_url=url,
        team_id=TEAM,
    )


def seed(store: Store, size: int) -> datetime:
    """``size`` episodes over the 20 shows; returns the newest publication time.

    A store already holding them (``--keep``) is left as it is.
    """
    days = size // len(SHOWS)
    if count_episodes(store) == days * len(SHOWS):
        return START + timedelta(days=days - 1)
    for show in SHOWS:
        store.ensure_show(show, f"https://briefings.example/{show}.xml", f"ex/{show.lower()}")
    batch: list[Episode] = []
    for day in range(days):
        batch += [episode(i, day) for i in range(len(SHOWS))]
        if len(batch) >= 2000:
            store.upsert_episodes(batch, START + timedelta(days=day))
            batch = []
    if batch:
        store.upsert_episodes(batch, START + timedelta(days=days))
    for channel, shows in ((ALL_CHANNEL, SHOWS), (ONE_CHANNEL, [SHOWS[0]])):
        for show in shows:
            store.subscribe(TEAM, channel, show)
    return START + timedelta(days=days - 1)


def cases(newest: datetime, size: int) -> dict[str, str]:
    mid_day = size // len(SHOWS) // 2
    pr_mid = 100000 + (mid_day * len(SHOWS)) * 6 + 2
    when = (START + timedelta(days=mid_day)).date().isoformat()
    return {
        "recent": "recent",
        "latest": "latest",
        "nearby <date>": f"nearby {when}",
        "nearby <title words>": f"nearby sharding day {mid_day}",
        "pr <n>": f"pr {pr_mid}",
        f"search {COMMON} (80%)": f"search {COMMON}",
        f"search {RARE} (rare)": f"search {RARE}",
        "search <phrase>": "search compiler guards",
        "week": f"week {newest.date().isoformat()}",
    }


@dataclass
class Timing:
    p50: float
    p95: float
    cpu50: float = 0.0  # this process's CPU time, median: what others' load barely moves
    server50: float = 0.0  # PostgreSQL: its backends' CPU time for the answer, median


class ServerClock:
    """CPU time of the PostgreSQL backends serving this store's connections, read from
    ``/proc/<pid>/schedstat`` (nanoseconds on a CPU; the server runs on this machine).
    A shared machine's wall time is mostly others' load; this is the server's own work."""

    def __init__(self, store: Store) -> None:
        self.pids: set[int] = set()
        engine = store._db.engine
        if engine.dialect.name != "postgresql" or not Path("/proc/self/schedstat").exists():
            return

        @sa.event.listens_for(engine, "checkout")
        def _seen(dbapi_connection: Any, *_: object) -> None:
            self.pids.add(int(dbapi_connection.info.backend_pid))

    def read(self) -> dict[int, int]:
        out = {}
        for pid in self.pids:
            with contextlib.suppress(OSError, ValueError, IndexError):
                out[pid] = int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
        return out

    @staticmethod
    def since(before: dict[int, int], after: dict[int, int]) -> float:
        return sum(after[p] - before[p] for p in after if p in before) / 1e9


def timed(fn: Callable[[], object], repeat: int, clock: ServerClock | None = None) -> Timing:
    fn()  # warm caches and connections: steady state is what a team sees
    samples, cpu, server = [], [], []
    for _ in range(repeat):
        before = clock.read() if clock else {}
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        samples.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        server.append(ServerClock.since(before, clock.read()) if clock else 0.0)
    samples.sort()
    p95 = samples[max(0, int(len(samples) * 0.95) - 1)]
    return Timing(
        statistics.median(samples), p95, statistics.median(cpu), statistics.median(server)
    )


def measure(url: str, size: int, repeat: int) -> dict[str, Timing]:
    settings = settings_for(url)
    store = Store.open(url)
    clock = ServerClock(store) if store._db.dialect == "postgresql" else None
    try:
        newest = seed(store, size)
        now = newest + timedelta(hours=2)
        deps = Deps(settings, store, Renderer(tz=settings.tz), lambda: now)
        settle_heap()  # as `serve` does before its first request
        results: dict[str, Timing] = {}
        for channel in (ALL_CHANNEL, ONE_CHANNEL):
            invocation = Invocation(TEAM, channel, "U0BENCH")
            scope = "20 shows" if channel == ALL_CHANNEL else "1 show"
            for name, text in cases(newest, size).items():
                results[f"{name} [{scope}]"] = timed(
                    lambda text=text, inv=invocation: answer(text, deps, inv), repeat, clock
                )
        year, week = week_of(newest, settings.tz)

        def recap() -> object:
            start = newest - timedelta(days=7)
            episodes = store.between(start, newest + timedelta(days=1))
            return aggregate(episodes, year=year, week=week, tz=settings.tz, shows=SHOWS)

        results["recap build [20 shows]"] = timed(recap, max(5, repeat // 3), clock)
        return results
    finally:
        store.close()


def report(label: str, sizes: Sequence[int], table: dict[int, dict[str, Timing]]) -> None:
    names = list(table[sizes[0]])
    head = "".join(f"{f'{s:,}':>18}" for s in sizes)
    print(f"\n== {label}: p50 / p95 in ms per answer")
    print(f"{'answer':40}{head}   growth p50 {sizes[0]:,}→{sizes[-1]:,}")
    for name in names:
        cells = "".join(
            f"{table[s][name].p50 * 1000:9.2f}/{table[s][name].p95 * 1000:7.2f}" for s in sizes
        )
        growth = table[sizes[-1]][name].p50 / max(table[sizes[0]][name].p50, 1e-9)
        print(f"{name:40}{cells}   {growth:6.2f}x")
    # On a shared machine wall time is mostly others' load: CPU time says what is ours (a
    # PostgreSQL answer's server-side work is not in it).
    print(f"\n-- {label}: CPU ms of this process per answer, p50")
    for name in names:
        cells = "".join(f"{table[s][name].cpu50 * 1000:18.2f}" for s in sizes)
        print(f"{name:40}{cells}")
    if not any(t.server50 for row in table.values() for t in row.values()):
        return
    print(f"\n-- {label}: CPU ms of the server's backends per answer, p50; this process + server")
    for name in names:
        both = {s: table[s][name].server50 + table[s][name].cpu50 for s in sizes}
        cells = "".join(
            f"{table[s][name].server50 * 1000:9.2f}/{both[s] * 1000:8.2f}" for s in sizes
        )
        growth = both[sizes[-1]] / max(both[sizes[0]], 1e-9)
        print(f"{name:40}{cells}   {growth:6.2f}x")


def run_engine(
    label: str, make_url: Callable[[int], object], sizes: Sequence[int], repeat: int
) -> None:
    table: dict[int, dict[str, Timing]] = {}
    for size in sizes:
        with make_url(size) as url:  # type: ignore[attr-defined]
            start = time.perf_counter()
            table[size] = measure(url, size, repeat)
            took = time.perf_counter() - start
            print(f"{label} {size:,} episodes: seeded and measured in {took:.0f} s", flush=True)
            done = list(table)
            if len(done) < len(sizes):
                report(label, done, table)  # so far, in case the run is cut short
    report(label, sizes, table)


@contextlib.contextmanager
def sqlite_file(size: int, keep: str | None) -> Iterator[str]:
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        yield f"sqlite:///{Path(keep).resolve() / f'growth-{size}.sqlite3'}"
        return
    with tempfile.TemporaryDirectory() as tmp:
        yield f"sqlite:///{Path(tmp) / f'growth-{size}.sqlite3'}"


@contextlib.contextmanager
def postgres_kept(base: str, size: int) -> Iterator[str]:
    """A schema of its own per size that outlives the run (``--keep``)."""
    import sqlalchemy as sa

    schema = f"growth_keep_{size}"
    admin = sa.create_engine(base, poolclass=sa.pool.NullPool)
    with admin.begin() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    admin.dispose()
    separator = "&" if "?" in base else "?"
    yield f"{base}{separator}options=-csearch_path%3D{schema}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--keep", metavar="DIR", help="keep seeded databases for the next run")
    parser.add_argument("--engines", default="sqlite,postgresql")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    engines = args.engines.split(",")

    if "sqlite" in engines:
        run_engine("SQLite", lambda size: sqlite_file(size, args.keep), sizes, args.repeat)
    base = os.environ.get("DIGESTBOT_TEST_POSTGRES_URL")
    if "postgresql" not in engines:
        return
    if not base:
        print("\n(PostgreSQL skipped: DIGESTBOT_TEST_POSTGRES_URL is not set)")
        return

    def pg(size: int) -> contextlib.AbstractContextManager[str]:
        return postgres_kept(base, size) if args.keep else postgres_schema(base, "growth")

    run_engine("PostgreSQL", pg, sizes, args.repeat)


if __name__ == "__main__":
    main()
