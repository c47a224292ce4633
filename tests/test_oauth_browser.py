"""The install page in a real browser: Debian's ``chromium``, headless, opens
``/slack/install`` served by the app under uvicorn, and the "Add to Slack" button's link
in the DOM it built is checked. ``.ci/run`` installs chromium when it is missing and apt
works; without a browser the test is skipped, saying why."""

from __future__ import annotations

import asyncio
import html
import os
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import sqlalchemy as sa

from digests.store.installations import Installations
from tests import test_oauth
from tests.slackfake import CLIENT_ID
from tests.test_oauth import Served

served = test_oauth.served  # the fixture: the app under uvicorn in OAuth mode
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def browser() -> str | None:
    return next((found for name in BROWSERS if (found := shutil.which(name))), None)


def dump_dom(url: str, profile: Path) -> str:
    """The DOM chromium built for ``url`` (``--dump-dom``), after its scripts ran."""
    found = browser()
    assert found is not None
    command = [
        found,
        "--headless",
        "--no-sandbox",  # CI runs as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--dump-dom",
        url,
    ]
    env = {**os.environ, "HOME": str(profile)}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def issued(app: Served, state: str) -> bool:
    """Whether ``state`` is one the app stored (and has not been used)."""

    async def look() -> bool:
        installations = Installations(app.settings.database_url, CLIENT_ID)
        table = installations.states.oauth_states
        try:
            async with installations.engine.connect() as conn:
                query = sa.select(table.c.id).where(table.c.state == state)
                return (await conn.execute(query)).first() is not None
        finally:
            await installations.close()

    return asyncio.run(look())


@pytest.mark.skipif(browser() is None, reason="no chromium here (.ci/run installs it with apt)")
def test_the_install_page_in_headless_chromium_links_to_slack(
    served: Served, tmp_path: Path
) -> None:
    dom = dump_dom(f"{served.server.url}/slack/install", tmp_path)
    assert "<title>digestbot · Add to Slack</title>" in dom
    button = re.search(r'<a class="button" id="add-to-slack" href="([^"]+)">Add to Slack</a>', dom)
    assert button, dom[:2000]
    link = urlsplit(html.unescape(button.group(1)))
    query = parse_qs(link.query)
    assert f"{link.scheme}://{link.netloc}{link.path}" == served.settings.slack_authorize_url
    assert query["client_id"] == [CLIENT_ID]
    assert set(query["scope"][0].split(",")) == set(served.settings.slack_scopes)
    assert issued(served, query["state"][0])  # a state the app issued for this page
    for scope in served.settings.slack_scopes:
        assert f"<code>{scope}</code>" in dom
