"""Hostile inputs, peak memory with same-run baselines.

    .venv/bin/python -m tests.benchmarks.bench_hostile [--bomb-mb 1024] [--chunked-mb 200]
                                                      [--code DIR]

``--code DIR`` runs the children (fetcher, app) from another checkout, e.g. an export of an
older main, for before/after numbers on the same machine in the same hour.

1. Feeds: each fetched by ``digests.sources.fetch.fetch_sync`` in a fresh child process, which
   reports its own peak RSS (``VmHWM``) and what it had before fetching. Baselines: a small
   feed and a plain 20 MB feed (at the cap); then gzip bombs of zeros stacked 1, 2 and 3
   layers deep, at ``--bomb-mb`` decoded (a few KB to a MB on the wire).
2. ``POST /slack/events``: the real app under uvicorn in a child process (``serve()``, as
   production); its peak RSS after a warm-up of 200 signed ``/episodes help`` commands
   (baseline), then after an unsigned chunked POST of ``--chunked-mb``, then after one with
   forged (well-formed) signature headers. The sender counts what it got to send before
   the server answered.

3. The event loop: the app under uvicorn with a poll of a 19.9 MB feed running on the same
   loop over and over (``bot.jobs.pipeline.poll_show``, as ``digestbot run`` does); signed
   ``/episodes help`` latency meanwhile, beside the same app with no poll running.
"""

from __future__ import annotations

import argparse
import os
import select
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from tests.hostile import MB, chunked_request, encoding_header, fetch_peak_in_child, zeros_bomb

ROOT = Path(__file__).resolve().parents[2]
CAP = 20 * MB


# 1. feeds ---------------------------------------------------------------------------------


def _feed_row(name: str, wire: int, url: str, code: str | None) -> None:
    began = time.perf_counter()
    peak = fetch_peak_in_child(url, max_bytes=CAP, timeout=600, code=code)
    took = time.perf_counter() - began
    outcome = "ok" if peak.error is None else peak.error.rsplit(": ", 1)[-1]
    print(
        f"{name:<28} {wire:>12,} {peak.before / MB:>9.1f} {peak.peak / MB:>9.1f} "
        f"{peak.grew / MB:>9.1f} {took:>7.2f}  {outcome}"
    )


def bench_feeds(bomb_mb: int, code: str | None) -> None:
    from tests.benchmarks.bench_fetch import feed_bytes
    from tests.feedserver import FeedServer

    print(f"feeds, cap {CAP // MB} MB; each fetched in a fresh child (RSS in MB)")
    print(
        f"{'case':<28} {'wire bytes':>12} {'before':>9} {'peak':>9} {'grew':>9} {'s':>7}  outcome"
    )
    with FeedServer() as server:
        small = feed_bytes(20 * 1024)
        _feed_row("baseline: 20 KB feed", len(small), server.route("/small.xml", small), code)
        plain = feed_bytes(CAP)
        url = server.route("/plain.xml", plain)
        _feed_row("baseline: 20 MB feed (cap)", len(plain), url, code)
        for layers in (1, 2, 3):
            body = zeros_bomb(bomb_mb * MB, layers)
            url = server.route(
                f"/bomb{layers}.xml", body, headers={"Content-Encoding": encoding_header(layers)}
            )
            _feed_row(f"gzip bomb {bomb_mb} MB, {layers} layer(s)", len(body), url, code)


# 2. chunked bodies --------------------------------------------------------------------------


def _serve(port: int, database_url: str, api_url: str, feed: str = "") -> None:
    """The app; with ``feed``, a poll of it running over and over on the same loop."""
    import asyncio
    from datetime import UTC, datetime

    from bot.delivery.slack import make_web_client
    from bot.jobs.pipeline import poll_show
    from bot.listeners.app import build_app
    from bot.server.asgi import build_asgi, serve
    from config.settings import ShowConfig
    from digests.render.renderer import Renderer
    from digests.sources.fetch import make_http_client
    from digests.store import Store
    from tests.fixtures.app import make_settings

    shows = [ShowConfig(name="Big", feed=feed)] if feed else []
    settings = make_settings(api_url, shows=shows, max_feed_bytes=CAP)
    store = Store.open(database_url)
    app = build_app(settings, store, Renderer(tz=settings.tz), client=make_web_client(settings))

    async def main() -> None:
        web = asyncio.ensure_future(
            serve(settings, build_asgi(app, store), host="127.0.0.1", port=port)
        )
        async with make_http_client() as http:
            while feed:
                await poll_show(settings, store, http, shows[0], datetime.now(UTC))
        await web

    asyncio.run(main())


def _rss(pid: int, field: str = "VmHWM") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def _start_app(
    code: str | None, database_url: str, api_url: str, feed: str = ""
) -> tuple[subprocess.Popen[bytes], int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.benchmarks.bench_hostile", "--serve",
         str(port), database_url, api_url, feed],
        cwd=code or ROOT,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("SLACK_")},
            "PYTHONPATH": str(code or ROOT),
        },
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).close()
            return proc, port
        except OSError:
            if time.monotonic() > deadline:
                proc.terminate()
                raise SystemExit("the app did not start") from None
            time.sleep(0.05)


