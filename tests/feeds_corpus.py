"""A peer's test feeds for our parser: feedparser's sdist ships 2,200+ of them.

Run ``python -m tests.feeds_corpus`` (``.ci/run`` does, before pytest) to fetch the sdist
with pip (``pip download --no-binary :all: --no-deps feedparser==<installed version>``) and
unpack its ``tests/`` folder into the cache; ``tests/test_feeds_corpus.py`` then parses
every ``.xml`` in it. Nothing fails when there is no network: the test skips, saying why.

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

__all__ = ["corpus_dir", "corpus_files", "fetch", "unpack"]

PACKAGE = "feedparser"
_DONE = ".unpacked"


def cache_root() -> Path:
    explicit = os.environ.get("DIGESTBOT_FEED_CORPUS")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "digestbot" / "feed-corpus"


def _version() -> str | None:
    try:
        return metadata.version(PACKAGE)
    except metadata.PackageNotFoundError:
        return None


def corpus_dir(root: Path | None = None) -> Path:
    """Where the unpacked feeds of the installed feedparser version live (or would)."""
    return (root or cache_root()) / f"{PACKAGE}-{_version() or 'latest'}"


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


def fetch(root: Path | None = None) -> Path:
    """Download (once) and unpack the corpus; the folder holding it."""
    folder = corpus_dir(root)
    if (folder / _DONE).exists():
        return folder
    downloads = (root or cache_root()) / "sdist"
    downloads.mkdir(parents=True, exist_ok=True)
    version = _version()
    requirement = f"{PACKAGE}=={version}" if version else PACKAGE
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:",
         "--no-deps", requirement, "-d", str(downloads)],
        check=True,
        timeout=600,
    )  # fmt: skip
    archives = sorted(downloads.glob(f"{PACKAGE}-{version or ''}*.tar.gz"))
    if not archives:
        raise FileNotFoundError(f"pip saved no {PACKAGE} sdist in {downloads}")
    unpack(archives[-1], folder)
    return folder


def main() -> int:
    try:
        folder = fetch()
    except (OSError, subprocess.SubprocessError, tarfile.TarError) as err:
        print(f"feed corpus not fetched ({err}); its test will skip", file=sys.stderr)
        return 1
    print(f"feed corpus: {len(corpus_files())} .xml files in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
