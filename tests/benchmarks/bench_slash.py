"""Signed `/episodes recent` under load: the real app vs a bare Starlette endpoint, same run.

    .venv/bin/python -m tests.benchmarks.bench_slash [--requests 2000] [--concurrency 1 10 50]
                                                    [--database-url postgresql+psycopg://…]

Each server runs in its own process (uvicorn, same settings) so the aiohttp load generator
does not share a GIL with it. The app's store (SQLite in a temp dir by default) is seeded
from the test feed served on loopback; the bare endpoint returns the exact JSON the app
answered. Prints p50/p95/p99 latency and throughput per concurrency, and app/bare ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[2]


# -- the servers (run with --serve in a child process) --------------------------------------


def _serve_app(port: int, database_url: str, api_url: str) -> None:
    from bot.app import build_app
    from bot.server import build_asgi, serve
    from bot.slack import make_web_client
    from digests.render import Renderer
    from digests.store import Store
    from tests.fixtures.app import make_settings

    settings = make_settings(api_url)
    store = Store.open(database_url)
    app = build_app(settings, store, Renderer(tz=settings.tz), client=make_web_client(settings))
    asyncio.run(serve(settings, build_asgi(app, store), host="127.0.0.1", port=port))


def _serve_bare(port: int, body_path: str) -> None:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from bot.server import serve
    from config.settings import Settings

    body = Path(body_path).read_bytes()

    async def events(request: Request) -> Response:
        await request.body()
        return Response(body, media_type="application/json")

    async def healthz(request: Request) -> Response:
        return Response(b'{"ok": true}', media_type="application/json")

    bare = Starlette(
        routes=[
            Route("/slack/events", events, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
        ]
    )
    asyncio.run(serve(Settings(), bare, host="127.0.0.1", port=port))


# -- the load generator -------------------------------------------------------------------


@dataclass
class Result:
    name: str
    concurrency: int
    latencies_ms: list[float]
    seconds: float

    def pct(self, p: float) -> float:
        data = sorted(self.latencies_ms)
        index = min(len(data) - 1, max(0, round(p / 100 * len(data)) - 1))
        return data[index]

    @property
    def throughput(self) -> float:
        return len(self.latencies_ms) / self.seconds


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(args: list[str], port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.benchmarks.bench_slash", "--serve", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    deadline = time.monotonic() + 30
    import urllib.request

    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.05)
    proc.terminate()
    raise SystemExit(f"server {args} did not start")


def _signed(body: bytes) -> dict[str, str]:
    from tests.fixtures.app import SIGNING_SECRET, sign

    ts = int(time.time())
    return {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": str(ts),
        "X-Slack-Signature": sign(SIGNING_SECRET, ts, body),
    }


async def _load(url: str, body: bytes, total: int, concurrency: int) -> tuple[list[float], float]:
    latencies: list[float] = []
    remaining = total
    connector = aiohttp.TCPConnector(limit=concurrency, force_close=False)
    async with aiohttp.ClientSession(connector=connector) as session:
        headers = _signed(body)

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                start = time.perf_counter()
                async with session.post(url, data=body, headers=headers) as response:
                    await response.read()
                    if response.status != 200:
                        raise SystemExit(f"{url}: HTTP {response.status}")
                latencies.append((time.perf_counter() - start) * 1000)

        began = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return latencies, time.perf_counter() - began


async def _measure(name: str, url: str, body: bytes, total: int, concurrency: int) -> Result:
    await _load(url, body, min(200, total), concurrency)  # warm-up: connections, caches
    latencies, seconds = await _load(url, body, total, concurrency)
    return Result(name, concurrency, latencies, seconds)


def _report(results: list[Result]) -> None:
    print(
        f"{'server':<6} {'conc':>4} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} "
        f"{'mean ms':>8} {'req/s':>8}"
    )
    for r in results:
        print(
            f"{r.name:<6} {r.concurrency:>4} {len(r.latencies_ms):>5} {r.pct(50):>8.2f} "
            f"{r.pct(95):>8.2f} {r.pct(99):>8.2f} {statistics.fmean(r.latencies_ms):>8.2f} "
            f"{r.throughput:>8.0f}"
        )
    print("\nratios app / bare (latency: lower is better; throughput: app share of bare)")
    by = {(r.name, r.concurrency): r for r in results}
    for c in sorted({r.concurrency for r in results}):
        app, bare = by[("app", c)], by[("bare", c)]
        ratios = "  ".join(f"p{p} ×{app.pct(p) / bare.pct(p):.2f}" for p in (50, 95, 99))
        print(f"  c={c:<3} {ratios}  throughput ×{app.throughput / bare.throughput:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--serve", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.serve:
        kind, port, *rest = args.serve
        if kind == "app":
            _serve_app(int(port), rest[0], rest[1])
        else:
            _serve_bare(int(port), rest[0])
        return 0

    from digests.store import Store
    from tests.feedserver import FeedServer
    from tests.fixtures.app import SlackSender, seed_store
    from tests.slackfake import SlackFake

    with tempfile.TemporaryDirectory() as tmp, SlackFake() as fake, FeedServer() as feeds:
        database_url = args.database_url or f"sqlite:///{tmp}/bench.sqlite3"
        store = Store.open(database_url)
        episodes = seed_store(store, feeds)
        store.close()
        print(
            f"store: {database_url.split('://')[0]}, {len(episodes)} episodes; "
            f"{args.requests} signed `/episodes recent` per run"
        )

        app_port, bare_port = _free_port(), _free_port()
        app_proc = _start(["app", str(app_port), database_url, fake.api_url], app_port)
        try:
            sender = SlackSender(f"http://127.0.0.1:{app_port}", fake)
            body = sender.slash_body("recent", response_url="https://hooks.invalid/r/1")
            answer = sender.post(body, "application/x-www-form-urlencoded")
            sender.close()
            assert answer.status_code == 200, answer.text
            assert json.loads(answer.content)["blocks"], "the app answered no blocks"
            body_file = Path(tmp) / "answer.json"
            body_file.write_bytes(answer.content)
            print(f"reply: {len(answer.content)} bytes of JSON\n")
            bare_proc = _start(["bare", str(bare_port), str(body_file)], bare_port)
            try:
                results: list[Result] = []
                for c in args.concurrency:
                    for name, port in (("app", app_port), ("bare", bare_port)):
                        url = f"http://127.0.0.1:{port}/slack/events"
                        results.append(asyncio.run(_measure(name, url, body, args.requests, c)))
                _report(results)
            finally:
                bare_proc.terminate()
                bare_proc.wait(10)
        finally:
            app_proc.terminate()
            app_proc.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
