"""PR storage benchmark: a feed of ``--items`` items (4,327 by default,
the 19.9 MB feed of the issue) each naming 470 PRs in one long sentence, stored on SQLite.

Baseline, same run: the episodes upserted without the per-poll bound, then the schema
taken down to 0012 (one copy of the sentence per PR row, as main stored it). Then: the same
episodes through the pipeline's store phase (per-poll bound, sentences once). Prints rows,
bytes of sentence text and the database file's size for both.
Run: ``python -m tests.benchmarks.bench_pr_storage [--items N]``.
"""

from __future__ import annotations

import argparse
import tempfile
from datetime import timedelta
from pathlib import Path

from bot.jobs.pipeline import store_episodes
from digests.extract.prs import MAX_PULL_REQUESTS
from digests.extract.sentences import MAX_CONTEXT
from digests.models import Episode, PullRequestRef
from digests.store import Store
from tests.test_store_pr_sentences import NOW, _alembic, _measure

PRS_PER_ITEM = 470


def _feed(items: int) -> list[Episode]:
    """What digests.extract makes of such items: at most MAX_PULL_REQUESTS, context cut."""
    sentence = " ".join(f"PR {200000 + i}" for i in range(PRS_PER_ITEM))[:MAX_CONTEXT]
    refs = tuple(
        PullRequestRef(
            number=200000 + i,
            url=f"https://github.com/pytorch/pytorch/pull/{200000 + i}",
            context=sentence,
        )
        for i in range(min(PRS_PER_ITEM, MAX_PULL_REQUESTS))
    )
    return [
        Episode(
            guid=f"g{n}",
            show="PyTorch",
            title=f"Episode {n}",
            headline=f"Episode {n}",
            published_at=NOW - timedelta(hours=n),
            pull_requests=refs,
        )
        for n in range(items)
    ]


def _run(path: Path, episodes: list[Episode], *, baseline: bool) -> str:
    store = Store.open(f"sqlite:///{path}")
    try:
        store.ensure_show("PyTorch", "https://f.example/feed.xml", "pytorch/pytorch")
        if baseline:
            store.upsert_episodes(episodes, NOW)
            _alembic(store, "0012", down=True)
        else:
            store_episodes(store, episodes, NOW)
        rows, size = _measure(store)
    finally:
        store.close()
    file_mb = path.stat().st_size / 1e6
    return f"{rows:>9,} rows, {size / 1e6:8.2f} MB of sentence text, file {file_mb:8.2f} MB"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=4327)
    items = parser.parse_args().items
    episodes = _feed(items)
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{items} items × {PRS_PER_ITEM} PRs in one sentence")
        before = _run(Path(tmp) / "before.db", episodes, baseline=True)
        print(f"baseline (0012 layout, no poll bound): {before}")
        after = _run(Path(tmp) / "after.db", episodes, baseline=False)
        print(f"now (sentences once, poll bound):      {after}")


if __name__ == "__main__":
    main()
