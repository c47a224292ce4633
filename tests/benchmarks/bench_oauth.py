"""OAuth-mode fan-out benchmark. Run: ``python -m tests.benchmarks.bench_oauth [--postgres URL]``.

One episode (digest + its thread reply) to 1,000 channels across 100 installed teams, each
post with its own team's token (:class:`bot.delivery.tokens.TeamOutbox`: tokens cached, one query
for all teams), through the Slack fake in its own process at 50 ms per call — against, in
the same run, today's single-team fan-out of ``bench_delivery`` (one token, ``SlackOutbox``)
over the same channels. Target: within 1.1× of the single-team run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from slack_sdk.oauth.installation_store.models.installation import Installation

from bot.delivery.deliverer import Deliverer
from bot.delivery.items import Delivery
from bot.delivery.outbox import Outbox, SlackOutbox
from bot.delivery.tokens import team_outbox
from digests.render.renderer import Renderer
from digests.store import Store
from digests.store.installations import Installations
from tests.benchmarks.bench_delivery import LATENCY, ROOT, TEAM, _Db, client, episode
from tests.fixtures.app import make_settings
from tests.slackfake import CLIENT_ID, CLIENT_SECRET, bench_team, bench_token


@contextmanager
def fake_process(teams: int) -> Iterator[str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.slackfake",
            "--port",
            "0",
            "--latency",
            str(LATENCY),
            "--teams",
            str(teams),
        ],
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


async def install(url: str, teams: int) -> None:
    installations = Installations(url, CLIENT_ID)
    try:
        for n in range(teams):
            team = bench_team(n)
            await installations.store.async_save(
                Installation(
                    app_id="A0BENCH",
                    team_id=team,
                    bot_token=bench_token(team),
                    bot_id=f"B{team}",
                    bot_user_id=f"U{team}",
                    user_id=f"U0INST{team}",
                )
            )
    finally:
        await installations.close()


async def one_round(
    url: str, outbox: Outbox, teams: list[str], channels: list[str], bound: int
) -> float:
    renderer = Renderer()
    ep = episode()
    message = dict(renderer.digest(ep))
    replies = tuple(dict(m) for m in renderer.thread_reply(ep))
    store = Store.open(url)
    deliverer = Deliverer(store, outbox, concurrency=bound)
    key = "PyTorch:" + ep.guid
    items = [
        Delivery(teams[i % len(teams)], ch, "episode", key, message, replies, ep.content_hash())
        for i, ch in enumerate(channels)
    ]
    t = time.perf_counter()
    report = await deliverer.deliver(items)
    elapsed = time.perf_counter() - t
    assert len(report.posted) == len(channels), (report.failed, report.stopped_teams)
    await deliverer.aclose()
    await outbox.close()
    store.close()
    return elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--channels", type=int, default=1000)
    parser.add_argument("--teams", type=int, default=100)
    parser.add_argument("--bound", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--postgres", metavar="URL")
    args = parser.parse_args()
    channels = [f"C{n:09d}" for n in range(args.channels)]
    teams = [bench_team(n) for n in range(args.teams)]
    single, many = [], []
    with tempfile.TemporaryDirectory() as tmp, fake_process(args.teams) as api_url:
        db = _Db(args.postgres, Path(tmp))
        try:
            for _ in range(args.rounds):
                url = db.url()
                Store.open(url).close()
                outbox = SlackOutbox(client(api_url), client(api_url, retry=False))
                single.append(await one_round(url, outbox, [TEAM], channels, args.bound))
                url = db.url()
                Store.open(url).close()
                await install(url, args.teams)
                settings = make_settings(
                    api_url,
                    token=None,
                    slack_client_id=CLIENT_ID,  # type: ignore[arg-type]
                    slack_client_secret=CLIENT_SECRET,
                    database_url=url,
                )
                many.append(
                    await one_round(url, team_outbox(settings, None), teams, channels, args.bound)
                )
        finally:
            db.cleanup()
    print(f"database: {'PostgreSQL' if args.postgres else 'SQLite file'}; fake in its own process")
    print(
        f"fan-out: 1 episode → {args.channels} channels, latency {LATENCY * 1000:.0f} ms, "
        f"bound {args.bound}"
    )
    print(
        f"  single team (one token)      {statistics.median(single):6.2f} s median, "
        f"{min(single):.2f} s best of {args.rounds}"
    )
    print(
        f"  {args.teams} teams (token per team)  {statistics.median(many):6.2f} s median, "
        f"{min(many):.2f} s best of {args.rounds}"
    )
    ratio = statistics.median(many) / statistics.median(single)
    print(f"  ratio                        {ratio:6.2f}× (median / median)")


if __name__ == "__main__":
    asyncio.run(main())
