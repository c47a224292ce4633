"""Buttons, App Home and unfurls through the real HTTP path; effects read from the Slack fake."""

from __future__ import annotations

import json
from typing import Any

import pytest

from digests.models import PullRequestRef
from digests.render.blocks import button_value
from digests.render.renderer import Renderer
from tests.fixtures.app import (
    CHANNEL,
    PAGE_URL,
    SEED_NOW,
    TEAM,
    USER,
    RunningApp,
    assert_valid_message,
    assert_valid_view,
    wait_for,
)


def share_of(body: dict[str, Any]) -> str:
    last = body["blocks"][-1]
    assert last["elements"][0]["action_id"] == "episodes_share"
    return str(last["elements"][0]["value"])


def acked(response: Any) -> None:
    # Button clicks are acked with an empty 200 at once; the work happens after.
    assert response.status_code == 200
    assert response.text == ""


# -- Share in channel ---------------------------------------------------------------------


# Tests that only read run on one shared app per backend (``readonly_app``): a table row
# costs a request, not a seeded store.


@pytest.mark.parametrize("text", ["recent 3", "pr 199720", "nearby #199720", "week 2026-10-01"])
def test_share_posts_the_same_blocks_in_channel(readonly_app: RunningApp, text: str) -> None:
    slack_app = readonly_app
    sender, fake = slack_app.sender, slack_app.fake
    original = sender.slash(text).json()
    url = fake.response_url()
    acked(
        sender.block_action("episodes_share", share_of(original), response_url=url, ephemeral=True)
    )
    posted, deleted = wait_for(
        lambda: fake.responses(url) if len(fake.responses(url)) >= 2 else None
    )
    assert posted["response_type"] == "in_channel", text
    assert posted["replace_original"] is False
    # Same blocks, minus our button, plus who shared it.
    assert posted["blocks"][:-1] == original["blocks"][:-1], text
    assert posted["blocks"][-1]["elements"][0]["text"] == f"Shared by <@{USER}>"
    assert_valid_message(posted)
    assert deleted["delete_original"] is True
    assert "blocks" not in deleted and not deleted.get("text")


def test_share_keeps_digest_buttons(served_app: RunningApp) -> None:
    # Over real HTTP: the lazy listener runs after uvicorn has sent the ack; wait_for polls.
    slack_app = served_app
    original = slack_app.sender.slash("latest").json()
    url = slack_app.fake.response_url()
    slack_app.sender.block_action("episodes_share", share_of(original), response_url=url)
    posted = wait_for(lambda: slack_app.fake.responses(url))[0]
    ids = [
        e["action_id"] for b in posted["blocks"] if b["type"] == "actions" for e in b["elements"]
    ]
    assert ids == ["digest_prs", "digest_nearby"]


@pytest.mark.parametrize(
    "value",
    [
        json.dumps({"c": "subscribe fsdp"}),  # state-changing: never re-run by a button
        json.dumps({"c": "unsubscribe"}),
        "not json",
        json.dumps(["c", "recent"]),
    ],
)
def test_share_refuses_what_it_did_not_make(slack_app: RunningApp, value: str) -> None:
    slack_app.store.subscribe(TEAM, CHANNEL, "PyTorch")
    url = slack_app.fake.response_url()
    acked(slack_app.sender.block_action("episodes_share", value, response_url=url))
    (answer,) = wait_for(lambda: slack_app.fake.responses(url))
    assert "cannot be shared" in answer["text"], value
    assert answer.get("response_type", "ephemeral") == "ephemeral", value
    subs = slack_app.store.subscriptions(team_id=TEAM, channel_id=CHANNEL)
    assert [(s.show, s.keywords) for s in subs] == [("PyTorch", ())]
    assert slack_app.fake.calls_to("chat.postMessage") == []  # nothing posted anywhere


# -- Key PRs and Nearby on digests ----------------------------------------------------------


def test_key_prs_replies_in_the_digest_thread(slack_app: RunningApp) -> None:
    value = button_value("PyTorch", "pytorch-2026-10-05")
    url = slack_app.fake.response_url()
    ts = "1790000000.000100"
    acked(slack_app.sender.block_action("digest_prs", value, response_url=url, message_ts=ts))
    messages = wait_for(lambda: slack_app.fake.messages(CHANNEL))
    assert all(m["thread_ts"] == ts for m in messages)
    text = json.dumps([m["blocks"] for m in messages])
    for number in (199720, 199721, 199726, 199687):
        assert f"https://github.com/pytorch/pytorch/pull/{number}|#{number}" in text
    for message in messages:
        assert_valid_message(message)
    assert slack_app.fake.responses(url) == []


