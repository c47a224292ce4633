"""feedparser's 2,200+ test feeds through our parser (fetched by ``tests.feeds_corpus``).

Each file must end cleanly: episodes, a feed with none, or one ``FeedParseError`` line —
never another exception; and no episode without a readable headline. Times are reported
(the slowest five, with the tallies, at the end of the run), never asserted.
"""

from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from digests.errors import FeedParseError
from digests.extract.episodes import build_episodes
from digests.parse import parse_bytes
from tests.feeds_corpus import corpus_dir, corpus_files, unpack

FILES = corpus_files()
ABSENT = (
    f"feedparser's test corpus is not in {corpus_dir()}: run `python -m tests.feeds_corpus` "
    "(needs the package index)"
)


@dataclass
class Tally:
    seconds: dict[str, float] = field(default_factory=dict)
    outcomes: dict[str, int] = field(default_factory=dict)

    def add(self, name: str, outcome: str, seconds: float) -> None:
        self.seconds[name] = seconds
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1


@pytest.fixture(scope="module")
def tally(request: pytest.FixtureRequest) -> Iterator[Tally]:
    found = Tally()
    yield found
    if not found.seconds:
        return
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    slowest = sorted(found.seconds.items(), key=lambda kv: kv[1], reverse=True)[:5]
    lines = [
        f"feed corpus: {sum(found.outcomes.values())} files — "
        + ", ".join(f"{n} {k}" for k, n in sorted(found.outcomes.items())),
        "slowest five: " + "; ".join(f"{name} {s * 1000:.1f} ms" for name, s in slowest),
    ]
    # Past the output capture, as capsys.disabled() does: the numbers are the point.
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled():
        for line in lines:
            if reporter is not None:
                reporter.write_line(line)
            else:
                print(line)


def _name(path: Path) -> str:
    return path.relative_to(corpus_dir()).as_posix()


# Files a test: one test per file made xdist's per-test reporting cost three times the
# parsing itself; a failing file is still named, with what went wrong, in the assertion.
CHUNK = 50
CHUNKS = [FILES[n : n + CHUNK] for n in range(0, len(FILES), CHUNK)]


@pytest.mark.parametrize(
    "paths",
    CHUNKS or [[]],
    ids=[f"{_name(c[0])}..{_name(c[-1])}" for c in CHUNKS] or ["absent"],
)
def test_corpus_files_end_cleanly(paths: list[Path], tally: Tally) -> None:
    if not paths:
        pytest.skip(ABSENT)
    problems = [f"{_name(path)}: {problem}" for path in paths if (problem := _check(path, tally))]
    assert problems == []


def _check(path: Path, tally: Tally) -> str | None:
    """What is wrong with how ``path`` ends (None: it ends cleanly)."""
    data = path.read_bytes()
    # An http source, so relative links resolve as they would for a real feed.
    source = "https://corpus.example/" + _name(path)
    # CPU time of this process: the machine's cores are shared, and other processes
    # disturb it least.
    start = time.process_time()
    try:
        episodes = build_episodes(parse_bytes(data, source), "Corpus", "pytorch/pytorch")
    except FeedParseError as err:
        tally.add(_name(path), "clean errors", time.process_time() - start)
        message = str(err)
        if not message.startswith("cannot parse ") or "\n" in message or "Traceback" in message:
            return f"not a one-line parse error: {message!r}"
        return None
    except Exception as err:  # any other exception is what this test exists to find
        return f"{type(err).__name__}: {err}"
    tally.add(
        _name(path), "with episodes" if episodes else "feeds without items",
        time.process_time() - start,
    )  # fmt: skip
    unreadable = [e.headline for e in episodes if not readable(e.headline)]
    return f"unreadable headlines {unreadable!r}" if unreadable else None


def readable(headline: str) -> bool:
    """Characters a reader can see, most of them not U+FFFD (bytes we could not decode)."""
    visible = [c for c in headline if c.isprintable() and not c.isspace()]
    return bool(visible) and visible.count("\ufffd") * 2 < len(visible)


def test_a_title_of_undecodable_bytes_gets_a_readable_headline() -> None:
    data = (
        # Bytes neither UTF-8 nor Windows-1252 defines.
        b"<rss><channel><title>S</title><item><title>\x81\x8d\x8f\x90\x9d</title>"
        b"<link>https://x.example/ep/kernel-news</link></item></channel></rss>"
    )
    (episode,) = build_episodes(parse_bytes(data, "feed"), "S", "pytorch/pytorch")
    assert episode.headline == "Kernel news"
    assert "\ufffd" in episode.title  # what the feed said is kept; only the headline differs


def _sdist(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
        link = tarfile.TarInfo("pkg-1/tests/link.xml")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tar.addfile(link)
    return buffer.getvalue()


def test_unpack_takes_only_the_tests_folder_and_stays_inside(tmp_path: Path) -> None:
    archive = tmp_path / "pkg-1.tar.gz"
    archive.write_bytes(
        _sdist(
            {
                "pkg-1/tests/wellformed/a.xml": b"<rss/>",
                "pkg-1/tests/../../escape.xml": b"x",
                "pkg-1/setup.py": b"",
                "pkg-1/tests/illformed/b.xml": b"<rss",
            }
        )
    )
    target = tmp_path / "out"
    assert unpack(archive, target) == 2
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*.xml")) == [
        "illformed/b.xml",
        "wellformed/a.xml",
    ]
    assert not (tmp_path / "escape.xml").exists()


def test_the_corpus_is_found_once_unpacked(tmp_path: Path) -> None:
    archive = tmp_path / "feedparser-x.tar.gz"
    archive.write_bytes(_sdist({"feedparser-x/tests/wellformed/a.xml": b"<rss/>"}))
    assert corpus_files(tmp_path) == []
    unpack(archive, corpus_dir(tmp_path))
    assert [p.name for p in corpus_files(tmp_path)] == ["a.xml"]
