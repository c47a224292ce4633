"""Failures leave the store as one-line StoreErrors; search input is reduced to words."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from digests.errors import DigestError, StoreError
from digests.store import Store
from digests.store.queries import url_variants
from digests.store.search import fts5_match, search_tokens, websearch_query
from tests.fixtures.store import SAMPLE_NOW

# Nothing listens on port 1; the connection is refused at once.
UNREACHABLE_PG = "postgresql+psycopg://postgres@127.0.0.1:1/test?connect_timeout=3"


def assert_one_line(error: StoreError) -> None:
    message = str(error)
    assert message and "\n" not in message
    assert isinstance(error, DigestError)
    assert isinstance(error.__cause__, Exception)


def test_unreachable_database_raises_store_error() -> None:
    with pytest.raises(StoreError) as caught:
        Store.open(UNREACHABLE_PG)
    assert_one_line(caught.value)
    assert "127.0.0.1:1" in str(caught.value)
    assert isinstance(caught.value.__cause__, sa.exc.OperationalError)


def test_unreachable_database_on_every_call() -> None:
    store = Store(UNREACHABLE_PG)  # building it does not connect
    try:
        assert store.ping() is False
        assert store.upsert_episodes([], SAMPLE_NOW) == []  # nothing to do, no connection
        calls = [
            lambda: store.recent(5),
            lambda: store.search("anything"),
            lambda: store.subscriptions(),
            lambda: store.subscribe("T1", "C1", "PyTorch"),
            lambda: store.fetch_state("PyTorch"),
        ]
        for call in calls:
            with pytest.raises(StoreError) as caught:
                call()
            assert_one_line(caught.value)
    finally:
        store.close()


def test_password_is_not_shown() -> None:
    with pytest.raises(StoreError) as caught:
        Store.open("postgresql+psycopg://bot:s3cret@127.0.0.1:1/test?connect_timeout=3")
    assert "s3cret" not in str(caught.value)


@pytest.mark.parametrize(
    "url",
    ["not a url", "nosuchdialect://host/db", "postgresql+nosuchdriver://localhost/db"],
)
def test_bad_urls_raise_store_error(url: str) -> None:
    with pytest.raises(StoreError) as caught:
        Store(url)
    assert_one_line(caught.value)


def test_file_that_is_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "junk.sqlite3"
    path.write_bytes(b"this is not SQLite, just some bytes " * 100)
    with pytest.raises(StoreError) as caught:
        Store.open(f"sqlite:///{path}")
    assert_one_line(caught.value)
    assert "not a database" in str(caught.value)


def test_sqlite_directory_that_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where a directory should be")
    with pytest.raises(StoreError) as caught:
        Store(f"sqlite:///{blocker / 'sub' / 'db.sqlite3'}")
    assert_one_line(caught.value)


def test_sqlite_parent_directories_are_created(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'a' / 'b' / 'db.sqlite3'}")
    try:
        assert store.ping() is True
        assert (tmp_path / "a" / "b" / "db.sqlite3").exists()
    finally:
        store.close()


def test_in_memory_sqlite_works_across_calls() -> None:
    store = Store.open("sqlite://")
    try:
        store.subscribe("T1", "C1", "PyTorch")
        assert len(store.subscriptions()) == 1
    finally:
        store.close()


def test_unmigrated_database_raises_store_error(db_url: str) -> None:
    store = Store(db_url)
    try:
        assert store.ping() is True
        with pytest.raises(StoreError) as caught:
            store.recent(5)
        assert_one_line(caught.value)
        assert "episodes" in str(caught.value)
    finally:
        store.close()


@pytest.mark.parametrize(
    ("query", "tokens"),
    [
        ("flex attention", ["flex", "attention"]),
        ('"foo OR', ["foo", "OR"]),
        ("NEAR(a b)", ["NEAR", "a", "b"]),
        ("*", []),
        ("headline:fsdp", ["headline", "fsdp"]),
        ("-mps ^cuda", ["mps", "cuda"]),
        ("PR 199720", ["PR", "199720"]),
        ("all_gather", ["all_gather"]),
        ("ünïcödé", ["ünïcödé"]),
        (" ".join(str(n) for n in range(40)), [str(n) for n in range(16)]),
        ("", []),
    ],
)
def test_search_tokens(query: str, tokens: list[str]) -> None:
    assert search_tokens(query) == tokens


@pytest.mark.parametrize(
    ("tokens", "mode", "fts5", "websearch"),
    [
        (["a"], "all", '"a"', '"a"'),
        (["a", "OR", "b"], "all", '"a" "OR" "b"', '"a" "OR" "b"'),
        (["a", "NEAR"], "any", '"a" OR "NEAR"', '"a" or "NEAR"'),
        (['x"y'], "all", '"x""y"', '"x y"'),
    ],
)
def test_match_strings(tokens: list[str], mode: str, fts5: str, websearch: str) -> None:
    assert fts5_match(tokens, mode) == fts5  # type: ignore[arg-type]
    assert websearch_query(tokens, mode) == websearch  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("url", "variants"),
    [
        (
            "https://a.test/x",
            ["https://a.test/x", "https://a.test/x/", "http://a.test/x", "http://a.test/x/"],
        ),
        (
            "http://a.test/x/#t",
            [
                "http://a.test/x/#t",
                "http://a.test/x",
                "http://a.test/x/",
                "https://a.test/x",
                "https://a.test/x/",
            ],
        ),
        ("ftp://a.test/x", ["ftp://a.test/x", "ftp://a.test/x/"]),
        ("#only", []),
        ("", []),
    ],
)
def test_url_variants(url: str, variants: list[str]) -> None:
    assert url_variants(url) == variants


def test_malformed_url_is_not_echoed() -> None:
    with pytest.raises(StoreError) as caught:
        Store("postgresql+psycopg://bot:s3cret@[::1")
    assert "s3cret" not in str(caught.value)
