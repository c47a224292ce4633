"""A sentence naming many PRs is stored once per episode (PR rows point at
it), and PR references are bounded per feed poll. Rows and bytes measured before/after."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from importlib import resources

import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from bot.jobs.pipeline import store_episodes
from digests.extract.pr_budget import MAX_POLL_PULL_REQUESTS, within_poll_budget
from digests.extract.prs import MAX_PULL_REQUESTS
from digests.extract.sentences import MAX_CONTEXT
from digests.models import Episode, PullRequestRef
from digests.store import Store
from digests.store.schema import episode_prs, episode_sentences

NOW = datetime(2026, 10, 6, 8, 0, tzinfo=UTC)
SENTENCE = ("PRs " + " ".join(str(199000 + n) for n in range(80)))[:MAX_CONTEXT]


def _episodes(count: int, prs: int, *, other: str = "") -> list[Episode]:
    """``count`` episodes, each naming ``prs`` PRs in one long sentence (plus ``other``,
    a second sentence naming the last PR, when given)."""
    made = []
    for n in range(count):
        refs = [
            PullRequestRef(
                number=100000 + i,
                url=f"https://github.com/pytorch/pytorch/pull/{100000 + i}",
                context=other if other and i == prs - 1 else SENTENCE,
            )
            for i in range(prs)
        ]
        made.append(
            Episode(
                guid=f"g{n}",
                show="PyTorch",
                title=f"Episode {n}",
                headline=f"Episode {n}",
                published_at=NOW - timedelta(days=n),
                pull_requests=tuple(refs),
            )
        )
    return made


def _measure(store: Store) -> tuple[int, int]:
    """(PR rows + sentence rows, bytes of sentence text stored), whichever layout."""
    with store.engine.connect() as conn:
        tables = set(sa.inspect(conn).get_table_names())
        rows = conn.execute(sa.select(sa.func.count()).select_from(episode_prs)).scalar_one()
        text = conn.execute(sa.select(sa.func.sum(sa.func.length(episode_prs.c.context))))
        size = int(text.scalar_one() or 0)
        if "episode_sentences" in tables:
            rows += conn.execute(
                sa.select(sa.func.count()).select_from(episode_sentences)
            ).scalar_one()
            text = conn.execute(sa.select(sa.func.sum(sa.func.length(episode_sentences.c.text))))
            size += int(text.scalar_one() or 0)
    return int(rows), size


def _alembic(store: Store, revision: str, *, down: bool = False) -> None:
    config = Config()
    config.set_main_option(
        "script_location", str(resources.files("digests.store").joinpath("migrations"))
    )
    with store.engine.begin() as conn:
        config.attributes["connection"] = conn
        (command.downgrade if down else command.upgrade)(config, revision)


def test_a_sentence_naming_many_prs_is_stored_once(store: Store) -> None:
    store.ensure_show("PyTorch", "https://f.example/feed.xml", "pytorch/pytorch")
    episodes = _episodes(40, MAX_PULL_REQUESTS, other="PR 100199 stands alone.")
    store.upsert_episodes(episodes, NOW)
    rows, size = _measure(store)
    old_size = 40 * ((MAX_PULL_REQUESTS - 1) * len(SENTENCE) + len("PR 100199 stands alone."))
    print(f"\n40 × {MAX_PULL_REQUESTS} PRs: {rows} rows, {size:,} bytes of text (was {old_size:,})")
    assert rows == 40 * MAX_PULL_REQUESTS + 40 * 2  # one PR row each, two sentences each
    assert size == 40 * (len(SENTENCE) + len("PR 100199 stands alone."))
    read = {e.guid: e for e in store.recent(40)}
    for episode in episodes:
        assert read[episode.guid].pull_requests == episode.pull_requests
    (mention,) = [m for m in store.by_pr(100199) if m.episode.guid == "g0"]
    assert mention.context == "PR 100199 stands alone."
    # A changed episode replaces its sentences too.
    changed = episodes[0].model_copy(update={"pull_requests": episodes[0].pull_requests[:1]})
    store.upsert_episodes([changed], NOW)
    assert store.recent(1)[0].pull_requests == changed.pull_requests


def test_migration_0013_keeps_every_sentence_both_ways(store: Store) -> None:
    store.ensure_show("PyTorch", "https://f.example/feed.xml", "pytorch/pytorch")
    episodes = _episodes(20, 50, other="Another sentence.")
    episodes.append(
        _episodes(1, 3)[0].model_copy(
            update={
                "guid": "no-context",
                "pull_requests": tuple(
                    PullRequestRef(number=7 + i, url=f"https://github.com/o/r/pull/{7 + i}")
                    for i in range(3)
                ),
            }
        )
    )
    store.upsert_episodes(episodes, NOW)
    expected = {e.guid: e.pull_requests for e in store.recent(100)}
    _alembic(store, "0012", down=True)  # rows as before 0013: one copy per PR
    before = _measure(store)
    _alembic(store, "head")
    after = _measure(store)
    print(f"\n0012 → 0013: {before[0]} rows / {before[1]:,} bytes → {after[0]} / {after[1]:,}")
    assert {e.guid: e.pull_requests for e in store.recent(100)} == expected
    assert before[1] == 20 * (49 * len(SENTENCE) + len("Another sentence."))
    assert after[1] == 20 * (len(SENTENCE) + len("Another sentence."))


def test_pr_references_are_bounded_per_poll(store: Store) -> None:
    store.ensure_show("PyTorch", "https://f.example/feed.xml", "pytorch/pytorch")
    count = MAX_POLL_PULL_REQUESTS // MAX_PULL_REQUESTS + 10
    episodes = _episodes(count, MAX_PULL_REQUESTS)
    store_episodes(store, episodes, NOW)
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(sa.func.count()).select_from(episode_prs)).scalar_one()
    print(f"\n{count} × {MAX_PULL_REQUESTS} PRs in one poll: {rows} PR rows")
    assert rows == MAX_POLL_PULL_REQUESTS
    newest = store.recent(1)[0]
    assert newest.pull_requests == episodes[0].pull_requests  # the newest keep theirs


def test_poll_budget_keeps_the_newest_and_the_order() -> None:
    episodes = _episodes(30, 10)
    shuffled = episodes[10:] + episodes[:10]
    kept = within_poll_budget(shuffled, limit=95)
    assert [e.guid for e in kept] == [e.guid for e in shuffled]
    by_guid = {e.guid: len(e.pull_requests) for e in kept}
    assert sum(by_guid.values()) == 95
    assert [by_guid[f"g{n}"] for n in range(11)] == [10] * 9 + [5, 0]
    assert within_poll_budget(episodes[:3], limit=95) == episodes[:3]
