"""The web app's store gives up on a database that does not answer well
within Slack's 3 s, and the reply says the database is not answering."""

from __future__ import annotations

import socket
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.runtime import REQUEST_DB_WAIT
from bot.server.asgi import build_asgi
from digests.errors import StoreTimeout
from digests.store import Store
from tests.fixtures.app import (
    AppLoop,
    InProcessClient,
    SlackSender,
    build_test_app,
    make_settings,
)
from tests.slackfake import SlackFake

NOT_ANSWERING = "the database is not answering"


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A loopback port that accepts connections and never says a word."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()


def _reply(store: Store, slack_fake: SlackFake, text: str) -> str:
    settings = make_settings(slack_fake.api_url, slack_fake.token)
    app_loop = AppLoop()
    http = InProcessClient(build_asgi(build_test_app(settings, store), store), app_loop)
    sender = SlackSender("http://slack-app.test", slack_fake, http=http)
    try:
        return sender.slash(text).text
    finally:
        sender.close()
        app_loop.close()


def test_a_postgresql_that_accepts_and_never_answers(
    silent_server: int, slack_fake: SlackFake
) -> None:
    pytest.importorskip("psycopg")
    store = Store(f"postgresql+psycopg://u@127.0.0.1:{silent_server}/db", wait=REQUEST_DB_WAIT)
    try:
        assert NOT_ANSWERING in _reply(store, slack_fake, "recent 3")
        with pytest.raises(StoreTimeout):
            store.recent(1)
    finally:
        store.close()


def test_a_sqlite_file_locked_by_another_writer(tmp_path: Path, slack_fake: SlackFake) -> None:
    path = tmp_path / "digestbot.sqlite3"
    store = Store.open(f"sqlite:///{path}", wait=REQUEST_DB_WAIT)  # migrates despite the wait
    store.ensure_show("PyTorch", "https://episodes.example.test/feed.xml", "pytorch/pytorch")
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # holds the write lock until the test ends
    try:
        reply = _reply(store, slack_fake, "subscribe PyTorch")
        assert NOT_ANSWERING in reply
        assert "Subscribed" not in reply
    finally:
        other.execute("ROLLBACK")
        other.close()
        store.close()


def test_a_request_store_migrates_and_works(db_url: str) -> None:
    store = Store.open(db_url, wait=REQUEST_DB_WAIT)
    try:
        store.ensure_show("PyTorch", "https://episodes.example.test/feed.xml", "pytorch/pytorch")
        assert store.ping()
    finally:
        store.close()