def test_key_prs_posts_in_a_thread_once(slack_app: RunningApp) -> None:
    value = button_value("PyTorch", "pytorch-2026-10-05")
    ts = "1790000000.000700"
    first, second = slack_app.fake.response_url(), slack_app.fake.response_url()
    slack_app.sender.block_action("digest_prs", value, response_url=first, message_ts=ts)
    posted = wait_for(lambda: slack_app.fake.messages(CHANNEL))
    slack_app.sender.block_action("digest_prs", value, response_url=second, message_ts=ts)
    answer = wait_for(lambda: slack_app.fake.responses(second))[0]
    assert answer["response_type"] == "ephemeral"
    assert "pull/199687|#199687" in json.dumps(answer["blocks"])
    assert slack_app.fake.messages(CHANNEL) == posted


def test_key_prs_when_the_thread_already_has_our_reply(slack_app: RunningApp) -> None:
    # Delivery may have put the PR list in the thread already: Slack says who replied.
    value = button_value("PyTorch", "pytorch-2026-10-05")
    url = slack_app.fake.response_url()
    slack_app.sender.block_action(
        "digest_prs",
        value,
        response_url=url,
        message_ts="1790000000.000800",
        message={"reply_count": 1, "reply_users": ["U0BOT"], "latest_reply": "1790000001.0"},
    )
    answer = wait_for(lambda: slack_app.fake.responses(url))[0]
    assert answer["response_type"] == "ephemeral"
    assert slack_app.fake.calls_to("chat.postMessage") == []


def test_key_prs_on_an_ephemeral_reply_answers_ephemerally(readonly_app: RunningApp) -> None:
    slack_app = readonly_app
    value = button_value("PyTorch", "pytorch-2026-10-02")
    url = slack_app.fake.response_url()
    slack_app.sender.block_action("digest_prs", value, response_url=url, ephemeral=True)
    answer = wait_for(lambda: slack_app.fake.responses(url))[0]
    assert answer["response_type"] == "ephemeral" and answer["replace_original"] is False
    assert "pull/199650|#199650" in json.dumps(answer["blocks"])
    assert_valid_message(answer)
    assert slack_app.fake.calls_to("chat.postMessage") == []


def test_key_prs_falls_back_to_ephemeral_when_the_channel_refuses(slack_app: RunningApp) -> None:
    slack_app.fake.channel_error(CHANNEL, "not_in_channel")
    value = button_value("PyTorch", "pytorch-2026-10-05")
    url = slack_app.fake.response_url()
    slack_app.sender.block_action("digest_prs", value, response_url=url, message_ts="1790000000.1")
    answer = wait_for(lambda: slack_app.fake.responses(url))[0]
    assert "pull/199687|#199687" in json.dumps(answer["blocks"])
    assert len(slack_app.fake.calls_to("chat.postMessage")) == 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (button_value("PyTorch", "pytorch-2026-10-03"), "names no pull requests"),
        (button_value("PyTorch", "no-such-guid"), "no longer in the archive"),
        (button_value("PyTorch", "x" * 3000), "no longer in the archive"),  # hashed form
        ("garbage", "no longer in the archive"),
    ],
    ids=["no PRs", "unknown guid", "hashed guid", "garbage"],
)
def test_key_prs_without_prs_or_episode(
    readonly_app: RunningApp, value: str, expected: str
) -> None:
    slack_app = readonly_app
    url = slack_app.fake.response_url()
    ts = "1790000000.2"
    slack_app.sender.block_action("digest_prs", value, response_url=url, message_ts=ts)
    answer = wait_for(lambda: slack_app.fake.responses(url))[0]
    assert expected in answer["text"], value[:60]
    assert_valid_message(answer)
    assert slack_app.fake.calls_to("chat.postMessage") == []


