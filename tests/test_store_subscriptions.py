"""Subscriptions in the store: who made them, config-file tombstones, pausing once."""

from __future__ import annotations

from datetime import timedelta

from digests.store import Store
from tests.fixtures.store import SAMPLE_NOW, pause_channel, resume_channel


def test_config_source_survives_a_slash_subscribe(store: Store) -> None:
    store.subscribe("T1", "C1", "PyTorch", source="config")
    replaced = store.subscribe("T1", "C1", "PyTorch", keywords=["fsdp"], created_by="U1")
    assert (replaced.source, replaced.keywords, replaced.created_by) == ("config", ("fsdp",), "U1")
    # A slash subscription the config file names later becomes the config file's.
    store.subscribe("T1", "C2", "PyTorch", created_by="U2")
    moved = store.subscribe("T1", "C2", "PyTorch", source="config")
    assert (moved.source, moved.created_by) == ("config", "U2")  # who set it up is kept


def test_unsubscribing_a_config_subscription_leaves_a_tombstone(store: Store) -> None:
    store.subscribe("T1", "C1", "PyTorch", source="config")
    store.subscribe("T1", "C1", "Rust", created_by="U1")
    assert store.unsubscribe("T1", "C1") == 2
    assert store.unsubscribe("T1", "C1") == 0
    assert store.subscriptions() == []
    (tomb,) = store.subscriptions(include_unsubscribed=True)
    assert (tomb.show, tomb.source, tomb.unsubscribed) == ("PyTorch", "config", True)
    # Tombstones are never paused, resumed or delivered to.
    assert pause_channel(store, "T1", "C1", "is_archived", SAMPLE_NOW) == 0
    assert resume_channel(store, "T1", "C1") == 0

    revived = store.subscribe("T1", "C1", "PyTorch")
    assert not revived.unsubscribed and revived.source == "config"
    assert [s.show for s in store.subscriptions()] == ["PyTorch"]


def test_pause_subscriptions_returns_what_it_paused_once(store: Store) -> None:
    store.subscribe("T1", "C1", "Rust", created_by="U2")
    store.subscribe("T1", "C1", "PyTorch", created_by="U1")
    store.subscribe("T1", "C1", "Go", source="config")
    paused = store.pause_subscriptions("T1", "C1", "is_archived", SAMPLE_NOW)
    assert [(s.show, s.created_by, s.paused_reason) for s in paused] == [
        ("Go", None, "is_archived"),
        ("PyTorch", "U1", "is_archived"),
        ("Rust", "U2", "is_archived"),
    ]
    assert all(s.paused_at == SAMPLE_NOW for s in paused)
    later = SAMPLE_NOW + timedelta(hours=1)
    assert store.pause_subscriptions("T1", "C1", "channel_not_found", later) == []
