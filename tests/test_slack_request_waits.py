"""Request paths never sleep out a long Retry-After, and a Slack
outage at the first request does not refuse it ("installation no longer available")."""

from __future__ import annotations

import asyncio
import json

import pytest

from bot.delivery.slack import make_web_client
from bot.delivery.slack_wait import SlackIdentity
from bot.runtime import resolve_team_id
from config.settings import Settings
from digests.errors import SlackError
from digests.render.blocks import button_value
from tests.fixtures.app import TEAM, RunningApp, make_settings, wait_for
from tests.slackfake import BOT_USER_ID, SlackFake

AN_HOUR = 3600
BOLT_REFUSAL = "no longer available"


def test_key_prs_click_rate_limited_for_an_hour_answers_privately_at_once(
    slack_app: RunningApp,
) -> None:
    slack_app.fake.fail_next("chat.postMessage", status=429, retry_after=AN_HOUR, times=4)
    value = button_value("PyTorch", "pytorch-2026-10-05")
    url = slack_app.fake.response_url()
    slack_app.sender.block_action("digest_prs", value, response_url=url, message_ts="1790000000.1")
    answer = wait_for(lambda: slack_app.fake.responses(url))[0]
    assert answer["response_type"] == "ephemeral"
    assert "pull/199687|#199687" in json.dumps(answer["blocks"])
    # One try: the 429 asked for an hour, more than a click can wait.
    assert len(slack_app.fake.calls_to("chat.postMessage")) == 1


def test_first_command_while_auth_test_is_rate_limited_for_an_hour_is_answered(
    slack_app: RunningApp,
) -> None:
    slack_app.fake.fail_next("auth.test", status=429, retry_after=AN_HOUR, times=10)
    reply = slack_app.sender.slash("recent 3")
    assert reply.status_code == 200
    assert BOLT_REFUSAL not in reply.text
    assert "All-Gather Showdown" in json.dumps(reply.json())
    assert len(slack_app.fake.calls_to("auth.test")) == 1


def test_first_command_during_a_slack_outage_is_answered_from_the_store(
    slack_app: RunningApp,
) -> None:
    slack_app.fake.fail_next("auth.test", status=503, times=1000)
    reply = slack_app.sender.slash("recent 3")
    assert reply.status_code == 200
    assert BOLT_REFUSAL not in reply.text
    assert "All-Gather Showdown" in json.dumps(reply.json())
    # The second command inside the backoff does not ask Slack again.
    asked = len(slack_app.fake.calls_to("auth.test"))
    assert "All-Gather Showdown" in json.dumps(slack_app.sender.slash("recent 3").json())
    assert len(slack_app.fake.calls_to("auth.test")) == asked


def test_a_refused_token_still_refuses(slack_app: RunningApp) -> None:
    slack_app.fake.fail_next("auth.test", error="invalid_auth", times=10)
    url = slack_app.fake.response_url()
    reply = slack_app.sender.slash("recent 3", response_url=url)
    # Bolt says it in the HTTP answer or through response_url, depending on its path.
    assert BOLT_REFUSAL in reply.text + json.dumps(slack_app.fake.responses(url))


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_identity_waits_out_an_outage_with_backoff(slack_fake: SlackFake) -> None:
    settings = make_settings(slack_fake.api_url, slack_fake.token)
    clock = _Clock()
    identity = SlackIdentity(make_web_client(settings, max_retries=0), backoff=2, clock=clock)
    slack_fake.fail_next("auth.test", status=503, times=2)

    first = await identity.resolve(None, TEAM, "U1")
    assert first is not None and first.bot_token == slack_fake.token
    assert first.bot_user_id is None  # not known yet: Slack has not said
    await identity.resolve(None, TEAM, "U1")  # inside the 2 s backoff: Slack not asked
    assert len(slack_fake.calls_to("auth.test")) == 1
    clock.now = 2.0
    await identity.resolve(None, TEAM, "U1")  # fails again: the next wait doubles
    clock.now = 5.9
    await identity.resolve(None, TEAM, "U1")
    assert len(slack_fake.calls_to("auth.test")) == 2
    clock.now = 6.0
    known = await identity.resolve(None, TEAM, "U1")
    assert known is not None and known.bot_user_id == BOT_USER_ID
    clock.now = 1000.0
    await identity.resolve(None, TEAM, "U1")  # kept: Slack answered once
    assert len(slack_fake.calls_to("auth.test")) == 3


async def test_run_once_first_call_fails_fast_on_an_hour_long_retry_after(
    slack_fake: SlackFake,
) -> None:
    settings: Settings = make_settings(slack_fake.api_url, slack_fake.token)
    slack_fake.fail_next("auth.test", status=429, retry_after=AN_HOUR, times=10)
    with pytest.raises(SlackError, match="ratelimited"):
        # Bounded so that today's behaviour (sleeping the hour) fails instead of hanging.
        await asyncio.wait_for(resolve_team_id(settings), 30)
    assert len(slack_fake.calls_to("auth.test")) == 1