def test_buttons_of_a_digest_with_a_hashed_guid_find_the_episode(slack_app: RunningApp) -> None:
    # A guid too long for a button value travels as its sha256; the store finds it by that.
    (source,) = [e for e in slack_app.episodes if e.guid == "pytorch-2026-10-05"]
    long_guid = "tag:episodes.example.test,2026:" + "a" * 2500
    episode = source.model_copy(update={"guid": long_guid})
    slack_app.store.upsert_episodes([episode], SEED_NOW)
    digest = Renderer().digest(episode)
    values = {
        e["action_id"]: e["value"]
        for b in digest["blocks"]
        if b["type"] == "actions"
        for e in b["elements"]
    }
    assert "guid_sha256" in json.loads(values["digest_prs"])

    ts = "1790000000.000900"
    slack_app.sender.block_action(
        "digest_prs", values["digest_prs"], response_url="http://x", message_ts=ts
    )
    messages = wait_for(lambda: slack_app.fake.messages(CHANNEL))
    assert all(m["thread_ts"] == ts for m in messages)
    assert "pull/199687|#199687" in json.dumps([m["blocks"] for m in messages])

    url = slack_app.fake.response_url()
    slack_app.sender.block_action(
        "digest_nearby", values["digest_nearby"], response_url=url, message_ts="1.3"
    )
    answer = wait_for(lambda: slack_app.fake.responses(url))[0]
    assert "no longer in the archive" not in answer["text"]
    sections = [b["text"]["text"] for b in answer["blocks"] if b["type"] == "section"]
    assert any(text.startswith("*This episode*\nMon 5 Oct 2026") for text in sections)


def test_key_prs_hostile_episode_is_escaped(slack_app: RunningApp) -> None:
    value = button_value("PyTorch", "pytorch-2026-10-03")
    slack_app.store.upsert_episodes(
        [
            slack_app.episodes[1].model_copy(
                update={
                    "pull_requests": (
                        PullRequestRef(
                            number=199700,
                            url="https://github.com/pytorch/pytorch/pull/199700",
                            context="PR 199700 <!channel> moved <@U666> the tutorials.",
                        ),
                    )
                }
            )
        ],
        slack_app.episodes[0].published_at,
    )
    ts = "1790000000.000300"
    slack_app.sender.block_action("digest_prs", value, response_url="http://x", message_ts=ts)
    messages = wait_for(lambda: slack_app.fake.messages(CHANNEL))
    assert "&lt;!channel&gt; moved &lt;@U666&gt;" in json.dumps(messages[0]["blocks"])
    for message in messages:
        assert_valid_message(message)


def test_nearby_button_answers_ephemerally(readonly_app: RunningApp) -> None:
    slack_app = readonly_app
    value = button_value("PyTorch", "pytorch-2026-10-02")
    url = slack_app.fake.response_url()
    acked(slack_app.sender.block_action("digest_nearby", value, response_url=url, message_ts="1.2"))
    answer = wait_for(lambda: slack_app.fake.responses(url))[0]
    assert answer["response_type"] == "ephemeral" and answer["replace_original"] is False
    assert_valid_message(answer)
    sections = [b["text"]["text"] for b in answer["blocks"] if b["type"] == "section"]
    assert sections[1].startswith("*Before*\nThu 1 Oct 2026")
    assert sections[2].startswith("*This episode*\nFri 2 Oct 2026")
    assert sections[3].startswith("*After*\nSat 3 Oct 2026 · <https://episodes.example.test/")


# -- App Home -------------------------------------------------------------------------------


def test_app_home_shows_latest_and_subscriptions(slack_app: RunningApp) -> None:
    slack_app.sender.slash("subscribe fsdp")
    slack_app.store.subscribe(TEAM, "C0SECOND01", "PyTorch")
    slack_app.store.subscribe("T0ELSEWHERE", "C0THEIRS01", "PyTorch")
    response = slack_app.sender.event({"type": "app_home_opened", "user": USER, "tab": "home"})
    assert response.status_code == 200
    view = wait_for(lambda: slack_app.fake.home_view(USER))
    assert view["type"] == "home"
    assert_valid_view(view)
    text = json.dumps(view["blocks"], ensure_ascii=False)
    assert f"{PAGE_URL}|All-Gather Showdown" in text
    assert "&lt;!channel&gt; Quiet Weekend" in text
    assert f"<#{CHANNEL}>" in text and "<#C0SECOND01>" in text
    assert "C0THEIRS01" not in text  # another workspace's subscriptions stay theirs
    assert "only episodes mentioning “fsdp”" in text


