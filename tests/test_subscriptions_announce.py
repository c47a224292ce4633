"""What the channel is told after `subscribe`, `unsubscribe`, `pause` and `resume`: only real
changes, in words that say what changed; a command that changed nothing is told to its
author alone. And `unsubscribe`, `pause`, `resume` over several shows at once, read as
`subscribe` reads them, all or nothing. Signed slash requests to the real app (in-process
ASGI), the Slack fake's response_url, three shows, SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, timedelta
from typing import Any

import httpx
import pytest

from bot.listeners.commands.model import CommandError, Pause, Resume, Unsubscribe
from bot.listeners.commands.parse import parse_command
from bot.listeners.commands.replies import mention, who
from bot.server.asgi import build_asgi
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
from tests.fixtures.control import reply_lines
from tests.fixtures.store import pause_channel
from tests.slackfake import SlackFake
from tests.test_shows_commands import EPISODES, show_settings

ME = f"<@{USER}>"
SHOWS = ["PyTorch", "JAX", "Triton", "Rust Weekly"]


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
        self.last_lines: list[str] = []
        self.count = 0  # commands announced

    def told(self) -> list[dict[str, Any]]:
        return [n for url in self.urls for n in self.app.fake.responses(url)]

    def run(self, text: str) -> str:
        """The command's first reply line."""
        self.urls.append(self.app.fake.response_url())
        response = self.app.sender.slash(text, response_url=self.urls[-1])
        self.last_reply = first_line(response)
        self.last_lines = lines(response)
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


# -- several shows: unsubscribe, pause, resume -------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("unsubscribe JAX Triton", Unsubscribe("JAX", also=("Triton",))),
        ("unsubscribe JAX,Triton", Unsubscribe("JAX", also=("Triton",))),
        ("unsubscribe jax, “Triton”", Unsubscribe("JAX", also=("Triton",))),
        ("unsubscribe JAX, Triton,", Unsubscribe("JAX", also=("Triton",))),
        ("unsubscribe JAX rust weekly jax", Unsubscribe("JAX", also=("Rust Weekly",))),
        ("unsubscribe", Unsubscribe()),
        (
            "pause PyTorch, JAX for 3d",
            Pause("PyTorch", duration=timedelta(days=3), also=("JAX",)),
        ),
        ("pause Triton JAX until fri", Pause("Triton", until=date(2026, 10, 9), also=("JAX",))),
        ("pause JAX", Pause("JAX")),
        ("resume PyTorch JAX --catch-up", Resume("PyTorch", catch_up=True, also=("JAX",))),
        ('resume "Rust Weekly" PyTorch', Resume("Rust Weekly", also=("PyTorch",))),
    ],
)
def test_several_shows_are_read_as_subscribe_reads_them(text: str, expected: object) -> None:
    assert parse_command(text, SHOWS, today=APP_NOW.date()) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            "unsubscribe JAX Rust",
            "There is no show called `Rust`. Shows: PyTorch, JAX, Triton, Rust Weekly.",
        ),
        (
            "unsubscribe JAX Go Weekly, Triton",
            "There is no show called `Go Weekly`. Shows: PyTorch, JAX, Triton, Rust Weekly.",
        ),
        (
            "pause PyTorch, Haskell for 3d",
            "There is no show called `Haskell`. Shows: PyTorch, JAX, Triton, Rust Weekly.",
        ),
        ("resume JAX Tritn --catch-up", "There is no show called Tritn — did you mean Triton?"),
    ],
)
def test_an_unknown_show_among_several_is_named(text: str, reason: str) -> None:
    with pytest.raises(CommandError) as info:
        parse_command(text, SHOWS, today=APP_NOW.date())
    assert info.value.reason == reason
    assert info.value.usage.startswith(f"`/episodes {text.split()[0]} [show]")


def subs(app: RunningApp) -> list[tuple[str, bool]]:
    """The channel's shows, and whether each is paused by a user now."""
    got = app.store.subscriptions(team_id=TEAM, channel_id=CHANNEL)
    return [(s.show, s.held(APP_NOW)) for s in got]


def lines(response: httpx.Response) -> list[str]:
    return reply_lines(response.json())


