"""bot.dispatch gives Bolt's request path the same values Bolt's own parts give, cheaper.

Each test builds the thing both ways — Bolt's (``parse_qsl``, ``to_async_bolt_request``,
``AsyncApp._init_context``, the builtin command matcher, ``build_async_required_kwargs``)
and ours — and compares them, so a Bolt or slack_sdk upgrade that changes what a request
carries fails here instead of drifting.
"""

from __future__ import annotations

import random
from typing import Any
from urllib.parse import parse_qsl, urlencode

import pytest
from slack_bolt.adapter.starlette.async_handler import to_async_bolt_request
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.kwargs_injection.async_utils import build_async_required_kwargs
from slack_bolt.listener_matcher.builtins import command as builtin_command
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from starlette.requests import Request

from bot.dispatch import (
    CommandListener,
    DigestApp,
    FunctionAuthorize,
    acked,
    bolt_request,
    ephemeral_body,
    parse_form,
)

SECRET = "0" * 32


def _slash(text: str = "recent", **extra: str) -> str:
    fields = {
        "token": "legacy",
        "team_id": "T0TEST",
        "channel_id": "C0TEST0001",
        "user_id": "U0USER0001",
        "command": "/episodes",
        "text": text,
        "response_url": "https://hooks.example/r/1",
        "trigger_id": "1.2.3",
        **extra,
    }
    return urlencode(fields)


FORMS = [
    _slash(),
    _slash('search "fsdp & ddp" +tp -old 100%'),
    _slash("nearby 2026-10-05 ünïcode ✓ <!channel>"),
    "a=1&a=2&b=&c&&=d&e==f",
    "x=%zz&y=%C3%A9%e2%9c%93&z=%&w=%2",
    "a+b=c+d&%2B=%26&sp%20ace=1",
    "",
    "&",
    "=",
    "==",
]


def _random_forms(count: int) -> list[str]:
    rng = random.Random(20261007)
    alphabet = ["a", "b", "=", "&", "+", "%", "2", "F", "C3", "%A9", "%zz", " ", "é", ";"]
    return ["".join(rng.choices(alphabet, k=rng.randint(0, 30))) for _ in range(count)]


def test_parse_form_is_parse_qsl() -> None:
    # One test for the ~400 forms (not one each): per-test reporting would cost more than
    # the comparisons; every form that differs is listed.
    differ = [
        text
        for text in FORMS + _random_forms(400)
        if parse_form(text) != dict(parse_qsl(text, keep_blank_values=True))
    ]
    assert differ == []


def _starlette(body: bytes, headers: list[tuple[str, str]], query: str = "") -> Request:
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/slack/events",
        "query_string": query.encode(),
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers],
    }
    return Request(scope)


def _state(req: AsyncBoltRequest) -> dict[str, Any]:
    state = dict(vars(req))
    state["context"] = dict(req.context)
    return state


FORM = [("Content-Type", "application/x-www-form-urlencoded")]
JSON = [("Content-Type", "application/json")]
REQUESTS = [
    (_slash(), FORM, ""),
    (_slash("payload please"), FORM, ""),  # Bolt reads a "payload" form field: none here
    (urlencode({"payload": '{"type": "block_actions", "team": {"id": "T1"}}'}), FORM, ""),
    ('{"type": "event_callback", "team_id": "T1", "event": {"type": "app_home_opened"}}', JSON, ""),
    ('{"type": "url_verification", "challenge": "c"}', FORM, ""),
    ("", FORM, ""),
    (_slash(), [*FORM, ("X-Slack-Retry-Num", "1"), ("x-slack-retry-num", "2")], "a=1&a=2&b"),
    (_slash(), [("X-Slack-Bolt-Lazy-Only", "1"), ("X-Slack-Bolt-Lazy-Function-Name", "f")], ""),
    (_slash(), [], ""),
]


@pytest.mark.parametrize(("body", "headers", "query"), REQUESTS)
def test_bolt_request_is_bolts_adapter(
    body: str, headers: list[tuple[str, str]], query: str
) -> None:
    raw = body.encode()
    theirs = to_async_bolt_request(_starlette(raw, headers, query), raw)
    ours = bolt_request(_starlette(raw, headers, query), raw)
    assert isinstance(ours, AsyncBoltRequest)
    assert _state(ours) == _state(theirs)


def test_bolt_request_refuses_what_bolt_refuses() -> None:
    raw = b"text=\xff\xfe"
    with pytest.raises(UnicodeDecodeError):
        to_async_bolt_request(_starlette(raw, FORM), raw)
    with pytest.raises(UnicodeDecodeError):
        bolt_request(_starlette(raw, FORM), raw)


def _client() -> AsyncWebClient:
    return AsyncWebClient(token="xoxb-app", base_url="http://127.0.0.1:9/api", timeout=7)


async def _authorize(
    enterprise_id: str | None, team_id: str | None, user_id: str | None
) -> AuthorizeResult:
    return AuthorizeResult(enterprise_id=enterprise_id, team_id=team_id, user_id=user_id)


def _apps(**options: Any) -> tuple[AsyncApp, DigestApp]:
    common = {"signing_secret": SECRET, "process_before_response": True, **options}
    bolt = AsyncApp(client=_client(), authorize=_authorize, **common)
    ours = DigestApp(client=_client(), authorize=FunctionAuthorize(_authorize), **common)  # type: ignore[arg-type]
    return bolt, ours


def _client_state(client: AsyncWebClient) -> dict[str, Any]:
    state = dict(vars(client))
    state["retry_handlers"] = [type(h) for h in client.retry_handlers]
    state["_logger"] = client.logger.name
    return state


