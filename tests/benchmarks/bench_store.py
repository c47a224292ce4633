"""Store benchmark: 5,000 episodes through ``upsert_episodes`` (new, all unchanged, 1 %
changed) and the listener-path reads, on SQLite and (when ``DIGESTBOT_TEST_POSTGRES_URL`` is
set) PostgreSQL in a throw-away schema. Run: ``python -m tests.benchmarks.bench_store``.

Prints medians (an unchanged upsert also split into its state read and its pure decision),
statements issued, and the ratio of a naive one-query-per-episode check of
the same unchanged feed to ours.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import sqlalchemy as sa

from digests.decide.update import decide_upsert
from digests.models import Episode, PullRequestRef
from digests.store import Store
from digests.store.schema import episodes, shows
from tests.fixtures.store import postgres_schema

NOW = datetime(2026, 11, 30, tzinfo=UTC)


def make(n: int, suffix: str = "") -> Episode:
    return Episode(
        guid=f"pytorch-{n:05d}",
        show="PyTorch",
        title=f"PyTorch: Episode {n}",
        headline=f"Episode {n}",
        summary=f"Compiler and sharding news, part {n}{suffix}.",
        published_at=datetime(2020, 1, 1, tzinfo=UTC) + timedelta(hours=n),
        duration_seconds=150 + n % 90,
        url=f"https://example.test/pytorch/{n}",
        pull_requests=tuple(
            PullRequestRef(
                number=190000 + n * 3 + i,
                url=f"https://github.com/pytorch/pytorch/pull/{190000 + n * 3 + i}",
                context=f"PR {190000 + n * 3 + i} does a thing.",
            )
            for i in range(3)
        ),
        transcript=" ".join(["inductor kernels and collectives"] * 40) + f" {n}",
    )


def timed(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


@contextmanager
def counting(store: Store) -> Iterator[list[str]]:
    statements: list[str] = []

    def record(*args: object) -> None:
        statements.append(str(args[2]))

    sa.event.listen(store.engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", record)


def naive_unchanged_check(store: Store, batch: list[Episode]) -> None:
    """What an N+1 upsert costs just to learn nothing changed: one SELECT per episode."""
    with store.engine.connect() as conn:
        for episode in batch:
            conn.execute(
                sa.select(episodes.c.content_hash)
                .select_from(episodes.join(shows, episodes.c.show_id == shows.c.id))
                .where(shows.c.name == episode.show, episodes.c.guid == episode.guid)
            ).first()


def run(url: str, label: str, count: int, repeat: int) -> None:
    store = Store.open(url)
    try:
        batch = [make(n) for n in range(count)]
        start = time.perf_counter()
        store.upsert_episodes(batch, NOW)
        first = time.perf_counter() - start

        unchanged = timed(lambda: store.upsert_episodes(batch, NOW), repeat)
        with counting(store) as statements:
            store.upsert_episodes(batch, NOW)
        naive = timed(lambda: naive_unchanged_check(store, batch), max(1, repeat // 2))
        # The two halves of an unchanged upsert: reading the state, and the pure decision.
        read_state = timed(lambda: store.state_for_update(batch), repeat)
        state = store.state_for_update(batch)
        decide = timed(lambda: decide_upsert(state, batch, NOW), repeat)

        edited = [make(n, " (edited)") if n % 100 == 0 else make(n) for n in range(count)]
        start = time.perf_counter()
        results = store.upsert_episodes(edited, NOW)
        changed = time.perf_counter() - start
        n_changed = sum(r.status == "changed" for r in results)

        reads = {
            "recent(10)": lambda: store.recent(10),
            "episode(show, guid)": lambda: store.episode("PyTorch", "pytorch-02500"),
            "by_pr": lambda: store.by_pr(190000 + 2500 * 3),
            "by_title": lambda: store.by_title("Episode 2500"),
            "nearest": lambda: store.nearest(datetime(2020, 3, 1, tzinfo=UTC)),
            "search('sharding news')": lambda: store.search("sharding news"),
        }
        print(f"\n== {label}: {count} episodes, 3 PRs each, median of {repeat}")
        print(f"upsert, all new          {first * 1000:9.1f} ms")
        print(
            f"upsert, all unchanged    {unchanged * 1000:9.1f} ms"
            f"  ({len(statements)} SQL statements)"
        )
        print(f"  of which state read    {read_state * 1000:9.1f} ms")
        print(f"  of which decide (pure) {decide * 1000:9.1f} ms")
        print(
            f"naive per-episode check  {naive * 1000:9.1f} ms"
            f"  (ratio naive/ours {naive / unchanged:.1f}x)"
        )
        print(f"upsert, {n_changed} changed       {changed * 1000:9.1f} ms")
        for name, fn in reads.items():
            print(f"{name:24} {timed(fn, repeat * 5) * 1000:9.2f} ms")
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(f"sqlite:///{Path(tmp) / 'bench.sqlite3'}", "SQLite", args.count, args.repeat)
    base = os.environ.get("DIGESTBOT_TEST_POSTGRES_URL")
    if not base:
        print("\n(PostgreSQL skipped: DIGESTBOT_TEST_POSTGRES_URL is not set)")
        return
    with postgres_schema(base, "bench") as url:
        run(url, "PostgreSQL", args.count, args.repeat)


if __name__ == "__main__":
    main()
