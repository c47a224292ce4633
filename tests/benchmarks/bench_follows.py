"""Follow DMs benchmark. Run: ``python -m tests.benchmarks.bench_follows [--postgres URL]``.

One new episode naming 10 PRs, followed by ``--users`` people (default 10,000) in
``--teams`` workspaces (default 100; each follows the show in one channel): the follows
are read and decided (``bot.jobs.follows.episode_dms``), then the DMs delivered through
:class:`bot.delivery.Deliverer` (ledger included) to the Slack fake at 50 ms a call.
Compared in the same run with the ideal for the deliverer's bound (calls × latency ÷
bound) and with a bare client making the same calls under the same bound. Each person
follows one of the ten PRs, so each gets one DM.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy as sa

from bot.delivery.deliverer import Deliverer
from bot.delivery.outbox import SlackOutbox
from bot.jobs.follows import episode_dms
from digests.models import Episode, PullRequestRef
from digests.store import Store
from digests.store.schema import follows
from tests.benchmarks.bench_delivery import LATENCY, _Db, bare, client, slack_api

NOW = datetime(2026, 10, 5, 14, 0, tzinfo=UTC)
PRS = tuple(range(199720, 199730))


def episode() -> Episode:
    return Episode(
        guid="pytorch-2026-10-05",
        show="PyTorch",
        title="PyTorch: Ten PRs",
        headline="Ten PRs",
        summary="Ten pull requests move.",
        published_at=NOW,
        url="https://example.test/pytorch/2026-10-05",
        pull_requests=tuple(
            PullRequestRef(n, f"https://github.com/pytorch/pytorch/pull/{n}", f"PR {n} lands.")
            for n in PRS
        ),
    )


def seed(store: Store, users: int, teams: int) -> None:
    store.ensure_show("PyTorch", "", "pytorch/pytorch")
    for t in range(teams):
        store.subscribe(f"T{t:05d}", f"C{t:09d}", "PyTorch")
    rows = [
        {
            "team_id": f"T{u % teams:05d}",
            "user_id": f"U{u:09d}",
            "kind": "pr",
            "target": f"https://github.com/pytorch/pytorch/pull/{PRS[u % len(PRS)]}",
            "created_at": NOW,
        }
        for u in range(users)
    ]
    with store._db.transaction("seeding follows") as conn:
        conn.execute(sa.insert(follows), rows)


async def measure(db: _Db, users: int, teams: int, bound: int) -> None:
    store = Store.open(db.url())
    seed(store, users, teams)
    with slack_api(False, LATENCY) as api_url:
        t, c = time.perf_counter(), time.process_time()
        dms = await asyncio.to_thread(episode_dms, store, [episode()])
        decided, decided_cpu = time.perf_counter() - t, time.process_time() - c
        assert len(dms) == users, len(dms)
        outbox = SlackOutbox(client(api_url), client(api_url, retry=False))
        deliverer = Deliverer(store, outbox, concurrency=bound)
        t, c = time.perf_counter(), time.process_time()
        report = await deliverer.deliver(dms)
        elapsed, cpu = time.perf_counter() - t, time.process_time() - c
        assert len(report.posted) == users, report.failed
        await deliverer.aclose()
        await outbox.close()
        message = dict(dms[0].message)
        floor = await bare(api_url, [d.channel_id for d in dms[:2000]], message, message, bound)
    store.close()
    ideal = users * LATENCY / bound
    # The bare client made 2 calls per person for 2,000 people: scaled to one per person.
    floor = floor / 2 / 2000 * users
    print(f"follow DMs: 1 episode naming {len(PRS)} PRs, {users:,} people in {teams} workspaces")
    print(f"  decided        {decided:7.2f} s ({decided_cpu:.2f} s CPU): {len(dms):,} DMs")
    print(f"  delivered      {elapsed:7.2f} s ({cpu:.2f} s CPU), {report.calls:,} calls")
    print(f"  ideal          {ideal:7.2f} s  (calls × {LATENCY * 1000:.0f} ms / bound {bound})")
    print(f"  bare client    {floor:7.2f} s  (same calls and bound, no ledger; scaled)")
    print(f"  ratio          {(decided + elapsed) / ideal:7.2f}× ideal (decided + delivered)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--teams", type=int, default=100)
    parser.add_argument("--bound", type=int, default=20, help="the deliverer's calls in flight")
    parser.add_argument("--postgres", help="a PostgreSQL URL (default: SQLite)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = _Db(args.postgres, Path(tmp))
        try:
            asyncio.run(measure(db, args.users, args.teams, args.bound))
        finally:
            db.cleanup()


if __name__ == "__main__":
    main()
