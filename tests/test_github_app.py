"""The app's answers with stored PR details: the Key PRs button and `/episodes latest`."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from bot.listeners.commands.base import Deps
from bot.listeners.commands.episodes import latest
from bot.listeners.commands.model import Latest
from bot.server.asgi import build_asgi
from digests.render.blocks import button_value
from digests.render.renderer import Renderer
from digests.store import Store
from digests.store.pr_details import PrDetailsStore
from digests.types import PrDetails
from tests.fixtures.app import (
    APP_NOW,
    CHANNEL,
    AppLoop,
    InProcessClient,
    RunningApp,
    SlackSender,
    build_test_app,
    make_settings,
    wait_for,
)
from tests.slackfake import SlackFake

DETAILS = PrDetails(
    "pytorch/pytorch",
    199720,
    title="Stack-aware merges",
    state="closed",
    author="octo",
    labels=("Merged", "release notes: distributed"),
    fetched_at=APP_NOW,
)


@pytest.fixture
def github_app(
    slack_fake: SlackFake, seeded_store: tuple[Store, list[object]]
) -> Iterator[RunningApp]:
    store, episodes = seeded_store
    PrDetailsStore(store).save([DETAILS])
    settings = make_settings(slack_fake.api_url, slack_fake.token, github=True)
    app_loop = AppLoop()
    http = InProcessClient(build_asgi(build_test_app(settings, store), store), app_loop)
    sender = SlackSender("http://slack-app.test", slack_fake, http=http)
    try:
        yield RunningApp(settings, store, slack_fake, None, sender, episodes)  # type: ignore[arg-type]
    finally:
        sender.close()
        app_loop.close()


def test_key_prs_button_shows_titles(github_app: RunningApp) -> None:
    value = button_value("PyTorch", "pytorch-2026-10-05")
    url = github_app.fake.response_url()
    github_app.sender.block_action("digest_prs", value, response_url=url, message_ts="1.000100")
    messages = wait_for(lambda: github_app.fake.messages(CHANNEL))
    text = json.dumps([m["blocks"] for m in messages], ensure_ascii=False)
    assert "|#199720> *Stack-aware merges* · merged · distributed" in text


def test_latest_shows_titles(github_app: RunningApp) -> None:
    deps = Deps(github_app.settings, github_app.store, Renderer(), lambda: APP_NOW)
    text = json.dumps(latest(Latest(), deps), ensure_ascii=False)
    assert "*Stack-aware merges* · merged · distributed" in text


def test_unfurl_and_home_show_titles(github_app: RunningApp) -> None:
    from bot.listeners.home import load_home
    from bot.listeners.unfurl import unfurls_for

    deps = Deps(github_app.settings, github_app.store, Renderer(), lambda: APP_NOW)
    latest_url = next(e.url for e in github_app.episodes if e.guid == "pytorch-2026-10-05")
    unfurled = unfurls_for([{"url": latest_url}], deps)
    text = json.dumps(unfurled, ensure_ascii=False)
    assert "*Stack-aware merges* · merged · distributed" in text
    home = json.dumps(load_home(deps, "T1"), ensure_ascii=False)
    assert "*Stack-aware merges* · merged · distributed" in home
