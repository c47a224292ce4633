"""Peers' test feeds for our parser: feedparser's sdist ships 2,200+ of them, gPodder's
podcastparser's 70-odd podcast feeds, each with the episodes it expects (``.json``).

Run ``python -m tests.feeds_corpus`` (``.ci/run`` does, before pytest) to fetch the sdists
with pip (``pip download --no-binary :all: --no-deps feedparser==<installed version>``, and
``podcastparser==PODCASTPARSER``) and unpack their ``tests/`` folders into the cache;
``tests/test_feeds_corpus.py`` and ``tests/test_feeds_peers.py`` then read them. Nothing
fails when there is no network: the tests skip, saying why.

The cache is ``$DIGESTBOT_FEED_CORPUS``, else ``$XDG_CACHE_HOME/digestbot/feed-corpus``
(``~/.cache/…``): outside the work tree, kept between runs on the same machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from importlib import metadata
from pathlib import Path, PurePosixPath

__all__ = ["corpus_dir", "corpus_files", "fetch", "podcastparser_files", "unpack"]

PACKAGE = "feedparser"
# Not installed (the test compares with its expectations, not its code): a fixed release.
PODCASTPARSER = "0.6.11"
_DONE = ".unpacked"


def cache_root() -> Path:
    explicit = os.environ.get("DIGESTBOT_FEED_CORPUS")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "digestbot" / "feed-corpus"


def _version(package: str = PACKAGE) -> str | None:
    if package == "podcastparser":
        return PODCASTPARSER
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def corpus_dir(root: Path | None = None, package: str = PACKAGE) -> Path:
    """Where the unpacked feeds of the installed feedparser version (or of ``package``)
    live (or would)."""
    return (root or cache_root()) / f"{package}-{_version(package) or 'latest'}"


def podcastparser_files(root: Path | None = None) -> list[Path]:
    """Every ``tests/data/*.rss`` of podcastparser's sdist, sorted; empty when absent."""
    folder = corpus_dir(root, "podcastparser")
    if not (folder / _DONE).exists():
        return []
    return sorted((folder / "data").glob("*.rss"))


def corpus_files(root: Path | None = None) -> list[Path]:
    """Every ``.xml`` of the unpacked corpus, sorted; empty when it is not there."""
    folder = corpus_dir(root)
    if not (folder / _DONE).exists():
        return []
    return sorted(folder.rglob("*.xml"))


def unpack(archive: Path, target: Path) -> int:
    """The ``tests/`` files of an sdist into ``target``; how many. Members that would
    land outside ``target`` (absolute, ``..``), links and devices are skipped."""
    count = 0
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar.getmembers():
            parts = PurePosixPath(member.name).parts
            if len(parts) < 3 or parts[1] != "tests" or not member.isfile():
                continue
            rel = PurePosixPath(*parts[2:])
            if rel.is_absolute() or ".." in rel.parts:
                continue
            source = tar.extractfile(member)
            if source is None:
                continue
            out = target.joinpath(*rel.parts)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(source.read())
            count += 1
    (target / _DONE).write_text(archive.name + "\n")
    return count


def fetch(root: Path | None = None, package: str = PACKAGE) -> Path:
    """Download (once) and unpack the corpus; the folder holding it."""
    folder = corpus_dir(root, package)
    if (folder / _DONE).exists():
        return folder
    downloads = (root or cache_root()) / "sdist"
    downloads.mkdir(parents=True, exist_ok=True)
    version = _version(package)
    requirement = f"{package}=={version}" if version else package
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:",
         "--no-deps", requirement, "-d", str(downloads)],
        check=True,
        timeout=600,
    )  # fmt: skip
    archives = sorted(downloads.glob(f"{package}-{version or ''}*.tar.gz"))
    if not archives:
        raise FileNotFoundError(f"pip saved no {package} sdist in {downloads}")
    unpack(archives[-1], folder)
    return folder


def main() -> int:
    failed = 0
    for package, count in ((PACKAGE, corpus_files), ("podcastparser", podcastparser_files)):
        try:
            folder = fetch(package=package)
        except (OSError, subprocess.SubprocessError, tarfile.TarError) as err:
            print(f"{package} corpus not fetched ({err}); its tests will skip", file=sys.stderr)
            failed = 1
            continue
        print(f"{package} corpus: {len(count())} feeds in {folder}")
    if not failed:
        # The peers' agreement figures (tests/test_feeds_peers.py asserts them): here,
        # they show in CI's log whatever pytest's workers do with output.
        from tests import peer_parity

        print(peer_parity.podcastparser_figures()[0])
        print(peer_parity.feedparser_figures()[0])
    return failed


if __name__ == "__main__":
    sys.exit(main())