def test_an_unknown_show_among_several_changes_nothing(three: RunningApp) -> None:
    channel = Channel(three)
    channel.notice("subscribe PyTorch JAX Triton")
    before = subs(three)
    for text in ("unsubscribe JAX Rust", "pause JAX, Rust for 3d", "pause Triton Jx"):
        got = lines(three.sender.slash(text, response_url=three.fake.response_url()))
        assert got[0].startswith(":warning: There is no show called "), text
        assert got[1].startswith(f"Usage: `/episodes {text.split()[0]} [show]"), text
    assert subs(three) == before == [("JAX", False), ("PyTorch", False), ("Triton", False)]
    # The refusals announced nothing: the next change is the only notice since.
    assert channel.notice("unsubscribe JAX, Triton") == (
        f"{ME} unsubscribed this channel from *JAX*, *Triton* episodes."
    )
    assert channel.last_reply == "This channel no longer gets *JAX*, *Triton* episodes."
    assert subs(three) == [("PyTorch", False)]


def test_pause_and_resume_several_shows_at_once(three: RunningApp) -> None:
    channel = Channel(three)
    channel.notice("subscribe PyTorch JAX Triton")
    assert channel.notice("pause PyTorch, JAX for 3d") == (
        f"{ME} paused posting of *JAX*, *PyTorch* here until Sat 10 Oct 2026 09:30 UTC."
    )
    assert channel.last_reply.startswith("Paused *JAX*, *PyTorch* here until Sat 10 Oct 2026")
    assert subs(three) == [("JAX", True), ("PyTorch", True), ("Triton", False)]
    channel.notice("pause JAX Triton")
    assert channel.last_lines[-1] == (
        "`/episodes resume JAX Triton` ends it early; add `--catch-up` for the newest 10 of them."
    )
    assert channel.notice("resume PyTorch JAX") == (
        f"{ME} resumed posting of *JAX*, *PyTorch* here."
    )
    assert channel.last_reply == "Resumed *JAX*, *PyTorch*: new episodes are posted here again."
    assert subs(three) == [("JAX", False), ("PyTorch", False), ("Triton", True)]


def test_a_resume_tells_apart_a_show_not_followed_and_one_not_paused(three: RunningApp) -> None:
    channel = Channel(three)
    channel.notice("subscribe PyTorch JAX")
    channel.notice("pause PyTorch")
    assert channel.notice("resume PyTorch JAX Triton") == f"{ME} resumed posting of *PyTorch* here."
    assert channel.last_lines[-2:] == [
        "This channel does not follow *Triton*, so there is nothing to resume.",
        "*JAX* was not paused here.",
    ]


def test_a_daily_subscribe_of_several_shows_says_daily_in_its_first_line(
    three: RunningApp,
) -> None:
    channel = Channel(three)
    channel.notice("subscribe PyTorch JAX daily 9:30am")
    assert channel.last_reply == (
        "This channel now gets new episodes of *PyTorch*, *JAX* once a day at 09:30 (UTC)."
    )


def test_a_pause_of_every_show_is_announced_with_their_names(three: RunningApp) -> None:
    channel = Channel(three)
    channel.notice("subscribe PyTorch JAX")
    assert channel.notice("pause for 3d") == (
        f"{ME} paused posting of *JAX*, *PyTorch* here until Sat 10 Oct 2026 09:30 UTC."
    )
    assert channel.last_reply.startswith("Paused *JAX*, *PyTorch* here until Sat 10 Oct 2026")
    assert subs(three) == [("JAX", True), ("PyTorch", True)]


def test_shows_named_that_the_channel_does_not_follow_are_said_so(three: RunningApp) -> None:
    channel = Channel(three)
    channel.notice("subscribe PyTorch")
    assert channel.notice("pause PyTorch JAX") == (
        f"{ME} paused posting of *PyTorch* here until someone resumes it."
    )
    assert channel.notice("resume JAX Triton PyTorch") == (
        f"{ME} resumed posting of *PyTorch* here."
    )
    assert channel.last_lines[0] == "Resumed *PyTorch*: new episodes are posted here again."
    assert (
        "This channel does not follow *JAX* or *Triton*, so there is nothing to resume."
        in channel.last_lines
    )
    assert channel.notice("unsubscribe PyTorch, Triton") == (
        f"{ME} unsubscribed this channel from *PyTorch* episodes."
    )
    assert channel.last_reply == (
        "This channel no longer gets *PyTorch* episodes. "
        "This channel was not subscribed to *Triton*."
    )
    assert channel.run("unsubscribe JAX Triton") == (
        "This channel was not subscribed to *JAX* or *Triton*."
    )
