"""Idle RSS of `digestbot serve` on a 10k-episode store (the target: ≤ 100 MB).

Seeds 10,000 generated episodes over 20 shows (``bench_growth``'s archive: ~3 KB
transcripts, 6 PRs each) into SQLite, starts ``digestbot serve`` as a real process (the
Slack fake on loopback stands in for Slack), sends a few signed `/episodes` commands
(recent, latest, search, nearby, pr, week, help), waits until the process has used no CPU
for two seconds, and reads ``VmRSS`` (and the peak, ``VmHWM``) from ``/proc/PID/status``.
The same is read for a bare ``python -c 'import time; time.sleep(60)'`` as the floor::

    python -m tests.benchmarks.bench_rss [--episodes 10000] [--keep DIR] [--rounds 3]

``--keep DIR`` keeps the seeded SQLite file there for the next run (``bench_growth``'s
``--keep`` files are the same databases). ``--modules`` also prints the modules the idle
process has imported, by top-level package.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from digests.store import Store
from tests.benchmarks.bench_growth import ALL_CHANNEL, ONE_CHANNEL, SHOWS, TEAM, seed
from tests.fixtures.app import SlackSender
from tests.slackfake import SlackFake

ROOT = Path(__file__).resolve().parents[2]
SECRET = "bench-rss-signing-secret"
COMMANDS = ("recent", "latest", "search collectives", "nearby 2010-06-01", "week", "help")


def status(pid: int) -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` of ``pid`` in kB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0])
    return out


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wait_idle(pid: int, quiet: float = 2.0, timeout: float = 60.0) -> None:
    """Until ``pid`` has used at most 5% of a CPU for ``quiet`` seconds (polled every 0.25 s).

    Not "no CPU at all": uvicorn wakes ten times a second, and on a slow VM those wakes are
    charged a clock tick (10 ms) every half second or so (4 ticks in 2 s, measured on an
    idle ``serve``), so a strict test never ended there."""
    deadline = time.monotonic() + timeout
    allowed = _IDLE_SHARE * quiet * os.sysconf("SC_CLK_TCK")
    samples = [(time.monotonic(), cpu_ticks(pid))]
    while True:
        if time.monotonic() > deadline:
            raise SystemExit(f"process {pid} never went idle")
        time.sleep(0.25)
        now = (time.monotonic(), cpu_ticks(pid))
        samples.append(now)
        while len(samples) > 1 and now[0] - samples[1][0] >= quiet:
            samples.pop(0)
        first = samples[0]
        if now[0] - first[0] >= quiet and now[1] - first[1] <= allowed:
            return


_IDLE_SHARE = 0.05


def config_file(directory: Path) -> Path:
    path = directory / "digestbot.toml"
    lines = []
    for show in SHOWS:
        lines += [
            "[[shows]]",
            f'name = "{show}"',
            f'feed = "https://briefings.example/{show}.xml"',
            f'repo = "ex/{show.lower()}"',
            "",
        ]
    shows = ", ".join(f'"{s}"' for s in SHOWS)
    lines += ["[[channels]]", f'id = "{ALL_CHANNEL}"', f'team = "{TEAM}"', f"shows = [{shows}]"]
    lines += ["", "[[channels]]", f'id = "{ONE_CHANNEL}"', f'team = "{TEAM}"']
    lines += [f'shows = ["{SHOWS[0]}"]', "", "[schedule]", "poll_minutes = 15", ""]
    path.write_text("\n".join(lines))
    return path


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def seeded(episodes: int, keep: str | None) -> Iterator[str]:
    with contextlib.ExitStack() as stack:
        if keep:
            Path(keep).mkdir(parents=True, exist_ok=True)
            folder = Path(keep).resolve()
        else:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        url = f"sqlite:///{folder / f'growth-{episodes}.sqlite3'}"
        store = Store.open(url)
        try:
            seed(store, episodes)
        finally:
            store.close()
        yield url


def serve_rss(url: str, fake: SlackFake, modules: bool) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLACK_")}
        env.update(
            DIGESTBOT_CONFIG=str(config_file(Path(tmp))),
            DATABASE_URL=url,
            SLACK_BOT_TOKEN="xoxb-bench",
            SLACK_SIGNING_SECRET=SECRET,
            SLACK_API_URL=fake.api_url,
            PORT=str(port),
            TEAM_ID=TEAM,
        )
        proc = subprocess.Popen(
            [sys.executable, "-m", "bot", "serve"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 60
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                        break
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"serve did not start: {proc.stderr.read()[-2000:]}")
                time.sleep(0.1)
            started = status(proc.pid)["VmRSS"]
            sender = SlackSender(base, fake, secret=SECRET)
            try:
                for channel in (ALL_CHANNEL, ONE_CHANNEL):
                    for text in COMMANDS:
                        body = sender.slash_body(text, channel=channel, team=TEAM)
                        reply = sender.post(body, "application/x-www-form-urlencoded")
                        if reply.status_code != 200:
                            raise SystemExit(f"{text}: HTTP {reply.status_code}")
            finally:
                sender.close()
            wait_idle(proc.pid)
            found = status(proc.pid)
            found["started"] = started
            if modules:
                print_modules(proc.pid)
            return found
        finally:
            proc.terminate()
            proc.wait(10)


def print_modules(pid: int) -> None:
    """Top-level packages the idle process has mapped, by the files it has open (.so) —
    a rough guide; ``python -X importtime -m bot serve`` gives the exact import tree."""
    maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
    libs = sorted({line.split()[-1] for line in maps if line.endswith(".so") or ".so." in line})
    print("shared objects mapped:", len(libs))
    for lib in libs:
        if "site-packages" in lib:
            print("  ", lib.split("site-packages/", 1)[1])


def floor_rss() -> int:
    """A bare interpreter's idle RSS in kB: what no import of ours can go below."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.5)
        wait_idle(proc.pid, quiet=0.5)
        return status(proc.pid)["VmRSS"]
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--keep", metavar="DIR")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modules", action="store_true")
    args = parser.parse_args()
    with seeded(args.episodes, args.keep) as url, SlackFake() as fake:
        runs = [serve_rss(url, fake, args.modules and n == 0) for n in range(args.rounds)]
    floor = floor_rss()
    print(f"`digestbot serve`, SQLite store of {args.episodes:,} episodes, {len(SHOWS)} shows;")
    idle = "at most 5% of a CPU for 2 s"
    print(f"{len(COMMANDS) * 2} signed commands, then idle ({idle}); {args.rounds} runs")
    print(f"{'':24}{'MB (median)':>12}   per run")
    for key, label in (
        ("started", "RSS at first /healthz"),
        ("VmRSS", "idle RSS"),
        ("VmHWM", "peak RSS"),
    ):
        values = [r[key] / 1024 for r in runs]
        cells = " ".join(f"{v:.1f}" for v in values)
        print(f"{label:24}{statistics.median(values):>12.1f}   {cells}")
    print(f"{'bare python (floor)':24}{floor / 1024:>12.1f}")


if __name__ == "__main__":
    main()
