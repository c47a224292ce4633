"""What the channel is told after `subscribe`, `unsubscribe`, `pause` and `resume`: only real
changes, in words that say what changed; a command that changed nothing is told to its
author alone. Signed slash requests to the real app (in-process ASGI), the Slack fake's
response_url, three shows, SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from bot.commands.replies import mention, who
from bot.server import build_asgi
from digests.store import Store
from tests.fixtures.app import (
    APP_NOW,
    CHANNEL,
    TEAM,
    USER,
    AppLoop,
    InProcessClient,
    RunningApp,
    SlackSender,
    assert_valid_message,
    build_test_app,
    wait_for,
)
from tests.fixtures.store import pause_channel
from tests.slackfake import SlackFake
from tests.test_shows_commands import EPISODES, show_settings

ME = f"<@{USER}>"


@pytest.fixture
def three(
    slack_fake: SlackFake, store: Store, monkeypatch: pytest.MonkeyPatch
) -> Iterator[RunningApp]:
    """The app with PyTorch, JAX and Triton configured (the shows of test_shows_commands)."""
    for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "SLACK_API_URL"):
        monkeypatch.delenv(name, raising=False)
    settings = show_settings(slack_fake.api_url, slack_fake.token)
    for show in settings.shows:
        store.ensure_show(show.name, show.feed, show.repo)
    store.upsert_episodes(EPISODES, APP_NOW)
    app_loop = AppLoop()
    http = InProcessClient(build_asgi(build_test_app(settings, store), store), app_loop)
    sender = SlackSender("http://slack-app.test", slack_fake, http=http)
    try:
        yield RunningApp(settings, store, slack_fake, None, sender, list(EPISODES))
    finally:
        sender.close()
        app_loop.close()


def first_line(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["response_type"] == "ephemeral"
    assert_valid_message(body)
    return str(body["blocks"][0]["text"]["text"])


class Channel:
    """A run of commands (each its own response_url, as Slack gives them, so no two requests
    are the same and taken for a replay): what the channel was told, in order."""

    def __init__(self, app: RunningApp) -> None:
        self.app = app
        self.urls: list[str] = []
        self.last_reply = ""
        self.count = 0  # commands announced

    def told(self) -> list[dict[str, Any]]:
        return [n for url in self.urls for n in self.app.fake.responses(url)]

    def run(self, text: str) -> str:
        """The command's first reply line."""
        self.urls.append(self.app.fake.response_url())
        response = self.app.sender.slash(text, response_url=self.urls[-1])
        self.last_reply = first_line(response)
        return self.last_reply

    def notice(self, text: str) -> str:
        """Run ``text`` and wait for its announcement; none may have come for the commands
        before it that changed nothing (their silence is checked here, by this one's)."""
        self.run(text)
        wait_for(lambda: self.app.fake.responses(self.urls[-1]), what=text)
        notices = self.told()
        assert notices[-1] == self.app.fake.responses(self.urls[-1])[0]
        assert sum(1 for url in self.urls if self.app.fake.responses(url)) == self.count + 1
        self.count += 1
        assert notices[-1]["response_type"] == "in_channel"
        assert_valid_message(notices[-1])
        return str(notices[-1]["text"])


def test_subscribing_again_with_nothing_changed_is_told_to_the_author_only(
    three: RunningApp,
) -> None:
    channel = Channel(three)
    assert channel.notice("subscribe PyTorch fsdp") == (
        f"{ME} subscribed this channel to new *PyTorch* episodes that mention “fsdp”."
    )
    # The same filter in other case, and the same mode and recap: no channel message.
    assert channel.run("subscribe pytorch FSDP") == (
        "Nothing changed: this channel already gets new *PyTorch* episodes that mention “FSDP”."
    )
    assert channel.run("subscribe PyTorch fsdp recap on").startswith("Nothing changed: ")
    assert channel.notice("subscribe PyTorch fsdp daily 17:00") == (
        f"{ME} switched *PyTorch* to a daily digest at 17:00 (UTC)."
    )
    # `daily` left out keeps the mode: nothing changed again.
    assert channel.run("subscribe PyTorch fsdp").startswith("Nothing changed: ")
    assert channel.notice("unsubscribe PyTorch") == (
        f"{ME} unsubscribed this channel from *PyTorch* episodes."
    )