def test_app_home_fits_100_blocks_with_many_subscriptions(slack_app: RunningApp) -> None:
    for n in range(150):
        slack_app.store.subscribe(TEAM, f"C0MANY{n:04d}", "PyTorch", keywords=[f"k{n}"])
    slack_app.sender.event({"type": "app_home_opened", "user": USER, "tab": "home"})
    view = wait_for(lambda: slack_app.fake.home_view(USER))
    assert_valid_view(view)
    assert len(view["blocks"]) <= 100
    assert "…and 90 more." in json.dumps(view["blocks"], ensure_ascii=False)


def test_app_home_messages_tab_is_ignored(readonly_app: RunningApp) -> None:
    slack_app = readonly_app
    slack_app.sender.event({"type": "app_home_opened", "user": USER, "tab": "messages"})
    slack_app.settle()  # the lazy listener has finished: had it published, it would show
    assert slack_app.fake.calls_to("views.publish") == []


# -- Unfurls --------------------------------------------------------------------------------


def test_link_shared_unfurls_known_episodes_only(readonly_app: RunningApp) -> None:
    slack_app = readonly_app
    hostile = "https://episodes.example.test/pytorch/2026-10-03"
    event = {
        "type": "link_shared",
        "channel": CHANNEL,
        "user": USER,
        "message_ts": "1790000000.000500",
        "unfurl_id": "C123456.1790000000.000500.abcdef",
        "source": "conversations_history",
        "links": [
            {"domain": "episodes.example.test", "url": PAGE_URL + "/"},
            {"domain": "episodes.example.test", "url": hostile + "#t=30"},
            {"domain": "episodes.example.test", "url": "https://episodes.example.test/nope"},
        ],
    }
    assert slack_app.sender.event(event).status_code == 200
    (call,) = wait_for(lambda: slack_app.fake.calls_to("chat.unfurl"))
    assert call.ok
    assert call.params["channel"] == CHANNEL and call.params["ts"] == "1790000000.000500"
    assert "unfurl_id" not in call.params
    unfurls = call.params["unfurls"]
    assert sorted(unfurls) == sorted([PAGE_URL + "/", hostile + "#t=30"])
    for url, unfurl in unfurls.items():
        assert_valid_message({"text": url, "blocks": unfurl["blocks"]})
    compact = json.dumps(unfurls[PAGE_URL + "/"]["blocks"], ensure_ascii=False)
    assert "All-Gather Showdown and Stack-Aware Merges> · 2:31 · 4 PRs" in compact
    assert "Sharded training weighs three all-gather designs" in compact


def test_link_shared_with_nothing_known_calls_nothing(readonly_app: RunningApp) -> None:
    slack_app = readonly_app
    event = {
        "type": "link_shared",
        "channel": CHANNEL,
        "user": USER,
        "message_ts": "1790000000.000600",
        "links": [{"domain": "example.org", "url": "https://example.org/a"}],
    }
    slack_app.sender.event(event)
    slack_app.settle()  # the lazy listener has finished: had it unfurled, it would show
    assert slack_app.fake.calls_to("chat.unfurl") == []


def test_link_in_the_composer_unfurls_by_unfurl_id(readonly_app: RunningApp) -> None:
    slack_app = readonly_app
    draft = "Uxxxxxxx-909b5454-75f8-4ac4-b325-1b40e230bbd8-gryl3kb80b3wm49ihzoo35fyqoq08n2y"
    event = {
        "type": "link_shared",
        "channel": "COMPOSER",
        "user": USER,
        "message_ts": draft,
        "unfurl_id": draft,
        "source": "composer",
        "links": [{"domain": "episodes.example.test", "url": PAGE_URL}],
    }
    slack_app.sender.event(event)
    (call,) = wait_for(lambda: slack_app.fake.calls_to("chat.unfurl"))
    assert call.params["source"] == "composer"
    assert call.params["unfurl_id"] == event["unfurl_id"]
    assert "ts" not in call.params and "channel" not in call.params
    assert list(call.params["unfurls"]) == [PAGE_URL]
