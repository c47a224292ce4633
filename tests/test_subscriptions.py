"""`/episodes subscribe` and `unsubscribe` over real HTTP: typos, replacements, the config file.

SQLite and PostgreSQL (``db_url``); a restart is a new ``Store`` on the same database plus
``sync_config_channels``, as ``digestbot run`` does at start.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import sqlalchemy as sa

from bot.runtime import sync_config_channels
from config.settings import ChannelConfig
from digests.store import Store
from digests.store.schema import subscriptions
from tests.fixtures.app import APP_NOW, CHANNEL, TEAM, USER, RunningApp, assert_valid_message
from tests.fixtures.store import pause_channel


def reply(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["response_type"] == "ephemeral"
    assert_valid_message(body)
    return body


def first_line(response: httpx.Response) -> str:
    return str(reply(response)["blocks"][0]["text"]["text"])


def subs(store: Store) -> list[tuple[str, tuple[str, ...], str]]:
    return [
        (s.show, s.keywords, s.source)
        for s in store.subscriptions(team_id=TEAM, channel_id=CHANNEL)
    ]


def test_a_misspelt_show_is_refused_and_changes_nothing(slack_app: RunningApp) -> None:
    reply(slack_app.sender.slash("subscribe PyTorch"))
    for text in ("subscribe PyTroch", "subscribe pytorhc fsdp"):
        line = first_line(slack_app.sender.slash(text))
        word = text.split()[1]
        assert line == f":warning: There is no show called {word} — did you mean PyTorch?", text
    assert subs(slack_app.store) == [("PyTorch", (), "slash")]
    # Words that are not near the show's name are still a keyword filter.
    line = first_line(slack_app.sender.slash("subscribe python"))
    assert line.startswith("This channel now gets new *PyTorch* episodes that mention “python”")


def test_subscribing_again_says_what_it_replaces(slack_app: RunningApp) -> None:
    first = first_line(slack_app.sender.slash("subscribe fsdp"))
    assert first == "This channel now gets new *PyTorch* episodes that mention “fsdp”."
    assert slack_app.store.subscriptions()[0].created_by == USER

    mps = first_line(slack_app.sender.slash("subscribe mps dtensor"))
    assert mps == (
        "This channel now gets new *PyTorch* episodes that mention “mps”, “dtensor”. "
        "It replaces the earlier filter “fsdp”."
    )
    same = first_line(slack_app.sender.slash("subscribe DTensor MPS"))
    assert "replaces" not in same  # the same filter, in other case and order

    everything = first_line(slack_app.sender.slash("subscribe PyTorch"))
    assert everything == (
        "This channel now gets new *PyTorch* episodes. "
        "It replaces the earlier filter “DTensor”, “MPS”."
    )
    narrowed = first_line(slack_app.sender.slash("subscribe PyTorch fsdp"))
    assert narrowed.endswith("It replaces the earlier subscription to every *PyTorch* episode.")
    assert subs(slack_app.store) == [("PyTorch", ("fsdp",), "slash")]


def test_subscribing_a_paused_channel_again_says_it_resumes(slack_app: RunningApp) -> None:
    reply(slack_app.sender.slash("subscribe"))
    pause_channel(slack_app.store, TEAM, CHANNEL, "is_archived", APP_NOW)
    line = first_line(slack_app.sender.slash("subscribe"))
    assert line.endswith("It had been paused (the channel is archived) and is active again.")
    assert not slack_app.store.subscriptions()[0].paused


def test_paused_subscriptions_say_why_in_words(slack_app: RunningApp) -> None:
    """`list` (and `status` and App Home, which share the line) give the reason, not the
    API's error code."""
    store = slack_app.store
    store.subscribe(TEAM, CHANNEL, "PyTorch")
    pause_channel(store, TEAM, CHANNEL, "not_in_channel", APP_NOW)
    listed = json.dumps(reply(slack_app.sender.slash("list"))["blocks"], ensure_ascii=False)
    assert "I am not a member and cannot join it" in listed
    assert "not_in_channel" not in listed
    reply(slack_app.sender.slash("subscribe PyTorch"))
    pause_channel(store, TEAM, CHANNEL, "channel_not_found", APP_NOW)
    status = json.dumps(reply(slack_app.sender.slash("status"))["blocks"], ensure_ascii=False)
    assert "Slack cannot find the channel" in status and "channel_not_found" not in status
    reply(slack_app.sender.slash("subscribe PyTorch"))
    pause_channel(store, TEAM, CHANNEL, "<!channel>_odd", APP_NOW)
    odd = json.dumps(reply(slack_app.sender.slash("list"))["blocks"], ensure_ascii=False)
    assert "Slack refused my posts there (`&lt;!channel&gt;_odd`)" in odd


