"""Shared pytest setup. Fixtures live in tests/fixtures/, one module per real part.

Under pytest-xdist (README: ``-n auto``) two hooks here keep the parallel run honest:

- tests marked ``alone`` (the files in ``_ALONE``) run while no other worker runs a test —
  a readers-writer lock on a file shared by the run's workers (:func:`_turn`);
- tests in one ``xdist_group`` run on one worker, one after another (``--dist loadgroup``
  in pyproject's addopts): the bot's real processes (``_GROUPS``) run one test at a time,
  beside one ordinary test on the other worker.

With PostgreSQL on, the controlling process also cleans the database's catalogs before and
after the run (``tests.fixtures.store.vacuum_catalogs``).
"""

from __future__ import annotations

import compileall
import fcntl
import os
import shutil
import sys
import tempfile
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

# Where PYTHONDONTWRITEBYTECODE is set, pytest rewrites the asserts of every test module and
# fixture module from source in every worker of every run and keeps nothing (much of
# collecting). This process may cache what it compiles, from here on (before
# the fixture modules below): pytest reads a cached module whatever the flag says, checked
# against the source's mtime and size; the bot's subprocesses keep the environment's flag.
sys.dont_write_bytecode = False


def _scratch_in_memory() -> None:
    """Scratch files (tmp_path, the store templates, the bot processes' temp files) on the
    machine's tmpfs when it has one with room, unless TMPDIR says where. On these machines
    /tmp is a disk mounted with discard: each unlink, and each fsync of a test's SQLite
    checkpoint, waited on it (docs/benchmarks.md)."""
    shm = Path("/dev/shm")
    if os.environ.get("TMPDIR") or not os.access(shm, os.W_OK):
        return
    try:
        if shutil.disk_usage(shm).free < _SCRATCH_ROOM:
            return
    except OSError:
        return
    os.environ["TMPDIR"] = str(shm)
    tempfile.tempdir = None  # gettempdir() looks again


_SCRATCH_ROOM = 2 * 1024**3  # a run leaves ~150 MB; pytest keeps the last three runs'
_scratch_in_memory()

from tests.fixtures.store import POSTGRES_ENV, vacuum_catalogs  # noqa: E402

_ROOT = Path(__file__).resolve().parents[1]

pytest_plugins = [
    "tests.fixtures.feeds",
    "tests.fixtures.slack",
    "tests.fixtures.store",
    "tests.fixtures.app",
    "tests.fixtures.poll",
    "tests.fixtures.github",
    "tests.fixtures.control",
    "tests.workerprocs",
]