@pytest.mark.parametrize(
    ("text", "told"),
    [
        ("subscribe PyTorch mps", "changed *PyTorch*'s filter to episodes that mention “mps”"),
        (
            "subscribe PyTorch inductor -rocm",
            "changed *PyTorch*'s filter to episodes that pass this rule: mentions “inductor”, "
            "never “rocm”",
        ),
        ("subscribe PyTorch", "dropped *PyTorch*'s filter (every episode is posted)"),
        (
            "subscribe PyTorch fsdp daily 9:30am",
            "switched *PyTorch* to a daily digest at 09:30 (UTC)",
        ),
        ("subscribe PyTorch fsdp recap off", "turned the weekly recap off for *PyTorch*"),
        (
            "subscribe PyTorch -rocm recap off daily",
            "changed *PyTorch*'s filter to every episode except those that mention “rocm”, "
            "switched *PyTorch* to a daily digest at 17:00 (UTC) and turned the weekly recap "
            "off for *PyTorch*",
        ),
    ],
)
def test_a_settings_change_is_announced_as_what_changed(
    three: RunningApp, text: str, told: str
) -> None:
    channel = Channel(three)
    channel.notice("subscribe PyTorch fsdp")
    assert channel.notice(text) == f"{ME} {told}."


def test_daily_mode_moved_and_switched_back_are_announced(three: RunningApp) -> None:
    channel = Channel(three)
    assert channel.notice("subscribe JAX daily 18:00") == (
        f"{ME} subscribed this channel to new *JAX* episodes, in one daily digest at 18:00 (UTC)."
    )
    assert channel.notice("subscribe JAX daily 7pm") == (
        f"{ME} moved *JAX*'s daily digest to 19:00 (UTC)."
    )
    # A second show's time moves the channel's other daily subscriptions: said once.
    assert channel.notice("subscribe PyTorch daily 8pm") == (
        f"{ME} subscribed this channel to new *PyTorch* episodes, in one daily digest at 20:00 "
        "(UTC). This channel's other daily subscriptions move to 20:00 too (one message a day)."
    )
    assert channel.notice("subscribe JAX daily off") == (
        f"{ME} switched *JAX* back to a digest per episode."
    )


def test_several_shows_announce_only_those_that_changed(three: RunningApp) -> None:
    channel = Channel(three)
    channel.notice("subscribe PyTorch")
    assert channel.notice("subscribe JAX PyTorch") == (
        f"{ME} subscribed this channel to new *JAX* episodes."
    )
    assert channel.last_reply == (
        "This channel now gets new episodes of *JAX*, *PyTorch*. *PyTorch*: nothing changed for it."
    )
    assert channel.run("subscribe PyTorch, JAX") == (
        "Nothing changed: this channel already gets new episodes of *PyTorch*, *JAX*."
    )
    assert channel.notice("subscribe PyTorch JAX Triton fsdp") == (
        f"{ME} subscribed this channel to new *Triton* episodes that mention “fsdp”. "
        f"{ME} changed *PyTorch*'s filter to episodes that mention “fsdp”. "
        f"{ME} changed *JAX*'s filter to episodes that mention “fsdp”."
    )


def test_subscribing_a_channel_slack_paused_says_it_is_active_again(three: RunningApp) -> None:
    channel = Channel(three)
    channel.notice("subscribe Triton")
    pause_channel(three.store, TEAM, CHANNEL, "is_archived", APP_NOW)
    assert channel.notice("subscribe Triton") == (
        f"{ME} made *Triton* active again (it had been paused)."
    )


@pytest.mark.parametrize(
    ("user", "expected"),
    [
        ("U0123ABCD", "<@U0123ABCD>"),
        ("W0123ABCD", "<@W0123ABCD>"),
        ("", None),
        ("<!channel>", None),
        ("U0123ABCD>|x", None),
        ("u0123abcd", None),
        ("U" + "1" * 30, None),
    ],
)
def test_only_a_real_user_id_becomes_a_mention(user: str, expected: str | None) -> None:
    assert mention(user) == expected
    assert who(user) == (expected or "Someone")