def test_unsubscribing_a_config_channel_sticks_across_a_restart(
    slack_app: RunningApp, db_url: str
) -> None:
    settings = slack_app.settings.model_copy(
        update={"channels": [ChannelConfig(id=CHANNEL, shows=["PyTorch"])]}
    )
    assert sync_config_channels(settings, slack_app.store, TEAM) == 1

    # A filter set by slash command on the config file's subscription: still from config.
    reply(slack_app.sender.slash("subscribe PyTorch fsdp"))
    assert subs(slack_app.store) == [("PyTorch", ("fsdp",), "config")]

    gone = first_line(slack_app.sender.slash("unsubscribe"))
    assert gone == (
        "This channel no longer gets any episodes (1 subscription removed). It was set in the "
        "config file: it stays off after restarts, but remove the channel from the config "
        "file to drop it for good."
    )
    assert subs(slack_app.store) == []

    restarted = Store.open(db_url)
    try:
        assert sync_config_channels(settings, restarted, TEAM) == 0
        assert restarted.subscriptions(team_id=TEAM, channel_id=CHANNEL) == []
        assert restarted.subscriptions(show="PyTorch", include_paused=False) == []
    finally:
        restarted.close()
    listed = first_line(slack_app.sender.slash("list"))
    assert "follows no show yet" in listed
    again = first_line(slack_app.sender.slash("unsubscribe"))
    assert again == "This channel was not subscribed to any show."

    # Subscribing again brings it back, still known to come from the config file.
    reply(slack_app.sender.slash("subscribe"))
    assert subs(slack_app.store) == [("PyTorch", (), "config")]
    gone = first_line(slack_app.sender.slash("unsubscribe PyTorch"))
    assert gone.startswith("This channel no longer gets *PyTorch* episodes. It was set in the")


def test_unsubscribing_a_slash_channel_deletes_it(slack_app: RunningApp) -> None:
    reply(slack_app.sender.slash("subscribe"))
    gone = first_line(slack_app.sender.slash("unsubscribe"))
    assert gone == "This channel no longer gets any episodes (1 subscription removed)."
    assert slack_app.store.subscriptions(team_id=TEAM, include_unsubscribed=True) == []


