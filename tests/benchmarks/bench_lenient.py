"""Lenient reads: a flawed feed read leniently against the strict read of the
same feed repaired, and 20 MB documents of junk against a clean 20 MB feed — each read or
refused. CPU time of this process, median of a few runs; nothing asserted.

    .venv/bin/python -m tests.benchmarks.bench_lenient
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from digests.errors import FeedParseError
from digests.extract.episodes import build_episodes
from digests.parse import parse_bytes
from tests.benchmarks.bench_parse import make_feed


def _cpu_ms(fn: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return sorted(times)[len(times) // 2] * 1000


def _read_or_refuse(data: bytes) -> str:
    try:
        return f"read, {len(parse_bytes(data, 'junk.xml').entries)} entries"
    except FeedParseError as err:
        return "refused: " + err.reason[:60]


def flawed_pair(clean: bytes) -> tuple[bytes, bytes]:
    """The feed with HTML entities, bare "&" and its itunes: declaration gone; and the same
    feed repaired by hand (the entities as characters)."""
    flawed = clean.replace(b" and ", b" & ").replace(b"</title>", b"&nbsp;&rsquo;</title>")
    flawed = re.sub(rb'xmlns:itunes="[^"]*"', b"", flawed, count=1)
    repaired = clean.replace(b" and ", b" &amp; ")
    repaired = repaired.replace(b"</title>", "\u00a0\u2019</title>".encode())
    return flawed, repaired


_PEAK = """
import resource, sys
from digests.errors import FeedParseError
from digests.parse import parse_bytes
data = open(sys.argv[1], "rb").read()
# The resident size now (reading the file may have peaked higher): what the read adds.
status = open("/proc/self/status").read()
before = int(status.split("VmRSS:")[1].split()[0])
try:
    parse_bytes(data, "f")
except FeedParseError:
    pass
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


def peak_growth_mb(data: bytes) -> float:
    """How far reading ``data`` raises a fresh process's peak RSS above its resident size
    with the document loaded, in MB (Linux)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "feed.xml"
        path.write_bytes(data)
        out = subprocess.run(
            [sys.executable, "-c", _PEAK, str(path)], capture_output=True, text=True, check=True
        )
    return int(out.stdout) / 1024


def main() -> None:
    clean = make_feed(5000)
    flawed, repaired = flawed_pair(clean)
    strict = _cpu_ms(lambda: parse_bytes(repaired, "f"))
    lenient = _cpu_ms(lambda: parse_bytes(flawed, "f"))
    print(
        f"5,000-item feed ({len(clean) / 1e6:.1f} MB), parse: strict read of it repaired "
        f"{strict:.0f} ms, lenient read of it flawed {lenient:.0f} ms ({lenient / strict:.2f}×)"
    )
    strict = _cpu_ms(lambda: build_episodes(parse_bytes(repaired, "f"), "S", "o/r"), 3)
    lenient = _cpu_ms(lambda: build_episodes(parse_bytes(flawed, "f"), "S", "o/r"), 3)
    print(
        f"  parse + extract: strict {strict:.0f} ms, lenient {lenient:.0f} ms "
        f"({lenient / strict:.2f}×)"
    )
    big = make_feed(int(5000 * 20e6 / len(clean)))
    base = _cpu_ms(lambda: parse_bytes(big, "f"), 3)
    print(f"clean {len(big) / 1e6:.0f} MB feed: {base:.0f} ms")
    big_flawed, big_repaired = flawed_pair(big)
    print(
        f"  peak memory growth: strict read of it {peak_growth_mb(big_repaired):.0f} MB, "
        f"lenient read of it flawed {peak_growth_mb(big_flawed):.0f} MB"
    )
    head = b"<rss><channel><title>x</title>"
    junk = {
        "ampersands": head + b"&" * 20_000_000,
        "unknown entities": head + b"&zzzz;" * 3_400_000,
        "CDATA openings": head + b"<![CDATA[" * 2_200_000,
        "comment openings": head + b"<!--" * 5_000_000,
        "undeclared prefixes": b"<rss><channel>" + b"<a:b>" * 4_000_000,
        "bytes not UTF-8": b"<rss><channel><title>" + bytes(range(128, 256)) * 156_000,
    }
    for name, data in junk.items():
        ms = _cpu_ms(lambda data=data: _read_or_refuse(data), 3)
        print(
            f"  junk: {name} ({len(data) / 1e6:.0f} MB) {ms:.0f} ms ({ms / base:.2f}×), "
            f"{_read_or_refuse(data)}"
        )


if __name__ == "__main__":
    main()
