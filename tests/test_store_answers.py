"""What web processes share through the store: the answers shown with a
Share button, and the subscriptions' version (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from digests.store import Store
from digests.store.answers import KEEP_SHARED
from digests.store.schema import shared_answers

NOW = datetime(2026, 10, 7, 9, 30, tzinfo=UTC)
ANSWER = {"text": "Latest 3 episodes", "blocks": [{"type": "section", "text": "<x> & “y”"}]}


def test_a_kept_answer_is_read_back_as_it_was(store: Store) -> None:
    assert store.shared_answer("a1") is None
    store.keep_answer("a1", ANSWER, NOW)
    store.keep_answer("a1", ANSWER, NOW + timedelta(minutes=1))  # shown again: one row
    assert store.shared_answer("a1") == ANSWER


def test_answers_are_forgotten_a_day_after_they_were_last_shown(store: Store) -> None:
    store.keep_answer("old", ANSWER, NOW)
    store.keep_answer("renewed", ANSWER, NOW)
    store.keep_answer("renewed", ANSWER, NOW + KEEP_SHARED - timedelta(minutes=1))
    later = NOW + KEEP_SHARED + timedelta(seconds=1)
    store.keep_answer("new1", ANSWER, later)  # a token not ending in 0 forgets nothing
    assert store.shared_answer("old") == ANSWER
    store.keep_answer("new0", ANSWER, later)  # one in sixteen does
    assert store.shared_answer("old") is None
    assert store.shared_answer("renewed") == ANSWER
    assert store.shared_answer("new0") == ANSWER == store.shared_answer("new1")


def test_every_write_to_the_subscriptions_moves_the_version(store: Store) -> None:
    seen = [store.answers_version()]

    def moved() -> bool:
        seen.append(store.answers_version())
        return seen[-1] > seen[-2]

    store.subscribe("T1", "C1", "PyTorch")
    assert moved()
    store.subscribe("T1", "C1", "PyTorch", keywords=["fsdp"])
    assert moved()
    assert store.pause_subscriptions("T1", "C1", "is_archived", NOW)
    assert moved()
    assert store.unsubscribe("T1", "C1") == 1
    assert moved()
    # Reads and writes elsewhere do not.
    store.subscriptions(team_id="T1")
    store.keep_answer("a1", ANSWER, NOW)
    assert not moved()
    assert store.unsubscribe("T1", "C9") == 0
    assert not moved()


def test_a_row_that_is_not_an_answer_is_none(store: Store) -> None:
    with store.engine.begin() as conn:
        conn.execute(sa.insert(shared_answers).values(token="bad", message="{", shown_at=NOW))
        conn.execute(sa.insert(shared_answers).values(token="list", message="[]", shown_at=NOW))
    assert store.shared_answer("bad") is None
    assert store.shared_answer("list") is None