def _send_chunked(port: int, total: int, headers: dict[str, str]) -> tuple[int, str]:
    """Send a chunked POST of up to ``total`` bytes, stopping once the server answers;
    (bytes of body sent, status line)."""
    request = chunked_request("127.0.0.1", port, "/slack/events", total)
    head = next(request)
    extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode()
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
        sock.sendall(head[:-2] + extra + b"\r\n")
        for piece in request:
            if select.select([sock], [], [], 0)[0]:
                break
            try:
                sock.sendall(piece)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(piece)
        answer = sock.recv(65536)
    return sent, answer.split(b"\r\n", 1)[0].decode(errors="replace")


def bench_chunked(chunked_mb: int, code: str | None) -> None:
    from digests.store import Store
    from tests.fixtures.app import SIGNING_SECRET, SlackSender, sign
    from tests.slackfake import SlackFake

    print("\nPOST /slack/events to the app under uvicorn (server RSS in MB)")
    with tempfile.TemporaryDirectory() as tmp, SlackFake() as fake:
        database_url = f"sqlite:///{tmp}/bench.sqlite3"
        Store.open(database_url).close()
        proc, port = _start_app(code, database_url, fake.api_url)
        try:
            print(f"{'case':<44} {'body sent':>12} {'answer':<24} {'peak RSS':>9}")
            print(f"{'started':<44} {'':>12} {'':<24} {_rss(proc.pid):>9.1f}")
            sender = SlackSender(f"http://127.0.0.1:{port}", fake)
            for _ in range(200):
                status = sender.slash("help").status_code
            help_body = sender.slash_body("help")
            sender.close()
            print(f"{'baseline: 200 signed /episodes help':<44} {'':>12} {status:<24} "
                  f"{_rss(proc.pid):>9.1f}")  # fmt: skip
            total = chunked_mb * MB
            sent, line = _send_chunked(port, total, {})
            print(f"{f'unsigned chunked {chunked_mb} MB':<44} {sent:>12,} {line[9:]:<24} "
                  f"{_rss(proc.pid):>9.1f}")  # fmt: skip
            ts = str(int(time.time()))
            forged = {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": "v0=" + "0" * 64}
            sent, line = _send_chunked(port, total, forged)
            print(f"{f'forged signature, chunked {chunked_mb} MB':<44} {sent:>12,} "
                  f"{line[9:]:<24} {_rss(proc.pid):>9.1f}")  # fmt: skip
            body = help_body + b"&pad=" + b"x" * (512 * 1024)
            headers = {
                "Content-Type": "application/x-www-form-urlencoded",
                "X-Slack-Request-Timestamp": ts,
                "X-Slack-Signature": sign(SIGNING_SECRET, int(ts), body),
            }
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/slack/events", data=body, headers=headers
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                status = response.status
            print(f"{'signed help + 512 KB (under the limit)':<44} {len(body):>12,} {status:<24} "
                  f"{_rss(proc.pid):>9.1f}")  # fmt: skip
        finally:
            proc.terminate()
            proc.wait(10)


# 3. the event loop ---------------------------------------------------------------------------


def _latencies(port: int, fake: object, count: int) -> list[float]:
    from tests.fixtures.app import SlackSender

    sender = SlackSender(f"http://127.0.0.1:{port}", fake)  # type: ignore[arg-type]
    out = []
    for _ in range(count):
        began = time.perf_counter()
        assert sender.slash("help").status_code == 200
        out.append((time.perf_counter() - began) * 1000)
        time.sleep(0.05)
    sender.close()
    return sorted(out)


def bench_loop(code: str | None, count: int) -> None:
    from digests.store import Store
    from tests.benchmarks.bench_fetch import feed_bytes
    from tests.feedserver import FeedServer
    from tests.slackfake import SlackFake

    print(f"\nsigned /episodes help while a 19.9 MB feed is polled on the same loop ({count} each)")
    print(f"{'case':<36} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'peak RSS':>9}")
    with tempfile.TemporaryDirectory() as tmp, SlackFake() as fake, FeedServer() as feeds:
        url = feeds.route("/big.xml", feed_bytes(CAP - CAP // 200))
        for name, feed in (("baseline: no poll running", ""), ("polling the 19.9 MB feed", url)):
            database_url = f"sqlite:///{tmp}/{len(feed)}.sqlite3"
            Store.open(database_url).close()
            proc, port = _start_app(code, database_url, fake.api_url, feed)
            try:
                if feed:  # let the first poll start before measuring
                    while not feeds.requests_to("/big.xml"):
                        time.sleep(0.05)
                data = _latencies(port, fake, count)
                p95 = data[min(len(data) - 1, round(0.95 * len(data)))]
                print(f"{name:<36} {data[len(data) // 2]:>8.1f} {p95:>8.1f} {data[-1]:>8.1f} "
                      f"{_rss(proc.pid):>9.1f}")  # fmt: skip
            finally:
                proc.terminate()
                proc.wait(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bomb-mb", type=int, default=1024, help="decoded size of each bomb")
    parser.add_argument("--chunked-mb", type=int, default=200)
    parser.add_argument("--skip-feeds", action="store_true")
    parser.add_argument("--code", default=None, help="run the children from this checkout")
    parser.add_argument("--loop-requests", type=int, default=60)
    parser.add_argument("--serve", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        _serve(int(args.serve[0]), args.serve[1], args.serve[2], args.serve[3])
        return 0
    code = str(Path(args.code).resolve()) if args.code else None
    print(f"code under test: {code or ROOT}")
    print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)\n")
    if not args.skip_feeds:
        bench_feeds(args.bomb_mb, code)
    bench_chunked(args.chunked_mb, code)
    bench_loop(code, args.loop_requests)
    print(f"\nload average after: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
