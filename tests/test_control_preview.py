"""`/episodes preview` over real signed HTTP with the Slack fake (SQLite and PostgreSQL):
per episode, whether the filter posts it and which term decided; nothing is changed."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from bot.listeners.commands.control_parse import parse_preview
from bot.listeners.commands.model import CommandError, Preview
from tests.fixtures.app import RunningApp, assert_no_raw_mentions, assert_valid_message
from tests.fixtures.control import START, Rig


def reply(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["response_type"] == "ephemeral"
    assert_valid_message(body)
    assert_no_raw_mentions(body)
    return body


def lines(body: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for block in body["blocks"]:
        if "text" in block:
            out += block["text"]["text"].split("\n")
        out += [e.get("text", "") for e in block.get("elements", [])]
    return out


def line_for(body: dict[str, Any], headline: str) -> str:
    (found,) = [line for line in lines(body) if f" {headline} — " in line]
    return found


def test_preview_says_per_episode_which_term_decided(slack_app: RunningApp) -> None:
    body = reply(slack_app.sender.slash("preview PyTorch compiler “dynamic shapes” -hang"))
    assert lines(body)[:2] == [
        "Preview of *PyTorch*: mentions compiler or “dynamic shapes”, never hang",
        "Of its last 20 episodes, this filter lets 1 through and skips 19.",
    ]
    assert line_for(body, "Compiler Parity Push") == (
        ":white_check_mark: *1 Oct 2026* Compiler Parity Push — let through: mentions "
        "“compiler”"
    )
    assert line_for(body, "Distributed Hang Fixes and Compiler Hardening").endswith(
        "— skipped: mentions “hang”, excluded"
    )
    assert line_for(body, "Filler Day 12").endswith(
        "— skipped: mentions none of “compiler”, “dynamic shapes”"
    )
    assert sum(1 for line in lines(body) if " — " in line) == 20
    # What subscribing would post, as the subscribe reply says it.
    assert lines(body)[-1] == (
        'Nothing changed. `/episodes subscribe PyTorch compiler "dynamic shapes" -hang` here '
        "would post each new episode this filter lets through, and at the next poll already: "
        "Thu 1 Oct 2026 · <https://episodes.example.test/pytorch/2026-10-01|Compiler Parity "
        "Push> · 3:23 · 2 PRs."
    )
    # A preview changes nothing and posts nothing.
    assert slack_app.store.subscriptions() == []
    assert slack_app.fake.calls_to("chat.postMessage") == []


def test_a_required_term_and_the_show_left_out(slack_app: RunningApp) -> None:
    body = reply(slack_app.sender.slash("preview +watchdog"))
    assert lines(body)[0] == "Preview of *PyTorch*: must mention watchdog"
    assert line_for(body, "Distributed Hang Fixes and Compiler Hardening").endswith(
        "— let through"
    )
    assert line_for(body, "Compiler Parity Push").endswith(
        "— skipped: does not mention “watchdog”, required"
    )


def test_a_filter_of_only_exclusions_is_allowed_and_says_so(slack_app: RunningApp) -> None:
    body = reply(slack_app.sender.slash("preview PyTorch -filler"))
    assert lines(body)[:3] == [
        "Preview of *PyTorch*: never filler",
        "Of its last 20 episodes, this filter lets 4 through and skips 16.",
        "This filter only excludes: it lets through every episode that mentions none of those.",
    ]
    assert line_for(body, "Filler Day 25").endswith("— skipped: mentions “filler”, excluded")
    assert line_for(body, "Compiler Parity Push").endswith("— let through")


def test_no_filter_previews_every_episode(slack_app: RunningApp) -> None:
    body = reply(slack_app.sender.slash("preview PyTorch"))
    assert lines(body)[:2] == [
        "Preview of *PyTorch*: every episode",
        "Of its last 20 episodes, this filter lets 20 through and skips 0.",
    ]
    assert lines(body)[-1] == (
        "Nothing changed. `/episodes subscribe PyTorch` here would post its newest episode at "
        "the next poll, then every new one."
    )


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            "preview PyTorch " + " ".join(f"w{n}" for n in range(30)),
            "A filter takes at most 10 terms, not 30.",
        ),
        (
            'preview PyTorch "flex attention',
            "A quote in the filter is never closed; put phrases in pairs of quotes.",
        ),
        (
            "preview PyTorch + cuda",
            "`+` needs a word right after the + (like +cuda or -rocm).",
        ),
        (
            "preview PyTorch -!!",
            "`-!!` needs a word right after the - (like +cuda or -rocm).",
        ),
        ("preview PyTorch " + "x" * 51, "Filter terms are at most 50 characters each."),
    ],
)
def test_bad_filters_get_one_line_and_the_usage(
    slack_app: RunningApp, text: str, reason: str
) -> None:
    body = reply(slack_app.sender.slash(text))
    assert body["blocks"][0]["text"]["text"] == f":warning: {reason}"
    usage = body["blocks"][1]["elements"][0]["text"]
    assert usage.startswith("Usage: `/episodes preview [show] [filter…]`")


def test_subscribe_offers_the_preview(slack_app: RunningApp) -> None:
    body = reply(slack_app.sender.slash('subscribe PyTorch fsdp "flex attention"'))
    assert body["blocks"][0]["text"]["text"].startswith("This channel now gets new *PyTorch*")
    assert lines(body)[-1] == (
        'Which recent episodes this lets through: `/episodes preview PyTorch fsdp "flex attention"`'
    )


def test_help_lists_preview(slack_app: RunningApp) -> None:
    everything = "\n".join(lines(reply(slack_app.sender.slash("help"))))
    assert "`/episodes preview [show] [filter…]`" in everything


SHOWS = ["PyTorch", "Deep Learning Daily"]


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("PyTorch", Preview("PyTorch")),
        ("pytorch inductor", Preview("PyTorch", ("inductor",))),
        ('"Deep Learning Daily" fsdp', Preview("Deep Learning Daily", ("fsdp",))),
        ("deep  learning daily +cuda", Preview("Deep Learning Daily", ("+cuda",))),
        ("PyTorch don't -rocm", Preview("PyTorch", ("don't", "-rocm"))),
        (
            "PyTorch „flex attention“ -“torch compile”",
            Preview("PyTorch", ("flex attention", "-torch compile")),
        ),
        ("PyTorch fsdp, dtensor FSDP", Preview("PyTorch", ("fsdp", "dtensor"))),
    ],
)
def test_preview_arguments(words: str, expected: Preview) -> None:
    assert parse_preview(words.split(), SHOWS) == expected


@pytest.mark.parametrize(
    ("words", "reason"),
    [
        ("", "Several shows are configured; name one: PyTorch, Deep Learning Daily."),
        ("Nope fsdp", "There is no show called `Nope`. Shows: PyTorch, Deep Learning Daily."),
    ],
)
def test_preview_needs_a_known_show_when_there_are_several(words: str, reason: str) -> None:
    with pytest.raises(CommandError) as info:
        parse_preview(words.split(), SHOWS)
    assert info.value.reason == reason
    assert info.value.subcommand == "preview"


def test_the_notification_text_keeps_the_title_and_the_summary_apart(
    slack_app: RunningApp,
) -> None:
    """The fallback text is one line: the title ends with a full stop there (the blocks keep
    them on two lines, as the tests above read them)."""
    body = reply(slack_app.sender.slash("preview PyTorch -filler -rocm"))
    assert body["text"] == (
        "Preview of *PyTorch*: never filler or rocm. "
        "Of its last 20 episodes, this filter lets 4 through and skips 16."
    )
    assert lines(body)[:2] == [
        "Preview of *PyTorch*: never filler or rocm",
        "Of its last 20 episodes, this filter lets 4 through and skips 16.",
    ]


async def test_a_show_of_one_episode_is_previewed_in_the_singular(rig: Rig) -> None:
    await rig.poll(START)
    assert len(rig.store.recent(20, shows=["PyTorch"])) == 1
    assert rig.slash("preview PyTorch")[0] == (
        "Preview of *PyTorch*: every episode\nThis filter lets its only episode through."
    )
    assert rig.slash("preview PyTorch -briefing")[0] == (
        "Preview of *PyTorch*: never briefing\nThis filter skips its only episode."
    )