# Tests that must have the machine to themselves (none at the moment).
_ALONE: frozenset[str] = frozenset()
# Tests of the migrations themselves: their stores are migrated step by step, never copied
# from a template (tests/fixtures/store.py).
_REAL_MIGRATIONS = frozenset({"test_store_migrations.py", "test_store_pr_sentences.py"})
# Files whose tests must run one after another on one worker, by group name. (Owner locks
# are named within their schema now, so test_delivery_recovery.py's fixed owner names no
# longer need one.)
_GROUPS: dict[str, str] = {
    # The bot as real processes (clocks killed with -9, two clocks on one database, a clock
    # stopped with SIGTERM) racing its own subprocesses against the test's clock: one such
    # test at a time, so two of them never starve each other's processes; an ordinary test
    # beside them only slows both sides alike (their waits allow for a loaded machine).
    "test_delivery_processes.py": "real-processes",
    "test_processes.py": "real-processes",
    "test_serve_two_processes.py": "real-processes",
    "test_worker_kills.py": "real-processes",
    "test_worker_processes.py": "real-processes",
    "test_clock_polls.py": "real-processes",
    "test_worker_scale.py": "real-processes",
}


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than the machine has CPUs. A worker spends much of a
    test waiting on what it started (the bot's processes, PostgreSQL, uvicorn, the fakes'
    threads); with one worker per CPU those waits left a core idle (docs/benchmarks.md)."""
    return (os.cpu_count() or 1) + 1


def pytest_configure(config: pytest.Config) -> None:
    # Slack's 5xx and dropped connections are retried after 0.5 s, 1 s, 2 s plus up to 1 s of
    # jitter each, GitHub's after 0.5 s, 1 s: real waits for the fakes' scripted outages,
    # idle time of a worker (~16 s in test_oauth_outages alone). Set in the environment so
    # the bot's own subprocesses (run --once, clocks) back off as briefly; the retries
    # themselves are the same.
    os.environ.setdefault("SLACK_RETRY_SECONDS", "0.01")
    os.environ.setdefault("GITHUB_RETRY_SECONDS", "0.01")
    # Posts to one channel a second apart, as Slack wants, made every in-process run of the
    # bot's own processes (run --once, the clock, recap --post) wait a second per thread
    # reply. Pacing has its own tests (test_delivery_paced, and test_delivery's with an
    # explicit interval); the real-process tests that need Slack's pace set it back.
    os.environ.setdefault("SLACK_POST_INTERVAL", "0")

# Tests of several seconds each (waits they are about: a database that never answers, a
# slow GitHub, a browser; or real migrations of 30 files), run first: pytest-xdist hands out
# single tests in collection order, so one of these collected last (test_store_* is) kept
# one worker busy while the other had nothing left. By file, or file and test name.
_LONG_FIRST: tuple[tuple[str, str], ...] = (
    ("test_store_migrations.py", "test_new_sqlite_files_opened_together"),
    ("test_store_request_timeouts.py", ""),
    ("test_oauth_browser.py", ""),
    ("test_github_poll.py", "test_the_digest_does_not_wait_for_a_slow_github"),
    # Real processes waiting out poll intervals, kills and fan-outs at Slack's pace.
    ("test_clock_polls.py", ""),
    ("test_worker_kills.py", ""),
    ("test_worker_processes.py", ""),
    ("test_worker_scale.py", ""),
    ("test_delivery_processes.py", ""),
    ("test_serve_two_processes.py", ""),
    ("test_operating.py", ""),
    ("test_security_connections.py", "test_signed_requests_are_answered_while_thousands"),
)


def pytest_sessionstart(session: pytest.Session) -> None:
    _refuse_a_stale_build()
    _vacuum_once()
    _compile_once()


def _refuse_a_stale_build() -> None:
    """A module compiled by setup.py whose source changed since would be tested as it was
    before the change: the run stops, saying what to do (digests/native.py)."""
    from digests import native

    stale = native.stale_modules()
    if stale:
        pytest.exit(
            f"{'; '.join(map(native.stale_message, stale))} (to test as Python, delete "
            "every compiled file: rm digests/*/*.so digests_native__mypyc*.so)",
            returncode=3,
        )


def pytest_sessionfinish(session: pytest.Session) -> None:
    _vacuum_once()


def _compile_once() -> None:
    """The project's modules compiled to bytecode once, by the controlling process.

    Where ``PYTHONDONTWRITEBYTECODE`` is set (as on the machines this runs on) no process
    caches what it compiles, so every pytest-xdist worker and every ``python -m bot`` the
    tests start compiled all of ``bot``, ``digests`` and ``config`` from source again.
    Python reads a cached ``.pyc`` whatever that variable says."""
    if "PYTEST_XDIST_WORKER" in os.environ:
        return
    for package in ("bot", "digests", "config"):
        compileall.compile_dir(_ROOT / package, quiet=2, workers=1)


def _vacuum_once() -> None:
    """The PostgreSQL catalogs cleaned by the run's one controlling process (not each
    pytest-xdist worker), before the tests and after them: see ``vacuum_catalogs``."""
    base = os.environ.get(POSTGRES_ENV)
    if base and "PYTEST_XDIST_WORKER" not in os.environ:
        vacuum_catalogs(base)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: not _long(item))  # stable: the rest keep their order
    for item in items:
        if item.path.name in _ALONE:
            item.add_marker(pytest.mark.alone)
        if item.path.name in _REAL_MIGRATIONS:
            item.add_marker(pytest.mark.real_migrations)
        group = _GROUPS.get(item.path.name)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def _long(item: pytest.Item) -> bool:
    return any(
        item.path.name == name and item.name.startswith(test) for name, test in _LONG_FIRST
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    if "PYTEST_XDIST_WORKER" not in os.environ:  # one process: nothing runs beside a test
        yield
        return
    # Each worker's basetemp is <the run's basetemp>/popen-gwN: the parent is the run's.
    shared = item.config._tmp_path_factory.getbasetemp().parent  # type: ignore[attr-defined]
    with _turn(Path(shared), alone=item.get_closest_marker("alone") is not None):
        yield


@contextmanager
def _turn(shared: Path, *, alone: bool) -> Iterator[None]:
    """Shared lock for a test, exclusive for an ``alone`` one (setup to teardown).

    An ``alone`` test first takes the turnstile, so workers that start a test meanwhile wait
    behind it instead of keeping the shared lock busy forever."""
    with (
        open(shared / "alone.turnstile", "a") as turnstile,
        open(shared / "alone.lock", "a") as lock,
    ):
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        if not alone:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        if alone:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
