"""Writes with the SQLite file deleted (or replaced) while serving. SQLite
would keep writing to the deleted file and report success; the store refuses instead, so a
`subscribe` is not confirmed while lost, and the delivery ledger stops rather than
recording posts nowhere (which would make the next run post them again)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.runtime import REQUEST_DB_WAIT
from bot.server.asgi import build_asgi
from digests.errors import StoreError
from digests.store import Store
from digests.store.ledger import Ledger
from tests.fixtures.app import AppLoop, InProcessClient, SlackSender, build_test_app, make_settings
from tests.slackfake import SlackFake

FEED = "https://episodes.example.test/feed.xml"


def _delete(path: Path) -> None:
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm"):
        (path.parent / name).unlink(missing_ok=True)


def test_subscribe_after_the_file_is_deleted_says_nothing_was_saved(
    tmp_path: Path, slack_fake: SlackFake
) -> None:
    path = tmp_path / "digestbot.sqlite3"
    store = Store.open(f"sqlite:///{path}", wait=REQUEST_DB_WAIT)
    store.ensure_show("PyTorch", FEED, "pytorch/pytorch")
    settings = make_settings(slack_fake.api_url, slack_fake.token)
    app_loop = AppLoop()
    http = InProcessClient(build_asgi(build_test_app(settings, store), store), app_loop)
    sender = SlackSender("http://slack-app.test", slack_fake, http=http)
    try:
        assert "now gets new" in sender.slash("subscribe PyTorch", channel="C0FIRST").text
        _delete(path)
        url = slack_fake.response_url()
        reply = sender.slash("subscribe PyTorch", channel="C0SECOND", response_url=url).text
        everything = reply + json.dumps(slack_fake.responses(url))
        assert "now gets new" not in everything
        assert "Nothing was saved." in reply
    finally:
        sender.close()
        app_loop.close()
        store.close()


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_store_and_ledger_refuse_a_file_gone_under_them(tmp_path: Path, how: str) -> None:
    path = tmp_path / "digestbot.sqlite3"
    store = Store.open(f"sqlite:///{path}")
    try:
        store.ensure_show("PyTorch", FEED, "pytorch/pytorch")
        ledger = Ledger.for_store(store)
        assert ledger.all_rows() == []
        _delete(path)
        if how == "replaced":
            Store.open(f"sqlite:///{path}").close()  # another process starts afresh
        with pytest.raises(StoreError, match="deleted or replaced"):
            store.subscribe("T1", "C1", "PyTorch")
        with pytest.raises(StoreError, match="deleted or replaced"):
            ledger.all_rows()
    finally:
        store.close()
