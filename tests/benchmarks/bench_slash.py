"""Signed `/episodes recent` under load: the real app vs a bare Starlette endpoint, same run.

    .venv/bin/python -m tests.benchmarks.bench_slash [--requests 2000] [--concurrency 1 10 50]
                                                    [--database-url postgresql+psycopg://…]
                                                    [--no-cache] [--rounds 3] [--metrics]

Each server runs in its own process (uvicorn, same settings, the same ``serve()`` and
``listen()`` socket, so both get TCP_NODELAY) so the aiohttp load generator does not share a
GIL with it; the client keeps its connections alive, as a proxy in front of ``serve`` does.
The app's store (SQLite in a temp dir by default) is seeded from the test feed served on
loopback; the bare endpoint returns the exact JSON the app answered. Prints p50/p95/p99
latency and throughput per concurrency, and app/bare ratios; then, on one kept-alive
connection, GET /healthz of the app, the bare endpoint, and the bare endpoint served from a
socket without TCP_NODELAY (what ``listen()`` made before): the ~40 ms delayed-ACK stall.
``--metrics`` adds a third server, the app counting its metrics as ``serve`` does
(bot.ops.metrics), and prints its ratios to the app without.

Reading c=50: each server's "ran" + "runq" (schedstat) comes to ~100% of the run, so it is
never waiting on itself, only for a CPU on this shared machine; its latency is then about
c / throughput, and the app/bare ratio at c=50 follows CPU per request (×2.0 measured),
however low "CPU ms/req × req/s" makes the app's CPU use look.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[2]


# -- the servers (run with --serve in a child process) --------------------------------------


def _serve_app(
    port: int, database_url: str, api_url: str, cache_ttl: float, metered: bool = False
) -> None:
    from bot.delivery.slack import make_web_client
    from bot.listeners.app import build_app
    from bot.ops.metrics import Metrics, StoreCollector
    from bot.runtime import settle_heap
    from bot.server.asgi import build_asgi, serve
    from digests.render.renderer import Renderer
    from digests.store import Store
    from tests.fixtures.app import make_settings

    settings = make_settings(api_url)
    store = Store.open(database_url)
    app = build_app(
        settings,
        store,
        Renderer(tz=settings.tz),
        client=make_web_client(settings),
        reply_cache_ttl=cache_ttl,
    )
    metrics = None
    if metered:  # as bot.service's serve builds it (bot.process)
        metrics = Metrics(engine=store.engine.dialect.name)
        metrics.registry.register(StoreCollector(store, 900.0))
    settle_heap()  # as bot.service's serve does once the app is built
    asgi = build_asgi(app, store, metrics=metrics)
    asyncio.run(serve(settings, asgi, host="127.0.0.1", port=port))


def _serve_bare(port: int, body_path: str, nagle: bool = False) -> None:
    import socket

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from bot.runtime import settle_heap
    from bot.server.asgi import serve
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
    sock = None
    if nagle:
        # The old listen(): protocol 0, so asyncio never sets TCP_NODELAY on connections.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
    settle_heap()  # the same process set-up as the app's server
    asyncio.run(serve(Settings(), bare, host="127.0.0.1", port=port, sock=sock))


# -- the load generator -------------------------------------------------------------------


@dataclass
class Result:
    name: str
    concurrency: int
    latencies_ms: list[float]
    seconds: float
    cpu_seconds: float  # the server process's user+system CPU during the measured load
    # The server's main thread, from the scheduler (Linux schedstat): seconds it ran, and
    # seconds it was runnable but waited for a CPU. Their sum near ``seconds`` means it
    # never slept: a low CPU share is the machine's other load, not a wait inside the app.
    run_seconds: float = 0.0
    runq_seconds: float = 0.0

    def pct(self, p: float) -> float:
        data = sorted(self.latencies_ms)
        index = min(len(data) - 1, max(0, round(p / 100 * len(data)) - 1))
        return data[index]

    @property
    def throughput(self) -> float:
        return len(self.latencies_ms) / self.seconds

    @property
    def cpu_ms(self) -> float:
        """Server CPU per request: unlike latency, barely moved by others' load."""
        return self.cpu_seconds * 1000 / len(self.latencies_ms)


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _schedstat(pid: int) -> tuple[float, float]:
    """(seconds run, seconds waited on a run queue) of a process's main thread; zeros where
    the kernel does not keep them."""
    try:
        fields = Path(f"/proc/{pid}/schedstat").read_text().split()
        return int(fields[0]) / 1e9, int(fields[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0, 0.0


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(args: list[str], port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.benchmarks.bench_slash", "--serve", *args],
        cwd=ROOT,
        # Settings read the environment first: keep a real token or URL out of the child.
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("SLACK_")},
            "PYTHONPATH": str(ROOT),
        },
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


async def _measure(
    name: str, pid: int, url: str, body: bytes, total: int, concurrency: int
) -> Result:
    await _load(url, body, min(200, total), concurrency)  # warm-up: connections, caches
    # A full collection of this process (the load generator: SQLAlchemy, the fakes, every
    # result so far) stalls every request in flight: one took 121 ms inside the first c=50
    # run, of whichever server was being measured, and was that run's p99. Collected here,
    # not during the load: the same for both servers.
    gc.collect()
    gc.disable()
    try:
        cpu, (run, runq) = _cpu_seconds(pid), _schedstat(pid)
        latencies, seconds = await _load(url, body, total, concurrency)
        run_after, runq_after = _schedstat(pid)
    finally:
        gc.enable()
    return Result(
        name,
        concurrency,
        latencies,
        seconds,
        _cpu_seconds(pid) - cpu,
        run_seconds=run_after - run,
        runq_seconds=runq_after - runq,
    )


def _median(results: list[Result], stat: Callable[[Result], float]) -> float:
    return statistics.median(stat(r) for r in results)


def _median_pct(results: list[Result], p: float) -> float:
    return statistics.median(r.pct(p) for r in results)


def _report(results: list[Result]) -> None:
    """Medians over rounds (each round measures app and bare back to back)."""
    print(
        f"{'server':<6} {'conc':>4} {'rounds':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} "
        f"{'req/s':>8} {'CPU ms/req':>10} {'ran':>5} {'runq':>5}   p99 per round"
    )
    groups: dict[tuple[str, int], list[Result]] = {}
    for r in results:
        groups.setdefault((r.name, r.concurrency), []).append(r)
    for (name, c), rs in groups.items():
        rounds = " ".join(f"{r.pct(99):.1f}" for r in rs)
        print(
            f"{name:<6} {c:>4} {len(rs):>6} {_median_pct(rs, 50):>8.2f} "
            f"{_median_pct(rs, 95):>8.2f} {_median_pct(rs, 99):>8.2f} "
            f"{_median(rs, lambda r: r.throughput):>8.0f} {_median(rs, lambda r: r.cpu_ms):>10.3f}"
            f" {_median(rs, lambda r: r.run_seconds / r.seconds):>5.0%}"
            f" {_median(rs, lambda r: r.runq_seconds / r.seconds):>5.0%}   {rounds}"
        )
    print(
        "ran / runq: share of the run the server ran / was runnable but waited for a CPU "
        "(their sum near 100% means it never waited on anything else)"
    )
    print("\nratios app / bare of the medians (latency: lower is better; throughput: app share)")
    for c in sorted({r.concurrency for r in results}):
        app, bare = groups[("app", c)], groups[("bare", c)]
        ratios = "  ".join(
            f"p{p} ×{_median_pct(app, p) / _median_pct(bare, p):.2f}" for p in (50, 95, 99)
        )
        share = _median(app, lambda r: r.throughput) / _median(bare, lambda r: r.throughput)
        cpu = _median(app, lambda r: r.cpu_ms) / _median(bare, lambda r: r.cpu_ms)
        print(f"  c={c:<3} {ratios}  throughput ×{share:.2f}  CPU/request ×{cpu:.2f}")


def _metrics_report(results: list[Result]) -> None:
    """The app with metrics against the app without, same run, medians over rounds."""
    groups: dict[tuple[str, int], list[Result]] = {}
    for r in results:
        groups.setdefault((r.name, r.concurrency), []).append(r)
    print("\nratios app+metrics / app of the medians (the cost of counting)")
    for c in sorted({r.concurrency for r in results}):
        m, app = groups[("app+m", c)], groups[("app", c)]
        ratios = "  ".join(
            f"p{p} ×{_median_pct(m, p) / _median_pct(app, p):.3f}" for p in (50, 95, 99)
        )
        share = _median(m, lambda r: r.throughput) / _median(app, lambda r: r.throughput)
        cpu = _median(m, lambda r: r.cpu_ms) / _median(app, lambda r: r.cpu_ms)
        print(f"  c={c:<3} {ratios}  throughput ×{share:.3f}  CPU/request ×{cpu:.3f}")


async def _keepalive_get(url: str, total: int) -> list[float]:
    """Sequential GETs on one kept-alive connection; latencies in ms."""
    latencies: list[float] = []
    connector = aiohttp.TCPConnector(limit=1, force_close=False)
    async with aiohttp.ClientSession(connector=connector) as session:
        for n in range(total + 20):
            start = time.perf_counter()
            async with session.get(url) as response:
                await response.read()
            if n >= 20:  # the first few open the connection and warm up
                latencies.append((time.perf_counter() - start) * 1000)
    return latencies


def _nagle_report(ports: dict[str, int], total: int) -> None:
    print(f"\nkept-alive GET /healthz, one connection, {total} sequential requests")
    print(f"{'server':<22} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    for name, port in ports.items():
        data = sorted(asyncio.run(_keepalive_get(f"http://127.0.0.1:{port}/healthz", total)))
        pct = [data[min(len(data) - 1, round(p / 100 * len(data)))] for p in (50, 95, 99)]
        print(f"{name:<22} {pct[0]:>8.2f} {pct[1]:>8.2f} {pct[2]:>8.2f}")


@contextlib.contextmanager
def _database(url: str | None, tmp: str) -> Iterator[str]:
    """SQLite in ``tmp``, or a scratch schema of the PostgreSQL ``url``, dropped afterwards."""
    if url is None or not url.startswith("postgresql"):
        yield url or f"sqlite:///{tmp}/bench.sqlite3"
        return
    from tests.fixtures.store import postgres_schema

    with postgres_schema(url, "bench_slash") as scratch:
        yield scratch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--rounds", type=int, default=3, help="app/bare pairs per concurrency")
    parser.add_argument("--database-url", default=None)
    parser.add_argument(
        "--no-cache", action="store_true", help="answer every command from the store (TTL 0)"
    )
    parser.add_argument(
        "--metrics",
        action="store_true",
        help="also the app with its metrics counting (bot.ops.metrics): ratio to the app",
    )
    parser.add_argument("--serve", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.serve:
        kind, port, *rest = args.serve
        if kind in ("app", "metered"):
            _serve_app(int(port), rest[0], rest[1], float(rest[2]), metered=kind == "metered")
        else:
            _serve_bare(int(port), rest[0], nagle=kind == "nagle")
        return 0

    from bot.listeners.commands.ttl import DEFAULT_TTL
    from digests.store import Store
    from tests.feedserver import FeedServer
    from tests.fixtures.app import SlackSender, seed_store
    from tests.slackfake import SlackFake

    with (
        tempfile.TemporaryDirectory() as tmp,
        SlackFake() as fake,
        FeedServer() as feeds,
        _database(args.database_url, tmp) as database_url,
    ):
        store = Store.open(database_url)
        episodes = seed_store(store, feeds)
        store.close()
        print(
            f"store: {database_url.split('://')[0]}, {len(episodes)} episodes; "
            f"{args.requests} signed `/episodes recent` per run; reply cache: "
            f"{'off' if args.no_cache else f'{DEFAULT_TTL:g} s'}; "
            f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)"
        )

        app_port, bare_port = _free_port(), _free_port()
        ttl = "0" if args.no_cache else str(DEFAULT_TTL)
        app_proc = _start(["app", str(app_port), database_url, fake.api_url, ttl], app_port)
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
            metered = None
            if args.metrics:
                m_port = _free_port()
                m_args = ["metered", str(m_port), database_url, fake.api_url, ttl]
                metered = (_start(m_args, m_port), m_port)
            try:
                results: list[Result] = []
                servers = [("app", app_port, app_proc.pid), ("bare", bare_port, bare_proc.pid)]
                if metered is not None:
                    servers.append(("app+m", metered[1], metered[0].pid))
                for c in args.concurrency:
                    for n in range(args.rounds):
                        # Rotate who goes first: the machine is shared and load drifts.
                        turn = n % len(servers)
                        for name, port, pid in servers[turn:] + servers[:turn]:
                            url = f"http://127.0.0.1:{port}/slack/events"
                            result = asyncio.run(_measure(name, pid, url, body, args.requests, c))
                            results.append(result)
                _report(results)
                if metered is not None:
                    _metrics_report(results)
                nagle_port = _free_port()
                nagle_proc = _start(["nagle", str(nagle_port), str(body_file)], nagle_port)
                try:
                    ports = {"app": app_port, "bare": bare_port, "bare, no TCP_NODELAY": nagle_port}
                    _nagle_report(ports, 200)
                finally:
                    nagle_proc.terminate()
                    nagle_proc.wait(10)
                print(f"\nload average after: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
            finally:
                bare_proc.terminate()
                bare_proc.wait(10)
                if metered is not None:
                    metered[0].terminate()
                    metered[0].wait(10)
        finally:
            app_proc.terminate()
            app_proc.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