def responses_soon(slack_app: RunningApp, url: str, count: int) -> list[Any]:
    """The response_url payloads, waiting a moment: the notice is sent after the ack."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        got = slack_app.fake.responses(url)
        if len(got) >= count:
            return got
        time.sleep(0.02)
    return slack_app.fake.responses(url)


def test_the_channel_is_told_who_changed_its_subscriptions(slack_app: RunningApp) -> None:
    url = slack_app.fake.response_url()
    assert first_line(slack_app.sender.slash("subscribe PyTorch fsdp", response_url=url)) == (
        "This channel now gets new *PyTorch* episodes that mention “fsdp”."
    )
    (notice,) = responses_soon(slack_app, url, 1)
    assert notice["response_type"] == "in_channel"
    assert notice["text"] == (
        f"<@{USER}> subscribed this channel to new *PyTorch* episodes that mention “fsdp”."
    )
    assert_valid_message(notice)

    url = slack_app.fake.response_url()
    reply(slack_app.sender.slash("unsubscribe PyTorch", response_url=url))
    (notice,) = responses_soon(slack_app, url, 1)
    assert notice["response_type"] == "in_channel"
    assert notice["text"] == f"<@{USER}> unsubscribed this channel from *PyTorch* episodes."


def test_nothing_is_announced_when_nothing_changed(slack_app: RunningApp) -> None:
    url = slack_app.fake.response_url()
    line = first_line(slack_app.sender.slash("unsubscribe PyTorch", response_url=url))
    assert line == "This channel was not subscribed to *PyTorch*."
    bad = slack_app.fake.response_url()
    reply(slack_app.sender.slash("subscribe PyTroch", response_url=bad))
    time.sleep(0.3)  # what a notice would have needed to arrive
    assert slack_app.fake.responses(url) == [] and slack_app.fake.responses(bad) == []


def test_a_config_channel_naming_its_show_in_another_case_follows_that_show(
    slack_app: RunningApp, db_url: str
) -> None:
    # The config check reads "pytorch" as the show PyTorch (any case); the subscription
    # must be PyTorch's too, or the poll (which asks for PyTorch's) never posts there.
    settings = slack_app.settings.model_copy(
        update={"channels": [ChannelConfig(id=CHANNEL, shows=["pytorch"])]}
    )
    assert sync_config_channels(settings, slack_app.store, TEAM) == 1
    assert subs(slack_app.store) == [("PyTorch", (), "config")]
    assert [s.channel_id for s in slack_app.store.subscriptions(show="PyTorch")] == [CHANNEL]
    restarted = Store.open(db_url)
    try:
        assert sync_config_channels(settings, restarted, TEAM) == 0
    finally:
        restarted.close()
    assert subs(slack_app.store) == [("PyTorch", (), "config")]


def test_the_config_sync_repairs_a_subscription_stored_under_another_case(
    slack_app: RunningApp, db_url: str
) -> None:
    # Databases synced before the fix above hold "pytorch" rows the poll never reads: the
    # sync renames them to the show's own name, keeping what they had (filter, recap).
    store = slack_app.store
    store.subscribe(TEAM, CHANNEL, "pytorch", keywords=["fsdp"], recap=False, source="config")
    settings = slack_app.settings.model_copy(
        update={"channels": [ChannelConfig(id=CHANNEL, shows=["pytorch"])]}
    )
    assert sync_config_channels(settings, store, TEAM) == 0
    assert subs(store) == [("PyTorch", ("fsdp",), "config")]
    assert store.subscriptions(show="PyTorch")[0].recap is False
    assert store.subscriptions(show="pytorch", include_unsubscribed=True) == []
    # Beside a row of the right name (a sync after that fix added one): the dead one goes,
    # the live one stays as it is, and no duplicate appears.
    store.subscribe(TEAM, CHANNEL, "PYTORCH", keywords=["mps"], source="config")
    restarted = Store.open(db_url)
    try:
        assert sync_config_channels(settings, restarted, TEAM) == 0
    finally:
        restarted.close()
    assert subs(store) == [("PyTorch", ("fsdp",), "config")]
    # A dead row a user unsubscribed (a tombstone) stays unsubscribed under its new name.
    store.unsubscribe(TEAM, CHANNEL)
    with store.engine.begin() as conn:
        conn.execute(
            sa.update(subscriptions)
            .where(subscriptions.c.channel_id == CHANNEL)
            .values(show="pytorch")
        )
    assert sync_config_channels(settings, store, TEAM) == 0
    assert subs(store) == []
    gone = store.subscriptions(team_id=TEAM, channel_id=CHANNEL, include_unsubscribed=True)
    assert [(s.show, s.unsubscribed) for s in gone] == [("PyTorch", True)]
