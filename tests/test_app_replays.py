"""Replays and retries run once; a click cannot aim a thread reply at another channel."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlencode

from bot.middleware.replay import replay_key
from digests.render.blocks import button_value
from tests.fixtures.app import CHANNEL, TEAM, USER, RunningApp, wait_for

FORM = "application/x-www-form-urlencoded"


def test_a_replayed_subscribe_changes_and_announces_once(slack_app: RunningApp) -> None:
    url = slack_app.fake.response_url()
    body = slack_app.sender.slash_body("subscribe PyTorch fsdp", response_url=url)
    ts = int(time.time())
    first = slack_app.sender.post(body, FORM, timestamp=ts)
    assert first.status_code == 200 and "fsdp" in first.text
    announced = wait_for(lambda: slack_app.fake.responses(url))
    again = slack_app.sender.post(body, FORM, timestamp=ts)  # the same signed request
    assert again.status_code == 200 and again.text == ""
    assert slack_app.fake.responses(url) == announced
    assert len(announced) == 1
    assert [s.keywords for s in slack_app.store.subscriptions()] == [("fsdp",)]


def test_a_read_only_command_answers_every_time(slack_app: RunningApp) -> None:
    body = slack_app.sender.slash_body("recent")
    ts = int(time.time())
    answers = [slack_app.sender.post(body, FORM, timestamp=ts) for _ in range(2)]
    assert [a.status_code for a in answers] == [200, 200]
    assert answers[0].json()["blocks"] == answers[1].json()["blocks"]


def _envelope(event_id: str) -> bytes:
    event = {
        "type": "link_shared",
        "channel": CHANNEL,
        "user": USER,
        "message_ts": "1790000000.000900",
        "unfurl_id": "C123456.1790000000.000900.abcdef",
        "source": "conversations_history",
        "links": [
            {
                "domain": "episodes.example.test",
                "url": "https://episodes.example.test/pytorch/2026-10-03",
            }
        ],
    }
    envelope = {
        "token": "legacy-verification-token",
        "team_id": TEAM,
        "api_app_id": "A0TEST",
        "event": event,
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(time.time()),
    }
    return json.dumps(envelope).encode()


def test_an_event_slack_retries_runs_once(slack_app: RunningApp) -> None:
    body = _envelope("Ev0RETRIED1")
    assert slack_app.sender.post(body, "application/json").status_code == 200
    wait_for(lambda: slack_app.fake.calls_to("chat.unfurl"))
    # Slack's retry carries the same event id under a fresh signature.
    retry = slack_app.sender.post(body, "application/json", timestamp=int(time.time()) + 1)
    assert retry.status_code == 200
    assert len(slack_app.fake.calls_to("chat.unfurl")) == 1


def _click(channel: str, container_channel: str, url: str) -> bytes:
    payload: dict[str, Any] = {
        "type": "block_actions",
        "team": {"id": TEAM, "domain": "digestbot-test"},
        "user": {"id": USER, "username": "ada", "team_id": TEAM},
        "api_app_id": "A0TEST",
        "token": "legacy-verification-token",
        "trigger_id": "13345224609.738474920.8088930838d88f008e0",
        "channel": {"id": channel, "name": "podcasts"},
        "response_url": url,
        "container": {
            "type": "message",
            "message_ts": "1790000000.000800",
            "channel_id": container_channel,
            "is_ephemeral": False,
        },
        "message": {"type": "message", "ts": "1790000000.000800", "text": "digest"},
        "actions": [
            {
                "type": "button",
                "action_id": "digest_prs",
                "block_id": "b1",
                "value": button_value("PyTorch", "pytorch-2026-10-05"),
                "action_ts": f"{time.time():.6f}",
                "text": {"type": "plain_text", "text": "Key PRs"},
            }
        ],
    }
    return urlencode({"payload": json.dumps(payload)}).encode()


def test_a_replayed_click_posts_its_thread_reply_once(slack_app: RunningApp) -> None:
    url = slack_app.fake.response_url()
    body = _click(CHANNEL, CHANNEL, url)
    ts = int(time.time())
    assert slack_app.sender.post(body, FORM, timestamp=ts).status_code == 200
    posted = wait_for(lambda: slack_app.fake.messages(CHANNEL))
    assert slack_app.sender.post(body, FORM, timestamp=ts).status_code == 200
    # Not run again at all: no second thread post and no private copy either.
    assert slack_app.fake.messages(CHANNEL) == posted
    assert slack_app.fake.responses(url) == []


def test_a_click_naming_another_channel_gets_a_private_answer_only(
    slack_app: RunningApp,
) -> None:
    url = slack_app.fake.response_url()
    assert slack_app.sender.post(_click("C0OTHER001", CHANNEL, url), FORM).status_code == 200
    (answer, *_) = wait_for(lambda: slack_app.fake.responses(url))
    assert answer["response_type"] == "ephemeral"
    assert slack_app.fake.calls_to("chat.postMessage") == []


def test_replay_keys() -> None:
    assert replay_key({"type": "event_callback", "event_id": "Ev1"}, "x", "1") == "event:Ev1"
    assert replay_key({"command": "/episodes", "text": "recent"}, "x", "1") is None
    assert replay_key({"command": "/episodes", "text": "ｓｕｂｓｃｒｉｂｅ JAX"}, "x", "1")
    click = replay_key({"type": "block_actions"}, "body", "1")
    assert click is not None and click != replay_key({"type": "block_actions"}, "body", "2")