@pytest.mark.parametrize("team_id", ["T0TEST", None])
@pytest.mark.parametrize("proxy", [None, "http://proxy.example:3128"])
def test_each_request_gets_the_client_bolt_would_build(
    team_id: str | None, proxy: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy)
    bolt, ours = _apps()
    body = _slash() if team_id else urlencode({"command": "/episodes"})
    requests = []
    for app in (bolt, ours, ours):
        req = AsyncBoltRequest(body=body, headers={"content-type": FORM[0][1]})
        app._init_context(req)
        requests.append(req)
    theirs, first, second = (r.context for r in requests)
    assert _client_state(first["client"]) == _client_state(theirs["client"])
    assert first["client"].proxy == proxy
    own = ("client", "listener_runner")  # each app's own
    assert {k: v for k, v in first.items() if k not in own} == {
        k: v for k, v in theirs.items() if k not in own
    }
    assert first["listener_runner"] is ours.listener_runner
    # Its own per request (a listener may change its token): not the app's, not shared.
    assert first["client"] is not second["client"]
    assert first["client"] is not ours.client
    assert first["client"].retry_handlers is not ours.client.retry_handlers
    assert first["client"].default_params is not second["client"].default_params
    first["client"].token = "xoxb-changed"
    assert second["client"].token is None and ours.client.token == "xoxb-app"


BODIES: list[dict[str, Any]] = [
    {"command": "/episodes", "text": "recent"},
    {"command": "/other", "text": "recent"},
    {"command": None},
    {"type": "block_actions", "actions": [{"action_id": "a"}]},
    {"text": "/episodes"},
    {},
]


@pytest.mark.parametrize("body", BODIES)
async def test_command_listener_matches_as_bolts_matcher(body: dict[str, Any]) -> None:
    async def on_episodes(ack: Any) -> None:
        pass

    listener = CommandListener("digestbot", "/episodes", on_episodes, None)
    req = AsyncBoltRequest(body=body, mode="socket_mode")
    resp = BoltResponse(status=200)
    bolt = builtin_command("/episodes", asyncio=True)
    assert await listener.async_matches(req=req, resp=resp) == await bolt.async_matches(req, resp)


async def test_command_listener_passes_what_bolt_passes() -> None:
    seen: list[dict[str, Any]] = []

    async def named(ack: Any, respond: Any, client: Any, command: Any, body: Any) -> None:
        seen.append({"ack": ack, "respond": respond, "client": client, "command": command})

    async def other(ack: Any, logger: Any, say: Any) -> None:  # logger: Bolt's own building
        seen.append({"ack": ack, "logger": logger, "say": say})

    _, app = _apps()
    for function in (named, other):
        listener = CommandListener("digestbot", "/episodes", function, None)
        req = AsyncBoltRequest(body=_slash(), headers={"content-type": FORM[0][1]})
        app._init_context(req)
        resp = BoltResponse(status=200)
        await listener.run_ack_function(request=req, response=resp)
        expected = build_async_required_kwargs(
            logger=listener.logger,
            required_arg_names=list(seen[-1]),
            request=req,
            response=resp,
            this_func=function,
        )
        assert seen[-1] == {name: expected[name] for name in seen[-1]}
        assert all(value is not None for value in seen[-1].values())


def test_command_listener_is_registered_like_app_command() -> None:
    _, app = _apps()

    async def on_episodes(ack: Any) -> None:
        pass

    assert app.command_listener("/episodes")(on_episodes) is on_episodes
    assert app._async_listeners[-1].ack_function is on_episodes

    def not_async(ack: Any) -> None:
        pass

    with pytest.raises(Exception, match="coroutine"):
        app.command_listener("/episodes")(not_async)  # type: ignore[type-var]


async def test_function_authorize_passes_the_ids_and_refuses_on_slack_errors() -> None:
    calls: list[tuple[str | None, ...]] = []

    async def ok(e: str | None, t: str | None, u: str | None) -> AuthorizeResult:
        calls.append((e, t, u))
        return AuthorizeResult(enterprise_id=e, team_id=t, user_id=u, bot_token="xoxb-1")

    async def refused(e: str | None, t: str | None, u: str | None) -> AuthorizeResult:
        raise SlackApiError("invalid_auth", response={"ok": False})  # type: ignore[arg-type]

    req = AsyncBoltRequest(body=_slash(), headers={"content-type": FORM[0][1]})
    context = req.context
    result = await FunctionAuthorize(ok)(
        context=context, enterprise_id="E1", team_id="T1", user_id="U1"
    )
    assert result is not None and result.bot_token == "xoxb-1"
    assert calls == [("E1", "T1", "U1")]
    assert (
        await FunctionAuthorize(refused)(
            context=context, enterprise_id=None, team_id="T1", user_id="U1"
        )
        is None
    )


MESSAGES: list[dict[str, Any]] = [
    {
        "text": "Recent *PyTorch* episodes",
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "é <!channel> &amp; …"}}],
    },
    {"text": "Nothing matches", "blocks": []},
    {"text": "", "blocks": [{"type": "divider"}, {"type": "context", "elements": []}]},
]


@pytest.mark.parametrize("message", MESSAGES)
async def test_ephemeral_body_is_what_ack_answers(message: dict[str, Any]) -> None:
    ack = AsyncAck()
    await ack(response_type="ephemeral", text=message["text"], blocks=message["blocks"])
    assert ack.response is not None
    ours = acked(ephemeral_body(message))  # type: ignore[arg-type]
    assert (ours.status, ours.body, ours.headers) == (
        ack.response.status,
        ack.response.body,
        ack.response.headers,
    )
