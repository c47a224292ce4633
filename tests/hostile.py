"""Hostile inputs shared by tests/test_security_*.py and tests/benchmarks/bench_hostile.py:
gzip bombs, a child process that fetches and reports its own peak RSS, and an endless
chunked body for ASGI apps.

Peak memory is measured in a fresh child (``VmHWM`` from /proc, the kernel's high-water
mark of resident memory), so nothing the test process allocated before counts.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

MB = 1024 * 1024

_CHILD = r"""
import json, sys

def status(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0

from digests.errors import FetchError
from digests.sources.fetch import fetch_sync

url, max_bytes = sys.argv[1], int(sys.argv[2])
before = status("VmRSS")
error = None
size = 0
try:
    result = fetch_sync(url, max_bytes=max_bytes, total_timeout=60)
    size = len(result.content or b"")
except FetchError as exc:
    error = str(exc)
print(json.dumps({"before": before, "peak": status("VmHWM"), "error": error, "size": size}))
"""


@dataclass(frozen=True)
class ChildPeak:
    before: int  # resident bytes after imports, just before the fetch
    peak: int  # the child's high-water mark of resident memory
    error: str | None
    size: int  # bytes returned when the fetch succeeded

    @property
    def grew(self) -> int:
        """What the fetch added on top of the interpreter and its imports."""
        return self.peak - self.before


def fetch_peak_in_child(
    url: str, max_bytes: int = 20 * MB, timeout: float = 120.0, code: str | None = None
) -> ChildPeak:
    """Fetch ``url`` with :func:`digests.sources.fetch.fetch_sync` in a fresh interpreter (run in
    ``code``, another checkout, to measure its ``digests`` instead of this one's)."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, url, str(max_bytes)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=code,
    )
    if done.returncode != 0:
        raise AssertionError(f"child exited {done.returncode}: {done.stderr[-2000:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return ChildPeak(report["before"], report["peak"], report["error"], report["size"])


def zeros_bomb(decoded: int, layers: int) -> bytes:
    """``decoded`` bytes of zeros gzipped ``layers`` times, cheaply: the innermost stream is
    one compressed megabyte repeated (a full flush resets zlib's state, so each repeat is
    byte-identical), without a trailer — a client that stops at its cap never reaches it,
    and one that does not has already inflated everything."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    zeros = bytes(MB)
    head = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    unit = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    body = head + unit * (max(decoded // MB, 1) - 1)
    for _ in range(layers - 1):
        body = gzip.compress(body, compresslevel=9)
    return body


def encoding_header(layers: int) -> str:
    return ", ".join(["gzip"] * layers)


class EndlessBody:
    """An ASGI ``receive`` that streams ``total`` bytes of body in ``chunk``-sized messages
    (what a chunked POST looks like to the app) and counts what the app pulled."""

    def __init__(self, total: int, chunk: int = 64 * 1024) -> None:
        self.total = total
        self.chunk = chunk
        self.sent = 0
        self._block = b"x" * chunk

    async def __call__(self) -> dict[str, object]:
        piece = min(self.chunk, self.total - self.sent)
        self.sent += piece
        return {
            "type": "http.request",
            "body": self._block[:piece],
            "more_body": self.sent < self.total,
        }


def chunked_request(
    host: str, port: int, path: str, total: int, chunk: int = 64 * 1024
) -> Iterator[bytes]:
    """The bytes of an unsigned POST of ``total`` bytes in chunked transfer encoding."""
    yield (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode()
    block = b"x" * chunk
    sent = 0
    while sent < total:
        piece = block[: min(chunk, total - sent)]
        sent += len(piece)
        yield b"%x\r\n%b\r\n" % (len(piece), piece)
    yield b"0\r\n\r\n"
