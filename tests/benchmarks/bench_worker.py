"""Polling many feeds with ``digestbot worker``. Run:
``python -m tests.benchmarks.bench_worker --postgres URL [--feeds 2000,20000] [--workers 2]``.

Each size in a fresh PostgreSQL schema: ``N`` shows in the config file, each its own feed
on a local feed server (its own process) that answers 304 after ``--latency`` seconds (100
ms) to the ETag the store already has — a deployment whose feeds did not change. ``--workers``
real worker processes (default settings: 16 jobs and 16 fetches each) poll them:

- round 1: the workers' start-up dispatch; every show's first unchanged poll (it plans the
  show once: the poll phases' cache is empty);
- round 2: every show due again at once (``next_poll_at`` moved to now), picked up by the
  next minute's dispatch: the steady state of a round of 304s.

A round's time is from its first poll to its last (the shows' ``last_polled_at``); the
floor is ``N × latency ÷ (workers × FETCH_CONCURRENCY)``. RSS of each worker once up (its settings,
the file's N shows, read) and its peak (VmHWM) after each round: the growth flat in ``N``
if a poll job holds one show's state, not a round's.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa

from digests.store import Store
from digests.store.schema import shows
from tests.fixtures.store import postgres_schema
from tests.slackfake import DEFAULT_TOKEN
from tests.workerprocs import ROOT, WorkerProcess, wait_for, worker_env

FEED_SERVER = """
import sys, threading
from tests.feedserver import FeedServer
from tests.fixtures.delivery import rss, rss_item
body = rss(rss_item(1))
server = FeedServer()
server.queue_size = 1024
server.start()
for n in range(int(sys.argv[1])):
    server.route(f"/f/{n}.xml", body, etag=f'"e{n}"', delay=float(sys.argv[2]))
print(server.base_url, flush=True)
threading.Event().wait()
"""


def spawn_line(args: list[str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def write_config(path: Path, base: str, feeds: int) -> Path:
    lines = ['timezone = "UTC"', "thread_replies = false"]
    for n in range(feeds):
        lines += ["[[shows]]", f'name = "Show{n:05d}"', f'feed = "{base}/f/{n}.xml"']
    lines += ["[schedule]", "poll_minutes = 15", "jitter_seconds = 0"]
    path.write_text("\n".join(lines) + "\n")
    return path


def polled_since(engine: sa.Engine, since: datetime) -> tuple[int, float, int]:
    """Shows polled since ``since``: how many, from the first to the last (s), how many
    of them not answered 304 cleanly (an error or a new ETag)."""
    query = sa.text(
        "SELECT count(*), extract(epoch FROM max(last_polled_at) - min(last_polled_at)),"
        " count(*) FILTER (WHERE failures > 0 OR etag <> '\"e' || substr(name, 5)::int || '\"')"
        " FROM shows WHERE last_polled_at >= :since"
    )
    with engine.connect() as conn:
        count, span, bad = conn.execute(query, {"since": since}).one()
    return int(count), float(span or 0.0), int(bad)


def one_size(base_url: str, feeds: int, workers: int, latency: float, api_url: str) -> None:
    with postgres_schema(base_url, prefix="bench") as url, tempfile.TemporaryDirectory() as tmp:
        feed_proc, feed_base = spawn_line(
            [sys.executable, "-c", FEED_SERVER, str(feeds), str(latency)]
        )
        store = Store.open(url)
        engine = store.engine
        try:
            with engine.begin() as conn:
                conn.execute(sa.insert(shows), [
                    {"name": f"Show{n:05d}", "feed": f"{feed_base}/f/{n}.xml",
                     "repo": "pytorch/pytorch", "etag": f'"e{n}"'}
                    for n in range(feeds)
                ])  # fmt: skip
            config = write_config(Path(tmp) / "d.toml", feed_base, feeds)
            env = worker_env(url, config, api_url, DEFAULT_TOKEN, SLACK_POST_INTERVAL="1")
            floor = feeds * latency / (workers * 16)
            print(f"{feeds} feeds, {workers} workers, {latency * 1000:.0f} ms a feed; "
                  f"floor {floor:.1f} s (feeds × latency ÷ 32 fetches at once)")  # fmt: skip
            started = datetime.now(UTC)
            procs = [WorkerProcess(env, f"w{n + 1}") for n in range(workers)]
            try:
                # Up: its settings (the file's N shows) read, before its first job.
                assert wait_for(lambda: all(w.up for w in procs), timeout=600, every=0.05)
                print(f"  RSS per worker once up {[w.rss_kb() // 1024 for w in procs]} MB")
                for label, since in (("round 1 (first unchanged)", started), ("round 2", None)):
                    if since is None:
                        since = datetime.now(UTC)
                        with engine.begin() as conn:  # every show due again, now
                            conn.execute(sa.update(shows).values(next_poll_at=since))
                    t = time.monotonic()
                    done = wait_for(
                        lambda s=since: polled_since(engine, s)[0] >= feeds,
                        timeout=3600, every=1.0,
                    )  # fmt: skip
                    waited = time.monotonic() - t
                    count, span, bad = polled_since(engine, since)
                    rss = [w.peak_rss_kb() // 1024 for w in procs]
                    print(f"  {label}: {count} polled ({bad} not 304), first to last poll "
                          f"{span:.1f} s ({count / max(span, 0.001):.0f} feeds/s; "
                          f"{span / floor:.2f}× the floor); {waited:.0f} s waited; "
                          f"peak RSS per worker {rss} MB")  # fmt: skip
                    assert done and not bad
            finally:
                for w in procs:
                    w.stop()
        finally:
            store.close()
            feed_proc.terminate()
            feed_proc.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--postgres", metavar="URL", required=True)
    parser.add_argument("--feeds", default="2000,20000", help="sizes, comma-separated")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--latency", type=float, default=0.1)
    args = parser.parse_args()
    slack, api_url = spawn_line([sys.executable, "-m", "tests.slackfake", "--port", "0"])
    try:
        for size in (int(s) for s in args.feeds.split(",")):
            one_size(args.postgres, size, args.workers, args.latency, api_url)
    finally:
        slack.terminate()
        slack.wait(timeout=10)


if __name__ == "__main__":
    main()
