"""Shows added from Slack in the store (migration 0014): the limit, duplicates, removal with
episodes and subscriptions, on SQLite and PostgreSQL."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from bot.catalog import AddedShow, all_shows, feed_cap, feed_policy, live
from config.settings import Settings, ShowConfig
from digests.models import Episode
from digests.sources.fetch import PrivateOrigin
from digests.store import Store
from digests.store.shows import Removal, feed_key

NOW = datetime(2026, 10, 8, 9, 0, tzinfo=UTC)


def _episode(show: str, n: int) -> Episode:
    return Episode(
        show=show,
        guid=f"{show}-{n}",
        title=f"{show}: searchable zebracorn {n}",
        headline=f"searchable zebracorn {n}",
        published_at=datetime(2026, 10, n, 13, 0, tzinfo=UTC),
    )


def test_limit_and_duplicates(store: Store) -> None:
    store.ensure_show("PyTorch", "https://episodes.example.test/feed.xml", "pytorch/pytorch")

    def add(team: str, name: str, feed: str) -> str:
        return store.add_show(team, name, feed, "a/b", added_by="U1", now=NOW, limit=2)

    assert add("T1", "JAX", "https://jax.example.com/feed.xml") == "added"
    assert add("T1", "jax", "https://other.example.com/feed.xml") == "duplicate_name"
    assert add("T1", "JAX 2", "HTTPS://JAX.example.com/feed.xml/") == "duplicate_feed"
    assert add("T1", "X", "https://episodes.example.test/feed.xml") == "duplicate_feed"
    assert add("T1", "Triton", "https://triton.example.com/feed.xml") == "added"
    assert add("T1", "Rust", "https://rust.example.com/feed.xml") == "limit"
    assert add("T2", "Rust", "https://rust.example.com/feed.xml") == "added"  # per workspace
    assert [(s.name, s.team_id) for s in store.added_shows()] == [
        ("JAX", "T1"), ("Triton", "T1"), ("Rust", "T2"),
    ]  # fmt: skip
    assert [s.name for s in store.added_shows("T2")] == ["Rust"]
    [jax, *_] = store.added_shows()
    assert jax.added_by == "U1" and jax.added_at == NOW


def test_two_adds_at_once_cannot_both_pass_the_limit(store: Store) -> None:
    def add(n: int) -> str:
        feed = f"https://feeds{n}.example.com/feed.xml"
        return store.add_show("T1", f"Show {n}", feed, "a/b", added_by="U1", now=NOW, limit=3)

    with ThreadPoolExecutor(max_workers=6) as pool:
        outcomes = list(pool.map(add, range(6)))
    assert sorted(outcomes) == ["added"] * 3 + ["limit"] * 3
    assert len(store.added_shows("T1")) == 3


def test_remove_takes_the_episodes_and_every_subscription(store: Store) -> None:
    store.ensure_show("PyTorch", "https://episodes.example.test/feed.xml", "pytorch/pytorch")
    store.add_show("T1", "JAX", "https://jax.example.com/f.xml", "google/jax",
                   added_by="U1", now=NOW, limit=5)  # fmt: skip
    store.upsert_episodes([_episode("JAX", 1), _episode("JAX", 2), _episode("PyTorch", 3)], NOW)
    store.subscribe("T1", "C2", "JAX")
    store.subscribe("T1", "C1", "JAX")
    store.subscribe("T2", "C9", "JAX")
    store.subscribe("T1", "C1", "PyTorch")
    assert store.remove_added_show("T2", "JAX") == Removal("other_team")
    assert store.remove_added_show("T1", "PyTorch") == Removal("config")
    assert store.remove_added_show("T1", "Nope") == Removal("unknown")
    assert store.remove_added_show("T1", "JAX") == Removal("removed", ("C1", "C2"))
    assert store.added_shows() == []
    assert [(s.channel_id, s.show) for s in store.subscriptions()] == [("C1", "PyTorch")]
    assert [e.show for e in store.recent(10)] == ["PyTorch"]
    assert [e.show for e in store.search("zebracorn")] == ["PyTorch"]


def test_the_catalog_puts_added_shows_beside_the_config_files(store: Store) -> None:
    settings = Settings(shows=[ShowConfig(name="PyTorch", feed="https://p.example.com/f.xml")])
    store.add_show("T1", "JAX", "https://jax.example.com/f.xml", "google/jax",
                   added_by="U1", now=NOW, limit=5)  # fmt: skip
    # Added from Slack before the config file named it: the file's wins.
    store.add_show("T1", "Later", "https://later.example.com/f.xml", "a/b",
                   added_by="U1", now=NOW, limit=5)  # fmt: skip
    settings.shows.append(ShowConfig(name="Later", feed="https://later.example.com/f.xml"))
    shows = all_shows(settings, store)
    assert [(s.name, isinstance(s, AddedShow)) for s in shows] == [
        ("PyTorch", False), ("Later", False), ("JAX", True),
    ]  # fmt: skip
    jax = shows[-1]
    assert feed_policy(settings, jax) is False  # public addresses only, every hop
    assert feed_cap(settings, jax) == settings.added_feed_max_bytes
    assert feed_cap(settings, shows[0]) == settings.max_feed_bytes
    local = ShowConfig(name="Local", feed="http://127.0.0.1:8000/f.xml")
    assert feed_policy(settings, local) == PrivateOrigin("net", "127.0.0.1", 8000)
    assert feed_policy(settings, AddedShow(name="L", feed="http://127.0.0.1:8000/f.xml")) is False
    assert [s.name for s in live(settings, store).shows] == ["PyTorch", "Later", "JAX"]
    assert [s.name for s in settings.shows] == ["PyTorch", "Later"]  # not changed in place


def test_feed_key() -> None:
    assert feed_key("HTTPS://Feeds.Example.com/A.xml/") == "https://feeds.example.com/A.xml"
