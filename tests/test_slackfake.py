"""The Slack Web API fake, driven by the real slack_sdk clients over loopback HTTP."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_interval_calculators import FixedValueRetryIntervalCalculator
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from tests.slackfake import RemoteSlackFake, SlackFake, block_problems


def client_for(fake: SlackFake, **kwargs: Any) -> AsyncWebClient:
    return AsyncWebClient(token=fake.token, base_url=fake.api_url, **kwargs)


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


async def test_auth_test(slack_fake: SlackFake) -> None:
    response = await client_for(slack_fake).auth_test()
    assert response["team_id"] == "T0TEST"
    assert response["user_id"] == "U0BOT"
    assert response["bot_id"] == "B0BOT"
    assert slack_fake.calls_to("auth.test")[0].token == slack_fake.token


async def test_post_message_json_records_blocks_and_metadata(slack_fake: SlackFake) -> None:
    client = client_for(slack_fake)
    blocks = [section("*PyTorch*: All-Gather Showdown")]
    metadata = {"event_type": "digest_posted", "event_payload": {"guid": "ep-1"}}
    response = await client.chat_postMessage(
        channel="C1", text="All-Gather Showdown", blocks=blocks, metadata=metadata
    )
    assert response["channel"] == "C1"
    assert response["message"]["text"] == "All-Gather Showdown"
    [message] = slack_fake.messages("C1")
    assert message["ts"] == response["ts"]
    assert message["blocks"] == blocks
    assert message["metadata"] == metadata
    call = slack_fake.calls_to("chat.postMessage")[0]
    assert call.params["blocks"] == blocks
    assert call.ok


async def test_ts_unique_and_increasing(slack_fake: SlackFake) -> None:
    client = client_for(slack_fake)
    responses = await asyncio.gather(
        *(client.chat_postMessage(channel="C1", text=f"m{i}") for i in range(20))
    )
    stamps = [r["ts"] for r in responses]
    assert len(set(stamps)) == 20
    recorded = [m["ts"] for m in slack_fake.messages("C1")]
    assert recorded == sorted(recorded, key=float)
    assert all(len(ts.split(".")[1]) == 6 for ts in stamps)


def test_form_encoded_with_json_strings_and_token_param(slack_fake: SlackFake) -> None:
    blocks = [section("hello")]
    response = httpx.post(
        slack_fake.api_url + "chat.postMessage",
        data={
            "token": slack_fake.token,
            "channel": "C9",
            "text": "hello",
            "blocks": json.dumps(blocks),
            "metadata": json.dumps({"event_type": "x", "event_payload": {}}),
        },
    )
    body = response.json()
    assert body["ok"] is True
    assert slack_fake.messages("C9")[0]["blocks"] == blocks
    assert slack_fake.messages("C9")[0]["metadata"]["event_type"] == "x"


@pytest.mark.parametrize(
    ("body", "content_type", "error"),
    [
        (b"{not json", "application/json", "invalid_json"),
        (b"[1, 2]", "application/json", "invalid_json"),
        (
            b"channel=C1&blocks=%5Bnope",
            "application/x-www-form-urlencoded",
            "invalid_blocks_format",
        ),
    ],
)
def test_malformed_bodies(
    slack_fake: SlackFake, body: bytes, content_type: str, error: str
) -> None:
    response = httpx.post(
        slack_fake.api_url + "chat.postMessage",
        content=body,
        headers={"Content-Type": content_type, "Authorization": f"Bearer {slack_fake.token}"},
    )
    assert response.json() == {"ok": False, "error": error}
    assert slack_fake.messages("C1") == []


def test_sync_web_client_works_too(slack_fake: SlackFake) -> None:
    client = WebClient(token=slack_fake.token, base_url=slack_fake.api_url)
    assert client.chat_postMessage(channel="C1", text="sync")["ok"]
    assert slack_fake.messages("C1")[0]["text"] == "sync"


@pytest.mark.parametrize(("token", "error"), [("xoxb-wrong", "invalid_auth"), (None, "not_authed")])
async def test_bad_or_missing_token(slack_fake: SlackFake, token: str | None, error: str) -> None:
    client = AsyncWebClient(token=token, base_url=slack_fake.api_url)
    with pytest.raises(SlackApiError) as info:
        await client.chat_postMessage(channel="C1", text="x")
    assert info.value.response["error"] == error
    assert slack_fake.messages("C1") == []


async def test_unknown_method(slack_fake: SlackFake) -> None:
    with pytest.raises(SlackApiError) as info:
        await client_for(slack_fake).api_call("admin.conversations.create", json={"name": "x"})
    assert info.value.response["error"] == "unknown_method"


async def test_history_newest_first_limit_oldest_and_metadata(slack_fake: SlackFake) -> None:
    client = client_for(slack_fake)
    posted = []
    for i in range(5):
        r = await client.chat_postMessage(
            channel="C1", text=f"m{i}", metadata={"event_type": "d", "event_payload": {"i": i}}
        )
        posted.append(r["ts"])
    await client.chat_postMessage(channel="C1", text="reply", thread_ts=posted[0])
    await client.chat_postMessage(channel="C2", text="elsewhere")

    plain = await client.conversations_history(channel="C1", limit=3)
    assert [m["text"] for m in plain["messages"]] == ["m4", "m3", "m2"]
    assert plain["has_more"] is True
    assert all("metadata" not in m for m in plain["messages"])

    rich = await client.conversations_history(
        channel="C1", oldest=posted[2], include_all_metadata=True
    )
    assert [m["text"] for m in rich["messages"]] == ["m4", "m3"]
    assert [m["metadata"]["event_payload"]["i"] for m in rich["messages"]] == [4, 3]
    assert rich["has_more"] is False

    inclusive = await client.conversations_history(channel="C1", oldest=posted[2], inclusive=True)
    assert len(inclusive["messages"]) == 3
    # Thread replies are not in history (as in Slack) but the fake still records them.
    assert [m["text"] for m in slack_fake.messages("C1")][-1] == "reply"
    assert slack_fake.messages("C1")[-1]["thread_ts"] == posted[0]


async def test_history_cursor_pages_and_replies(slack_fake: SlackFake) -> None:
    client = client_for(slack_fake)
    parent = await client.chat_postMessage(channel="C1", text="parent")
    for i in range(4):
        await client.chat_postMessage(channel="C1", text=f"top{i}")
    for i in range(3):
        await client.chat_postMessage(
            channel="C1",
            text=f"reply{i}",
            thread_ts=parent["ts"],
            metadata={"event_type": "part", "event_payload": {"i": i}},
        )
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = await client.conversations_history(channel="C1", limit=2, cursor=cursor)
        seen += [m["text"] for m in page["messages"]]
        pages += 1
        cursor = page["response_metadata"]["next_cursor"]
        if not cursor:
            assert page["has_more"] is False
            break
    assert seen == ["top3", "top2", "top1", "top0", "parent"]
    assert pages == 3

    thread = await client.conversations_replies(
        channel="C1", ts=parent["ts"], include_all_metadata=True
    )
    assert [m["text"] for m in thread["messages"]] == ["parent", "reply0", "reply1", "reply2"]
    assert [m["metadata"]["event_payload"]["i"] for m in thread["messages"][1:]] == [0, 1, 2]
    with pytest.raises(SlackApiError, match="thread_not_found"):
        await client.conversations_replies(channel="C1", ts="1.000001")


async def test_update_ephemeral_unfurl_views_join(slack_fake: SlackFake) -> None:
    client = client_for(slack_fake)
    posted = await client.chat_postMessage(channel="C1", text="v1")
    updated = await client.chat_update(channel="C1", ts=posted["ts"], text="v2")
    assert updated["ts"] == posted["ts"]
    assert slack_fake.messages("C1")[0]["text"] == "v2"
    with pytest.raises(SlackApiError, match="message_not_found"):
        await client.chat_update(channel="C1", ts="1.000001", text="v3")

    eph = await client.chat_postEphemeral(channel="C1", user="U1", text="only you")
    assert eph["message_ts"]
    assert slack_fake.ephemerals("C1")[0]["user"] == "U1"
    assert len(slack_fake.messages("C1")) == 1

    await client.chat_unfurl(
        channel="C1", ts=posted["ts"], unfurls={"https://x": {"text": "preview"}}
    )
    assert slack_fake.calls_to("chat.unfurl")[0].params["unfurls"]["https://x"]["text"] == "preview"

    view = {"type": "home", "blocks": [section("home")]}
    published = await client.views_publish(user_id="U1", view=view)
    assert published["view"]["id"].startswith("V")
    home = slack_fake.home_view("U1")
    assert home is not None and home["blocks"] == view["blocks"]

    joined = await client.conversations_join(channel="C7")
    assert joined["channel"]["id"] == "C7"


@pytest.mark.parametrize("error", ["channel_not_found", "is_archived", "not_in_channel"])
async def test_channel_errors_persist(slack_fake: SlackFake, error: str) -> None:
    client = client_for(slack_fake)
    slack_fake.channel_error("C1", error)
    for _ in range(2):
        with pytest.raises(SlackApiError) as info:
            await client.chat_postMessage(channel="C1", text="x")
        assert info.value.response["error"] == error
    assert (await client.chat_postMessage(channel="C2", text="fine"))["ok"]
    assert slack_fake.messages("C1") == []
    slack_fake.channel_error("C1", None)
    assert (await client.chat_postMessage(channel="C1", text="back"))["ok"]


async def test_join_clears_not_in_channel(slack_fake: SlackFake) -> None:
    client = client_for(slack_fake)
    slack_fake.channel_error("C1", "not_in_channel")
    await client.conversations_join(channel="C1")
    assert (await client.chat_postMessage(channel="C1", text="after join"))["ok"]


async def test_429_is_retried_by_slack_sdk_handler(slack_fake: SlackFake) -> None:
    slack_fake.fail_next("chat.postMessage", status=429, retry_after=0, times=2)
    client = client_for(slack_fake, retry_handlers=[AsyncRateLimitErrorRetryHandler(3)])
    response = await client.chat_postMessage(channel="C1", text="eventually")
    assert response["ok"]
    attempts = slack_fake.calls_to("chat.postMessage")
    assert [c.status for c in attempts] == [429, 429, 200]
    assert len(slack_fake.messages("C1")) == 1


async def test_429_without_handler_surfaces_retry_after(slack_fake: SlackFake) -> None:
    slack_fake.fail_next("chat.postMessage", status=429, retry_after=7)
    with pytest.raises(SlackApiError) as info:
        await client_for(slack_fake).chat_postMessage(channel="C1", text="x")
    assert info.value.response.status_code == 429
    assert info.value.response["error"] == "ratelimited"
    assert info.value.response.headers["Retry-After"] in ("7", ["7"])


async def test_500_then_success_with_server_error_handler(slack_fake: SlackFake) -> None:
    slack_fake.fail_next("chat.postMessage", status=500, times=1)
    plain = client_for(slack_fake)
    with pytest.raises(SlackApiError) as info:
        await plain.chat_postMessage(channel="C1", text="x")
    assert info.value.response.status_code == 500
    slack_fake.fail_next("chat.postMessage", status=503, times=1)
    # A short fixed wait instead of the default backoff (0.5 s and up): the retry is the point.
    handler = AsyncServerErrorRetryHandler(2, FixedValueRetryIntervalCalculator(0.01))
    retrying = client_for(slack_fake, retry_handlers=[handler])
    assert (await retrying.chat_postMessage(channel="C1", text="y"))["ok"]
    assert [m["text"] for m in slack_fake.messages("C1")] == ["y"]


async def test_error_fault_then_recovers(slack_fake: SlackFake) -> None:
    slack_fake.fail_next("auth.test", error="invalid_auth")
    client = client_for(slack_fake)
    with pytest.raises(SlackApiError, match="invalid_auth"):
        await client.auth_test()
    assert (await client.auth_test())["ok"]


async def test_latency_overlaps_concurrent_calls(slack_fake: SlackFake) -> None:
    slack_fake.latency = 0.2
    client = client_for(slack_fake)
    await asyncio.gather(*(client.chat_postMessage(channel="C1", text=str(i)) for i in range(20)))
    assert len(slack_fake.messages("C1")) == 20
    assert slack_fake.max_in_flight >= 10


@pytest.mark.parametrize(
    ("blocks", "error"),
    [
        ([section("ok")], None),
        ([{"type": "divider"}] * 50, None),
        ([{"type": "divider"}] * 51, "invalid_blocks"),
        ([{"type": "header", "text": {"type": "plain_text", "text": "h" * 150}}], None),
        ([{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}], "invalid_blocks"),
        ([section("s" * 3000)], None),
        ([section("s" * 3001)], "invalid_blocks"),
        ([section("")], "invalid_blocks"),
        ([{"type": "section", "fields": [{"type": "mrkdwn", "text": "f"}] * 11}], "invalid_blocks"),
        (
            [{"type": "context", "elements": [{"type": "mrkdwn", "text": "c"}] * 11}],
            "invalid_blocks",
        ),
        ([section("s" * 2900)] * 5, "msg_blocks_too_long"),
        ([{"text": "no type"}], "invalid_blocks"),
        ("not a list", "invalid_blocks_format"),
    ],
)
def test_block_problems(blocks: Any, error: str | None) -> None:
    problem = block_problems(blocks)
    assert (problem[0] if problem else None) == error


async def test_invalid_blocks_rejected_unless_checking_is_off(slack_fake: SlackFake) -> None:
    client = client_for(slack_fake)
    too_many = [{"type": "divider"}] * 51
    with pytest.raises(SlackApiError) as info:
        await client.chat_postMessage(channel="C1", text="x", blocks=too_many)
    assert info.value.response["error"] == "invalid_blocks"
    assert info.value.response["errors"]
    slack_fake.check_blocks = False
    assert (await client.chat_postMessage(channel="C1", text="x", blocks=too_many))["ok"]


async def test_response_url_records_bodies_and_allows_five_uses(slack_fake: SlackFake) -> None:
    url = slack_fake.response_url()
    other = slack_fake.response_url()
    assert url != other and url.startswith(slack_fake.base_url + "/respond/")
    webhook = AsyncWebhookClient(url)
    for i in range(5):
        response = await webhook.send(text=f"r{i}", response_type="ephemeral")
        assert response.status_code == 200
    sixth = await webhook.send(text="too many")
    assert sixth.status_code == 404
    bodies = slack_fake.responses(url)
    assert [b["text"] for b in bodies] == [f"r{i}" for i in range(5)]
    assert slack_fake.responses(url.rsplit("/", 1)[1]) == bodies
    assert slack_fake.responses(other) == []


def test_separate_process(slack_fake_process: RemoteSlackFake) -> None:
    remote = slack_fake_process
    assert remote.api_url.endswith("/api/")
    client = WebClient(token=remote.token, base_url=remote.api_url)
    client.chat_postMessage(channel="C1", text="from a process")
    assert remote.messages("C1")[0]["text"] == "from a process"
    remote.fail_next("chat.postMessage", error="is_archived")
    with pytest.raises(SlackApiError, match="is_archived"):
        client.chat_postMessage(channel="C1", text="x")
    remote.channel_error("C3", "channel_not_found")
    with pytest.raises(SlackApiError, match="channel_not_found"):
        client.chat_postMessage(channel="C3", text="x")
    assert [c["status"] for c in remote.calls_to("chat.postMessage")] == [200, 200, 200]
    url = remote.response_url()
    httpx.post(url, json={"text": "hi"})
    assert remote.responses(url) == [{"text": "hi"}]
    remote.configure(check_blocks=False)
    client.chat_postMessage(channel="C1", text="x", blocks=[{"type": "divider"}] * 51)
    assert len(remote.messages("C1")) == 2
    remote.reset()
    assert remote.calls == []


def test_slack_env_sets_environment(slack_env: SlackFake) -> None:
    import os

    assert os.environ["SLACK_API_URL"] == slack_env.api_url
    assert os.environ["SLACK_BOT_TOKEN"] == slack_env.token
