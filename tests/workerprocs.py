"""Real ``digestbot worker`` processes for the scale tests and benchmarks
(``tests/test_worker_scale.py``, ``tests/benchmarks/bench_delivery.py --workers``,
``tests/benchmarks/bench_worker.py``).

- :class:`WorkerProcess`: one ``python -m bot -v worker --name …``, its stderr read as it
  comes (a full pipe would stall it): which jobs it started (procrastinate's ``Starting
  job`` lines), whether it is up, its peak RSS.
- :func:`worker_env`: the environment a worker reads (database, config file, the Slack fake).
- :func:`wait_for`: a predicate polled until a deadline.
- :func:`jobs`: procrastinate's jobs table, as dicts.
- :class:`TimedFeedServer`: the feed server, each request's arrival time kept too.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from tests.feedserver import FeedServer, RecordedRequest

ROOT = Path(__file__).resolve().parents[1]
WORKER = [sys.executable, "-m", "bot", "-v", "worker"]
# procrastinate's line as a job starts: "Starting job poll[12](show='Show0001')".
_STARTING = re.compile(r"Starting job (\w+)\[(\d+)\]\((.*)\)")
STARTED = "worker started"
# bot.jobs.tasks.deliver's line as a deliver job starts: "job:12 delivers …".
_DELIVERS = re.compile(r"job:\d+ delivers")
# bot.jobs.tasks.recover's line as it runs a stalled job again.
_RETRIED = re.compile(r"job (\d+) \(\w+\) stalled with its worker")


def worker_env(db_url: str, config: Path, api_url: str, token: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=db_url,
        DIGESTBOT_CONFIG=str(config),
        SLACK_BOT_TOKEN=token,
        SLACK_API_URL=api_url,
        PYTHONPATH=str(ROOT),
        **extra,
    )
    return env


def wait_for(predicate: Callable[[], object], timeout: float, every: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return bool(predicate())


class WorkerProcess:
    """A ``digestbot -v worker``, its log read as it comes."""

    def __init__(self, env: dict[str, str], name: str | None = None) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [*WORKER, "--name", name] if name else WORKER, cwd=ROOT, env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        self.pid = self.proc.pid
        self.lines: list[str] = []
        self.read_at: list[float] = []  # when each line was read (time.monotonic)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.read_at.append(time.monotonic())
            self.lines.append(line)

    def logged(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))

    def jobs(self) -> set[str]:
        """The deliver jobs this worker has started, as their rows' owner (``job:<id>``)."""
        found = (_DELIVERS.search(line) for line in list(self.lines))
        return {m[0].split()[0] for m in found if m}

    def delivering(self) -> set[int]:
        """The deliver jobs this worker has started, by id."""
        return {int(owner.removeprefix("job:")) for owner in self.jobs()}

    def signal(self, sig: signal.Signals) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    @property
    def up(self) -> bool:
        return any(STARTED in line for line in list(self.lines))

    def started(self, task: str | None = None) -> dict[int, str]:
        """The jobs this worker started, by id: their arguments as logged."""
        out: dict[int, str] = {}
        for line in list(self.lines):
            m = _STARTING.search(line)
            if m and (task is None or m[1] == task):
                out[int(m[2])] = m[3]
        return out

    def started_at(self, task: str) -> dict[int, float]:
        """When this worker started each job of ``task`` (as its line was read), by id."""
        out: dict[int, float] = {}
        for line, at in zip(list(self.lines), list(self.read_at), strict=False):
            m = _STARTING.search(line)
            if m and m[1] == task:
                out.setdefault(int(m[2]), at)
        return out

    def retried_at(self) -> dict[int, float]:
        """When this worker's recovery put each stalled job back in the queue, by id."""
        out: dict[int, float] = {}
        for line, at in zip(list(self.lines), list(self.read_at), strict=False):
            m = _RETRIED.search(line)
            if m:
                out.setdefault(int(m[1]), at)
        return out

    def peak_rss_kb(self) -> int:
        """The process's peak resident set (VmHWM), in KiB; 0 once it is gone."""
        return self._status_kb("VmHWM")

    def rss_kb(self) -> int:
        """The process's resident set now (VmRSS), in KiB; 0 once it is gone."""
        return self._status_kb("VmRSS")

    def _status_kb(self, field: str) -> int:
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return 0
        m = re.search(rf"^{field}:\s+(\d+) kB", status, re.M)
        return int(m[1]) if m else 0

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> int:
        self.signal(signal.SIGCONT)  # a frozen worker cannot act on SIGTERM
        self.signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._reader.join(timeout=10)
        return code

    def tail(self, n: int = 20) -> list[str]:
        return list(self.lines)[-n:]


def jobs(engine: sa.Engine, task: str | None = None) -> list[dict[str, Any]]:
    query = "SELECT id, task_name, status, worker_id, args, attempts FROM procrastinate_jobs"
    params: dict[str, Any] = {}
    if task is not None:
        query += " WHERE task_name = :task"
        params["task"] = task
    with engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(sa.text(query), params)]


@pytest.fixture
def workers() -> Iterator[list[WorkerProcess]]:
    """Worker processes a test starts, stopped after it."""
    started: list[WorkerProcess] = []
    try:
        yield started
    finally:
        for worker in started:
            worker.stop()


class TimedFeedServer(FeedServer):
    """:class:`FeedServer` that also keeps when each request came (``time.monotonic``)."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[tuple[str, float]] = []  # (path without the query, when)

    def _record(self, request: RecordedRequest) -> None:
        super()._record(request)
        with self._lock:
            self.arrivals.append((request.path.split("?", 1)[0], time.monotonic()))

    def times(self) -> dict[str, list[float]]:
        with self._lock:
            arrivals = list(self.arrivals)
        out: dict[str, list[float]] = {}
        for path, at in arrivals:
            out.setdefault(path, []).append(at)
        return out
