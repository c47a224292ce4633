"""``run --once`` with the store failing mid-poll: one line on stderr and
exit code 2, as the README promises, not exit 0 under a traceback per show."""

from __future__ import annotations

from pathlib import Path

import pytest

from digests.errors import StoreError
from digests.store import Store
from tests.feedserver import FeedServer
from tests.fixtures.cli import ROOT, one_line_error, run_cli

EXAMPLE_FEED = ROOT / "config" / "example-feed.xml"


@pytest.mark.parametrize("failing", ["upsert_episodes", "save_fetch_state"])
def test_run_once_with_the_store_failing_mid_poll_is_one_line_and_exit_2(
    tmp_path: Path, feed_server: FeedServer, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    shows = ""
    for name in ("A", "B"):
        url = feed_server.route(f"/{name}.xml", EXAMPLE_FEED.read_bytes())
        shows += f'[[shows]]\nname = "{name}"\nfeed = "{url}"\n\n'
    config = tmp_path / "digestbot.toml"
    config.write_text(f'timezone = "UTC"\n\n{shows}[[channels]]\nid = "C0ACHANNEL"\n')

    def locked(self: Store, *args: object, **kwargs: object) -> None:
        raise StoreError("cannot save episodes: database is locked")

    # Opening, migrating and the channel sync work; the poll's writes fail (a lock held
    # past the busy timeout, a full disk).
    monkeypatch.setattr(Store, failing, locked)
    result = run_cli(
        "run",
        "--once",
        env={"DIGESTBOT_CONFIG": str(config), "DATABASE_URL": f"sqlite:///{tmp_path / 'db'}"},
    )
    line = one_line_error(result)
    assert "database is locked" in line
    assert "(and 1 more)" in line
