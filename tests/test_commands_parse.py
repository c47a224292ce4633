"""`/episodes` argument parsing: a pure function, tested as a table."""

from __future__ import annotations

from datetime import date

import pytest

from bot.listeners.commands.model import (
    SHAREABLE,
    CommandError,
    Help,
    Latest,
    ListSubscriptions,
    NearbyDate,
    NearbyPr,
    NearbyTitle,
    Pr,
    Recent,
    Search,
    Status,
    Subscribe,
    Unsubscribe,
    Week,
)
from bot.listeners.commands.parse import parse_command, unparse
from bot.listeners.commands.replies import read_share_value, share_value, with_share

ONE = ["PyTorch"]
TWO = ["PyTorch", "Rust Weekly"]
TODAY = date(2026, 10, 7)  # a Wednesday, in ISO week 2026-W41


@pytest.mark.parametrize(
    ("text", "shows", "expected"),
    [
        ("", ONE, Recent(5)),
        ("   ", ONE, Recent(5)),
        ("recent", ONE, Recent(5)),
        ("RECENT 7", ONE, Recent(7)),
        ("recent 20", ONE, Recent(20)),
        ("recent 1", ONE, Recent(1)),
        ("10", ONE, Recent(10)),
        ("latest", ONE, Latest()),
        ("nearby 2026-10-05", ONE, NearbyDate(date(2026, 10, 5))),
        ("nearby 2026-3-5", ONE, NearbyDate(date(2026, 3, 5))),
        ("nearby #199720", ONE, NearbyPr(199720)),
        ("nearby pr 199720", ONE, NearbyPr(199720)),
        ("nearby All-Gather Showdown", ONE, NearbyTitle("All-Gather Showdown")),
        ("around compiler   parity", ONE, NearbyTitle("compiler parity")),
        ("pr 199687", ONE, Pr(199687)),
        ("pr #199687", ONE, Pr(199687)),
        ("#199687", ONE, Pr(199687)),
        ("search all-gather fsdp", ONE, Search("all-gather fsdp")),
        ('search "quoted" NEAR(x)', ONE, Search('"quoted" NEAR(x)')),
        # Slack sends &, < and > as entities, like all its text.
        ("search a &amp; b &lt;x&gt;", ONE, Search("a & b <x>")),
        ("search &amp;amp;", ONE, Search("&amp;")),
        ("week", ONE, Week()),
        ("week 2026-10-05", ONE, Week(2026, 41)),
        ("subscribe", ONE, Subscribe("PyTorch")),
        ("subscribe pytorch", ONE, Subscribe("PyTorch")),
        ("subscribe fsdp dtensor", ONE, Subscribe("PyTorch", ("fsdp", "dtensor"))),
        ("subscribe PyTorch fsdp FSDP mps", ONE, Subscribe("PyTorch", ("fsdp", "mps"))),
        ("subscribe rust weekly borrowck", TWO, Subscribe("Rust Weekly", ("borrowck",))),
        ("unsubscribe", TWO, Unsubscribe(None)),
        ("unsubscribe rust weekly", TWO, Unsubscribe("Rust Weekly")),
        ("list", ONE, ListSubscriptions()),
        ("status", ONE, Status()),
        ("help", ONE, Help()),
        ("frobnicate now", ONE, Help(unknown="frobnicate")),
        ("`rm`", ONE, Help(unknown="'rm'")),
    ],
)
def test_parses(text: str, shows: list[str], expected: object) -> None:
    assert parse_command(text, shows, today=TODAY) == expected


@pytest.mark.parametrize(
    ("text", "shows", "reason", "usage_of"),
    [
        ("recent 100000", ONE, "between 1 and 20", "recent"),
        ("recent 0", ONE, "between 1 and 20", "recent"),
        ("recent 21", ONE, "between 1 and 20", "recent"),
        ("recent abc", ONE, "`abc` is not a number", "recent"),
        ("recent -3", ONE, "is not a number", "recent"),
        ("recent ５", ONE, "is not a number", "recent"),
        ("recent 3 4", ONE, "Unexpected `4`", "recent"),
        ("latest 3", ONE, "takes no arguments", "latest"),
        ("nearby", ONE, "Nearby what?", "nearby"),
        ("nearby 2026-02-30", ONE, "does not exist", "nearby"),
        ("nearby 2026-13-01", ONE, "does not exist", "nearby"),
        ("nearby 1900-01-01", ONE, "out of range", "nearby"),
        ("nearby 05/10/2026", ONE, "could be 5 Oct or 10 May", "nearby"),
        ("nearby 26-10-05", ONE, "write it like 2026-10-05", "nearby"),
        ("nearby #abc", ONE, "not a pull-request number", "nearby"),
        ("pr abc", ONE, "`abc` is not a pull-request number", "pr"),
        ("pr", ONE, "Which pull request?", "pr"),
        ("pr 0", ONE, "PR numbers start at 1", "pr"),
        ("pr -3", ONE, "PR numbers start at 1", "pr"),
        ("pr #000", ONE, "PR numbers start at 1", "pr"),
        ("nearby #0", ONE, "PR numbers start at 1", "nearby"),
        ("pr 99999999999999999999", ONE, "too large", "pr"),
        ("pr 2147483648", ONE, "too large", "pr"),
        ("pr 1 2", ONE, "Unexpected `2`", "pr"),
        ("search", ONE, "Search for what?", "search"),
        ("week 2026-W54", ONE, "not a week of the calendar", "week"),
        ("week 2025-W53", ONE, "not a week of the calendar", "week"),
        ("week 1999-W10", ONE, "out of range", "week"),
        ("week w54", ONE, "not a week of the calendar", "week"),
        ("week someday", ONE, "`someday` is not a week", "week"),
        ("week 2026-02-29", ONE, "does not exist", "week"),
        ("subscribe Nope", TWO, "no show called `Nope`. Shows: PyTorch, Rust Weekly", "subscribe"),
        ("subscribe", TWO, "name one: PyTorch, Rust Weekly", "subscribe"),
        ("subscribe", [], "No shows are configured", "subscribe"),
        ("subscribe " + " ".join(f"k{i}" for i in range(11)), ONE, "at most 10 terms", "subscribe"),
        ("subscribe " + "x" * 51, ONE, "at most 50 characters", "subscribe"),
        ("unsubscribe Nope", TWO, "no show called `Nope`", "unsubscribe"),
        ("list everything", ONE, "takes no arguments", "list"),
        ("status now", ONE, "takes no arguments", "status"),
    ],
)
def test_rejects_with_reason_and_usage(
    text: str, shows: list[str], reason: str, usage_of: str
) -> None:
    with pytest.raises(CommandError) as info:
        parse_command(text, shows, today=TODAY)
    assert reason in info.value.reason
    assert info.value.subcommand == usage_of
    assert info.value.usage.startswith(f"`/episodes {usage_of}")
    assert "\n" not in info.value.reason


@pytest.mark.parametrize("length", [501, 3000, 100_000])
def test_overlong_text_is_refused_before_parsing(length: int) -> None:
    with pytest.raises(CommandError) as info:
        parse_command("search " + "a" * length, ONE)
    assert "at most 500" in info.value.reason
    assert f"{length + 7:,}" in info.value.reason
    # No single subcommand is at fault, so the usage names all of them, on one line.
    assert all(word in info.value.usage for word in ("recent", "nearby", "status", "help"))
    assert "\n" not in info.value.usage


@pytest.mark.parametrize(
    "value",
    ["x" * 200, "`" * 10 + "closing", "<!channel>" * 10],
)
def test_echoed_arguments_are_short_and_cannot_close_backticks(value: str) -> None:
    with pytest.raises(CommandError) as info:
        parse_command(f"pr {value}", ONE)
    quoted = info.value.reason.split("`")[1]
    assert len(quoted) <= 40
    assert info.value.reason.count("`") == 2


@pytest.mark.parametrize(
    "text",
    [
        "recent 7",
        "latest",
        "nearby 2026-10-05",
        "nearby #199720",
        "nearby all gather",
        "pr 199687",
        "search fsdp mps",
        "search a &amp; b &lt;!channel&gt;",
        "search &amp;amp; typed literally",
        "week 2026-10-05",
        "list",
        "status",
        "subscribe PyTorch fsdp",
        "unsubscribe PyTorch",
    ],
)
def test_unparse_round_trips(text: str) -> None:
    command = parse_command(text, ONE)
    assert parse_command(unparse(command), ONE) == command


@pytest.mark.parametrize(
    ("text", "shareable"),
    [
        ("recent", True),
        ("latest", True),
        ("pr 1", True),
        ("status", True),
        ("subscribe", False),
        ("unsubscribe", False),
        ("help", False),
    ],
)
def test_only_read_only_commands_are_shareable(text: str, shareable: bool) -> None:
    assert isinstance(parse_command(text, ONE), SHAREABLE) is shareable


@pytest.mark.parametrize(
    "text",
    [
        "search " + "é" * 490,  # non-ASCII stays one character in the value
        'search "quoted" \\ back\\slash <!channel>',
        "nearby " + "ü" * 493,
    ],
)
def test_share_values_round_trip(text: str) -> None:
    value = share_value(text)
    assert len(value) <= 2000
    assert read_share_value(value) == text
    reply = with_share({"text": "t", "blocks": []}, text)
    assert reply["blocks"][-1]["elements"][0]["value"] == value


def test_a_share_value_too_long_gets_no_button() -> None:
    reply = with_share({"text": "t", "blocks": []}, "search " + '"' * 1200)
    assert reply["blocks"] == []


DLD = ["PyTorch", "Deep Learning", "Deep Learning Daily"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'subscribe "Deep Learning Daily" compiler',
            Subscribe("Deep Learning Daily", ("compiler",)),
        ),
        (
            "subscribe “Deep Learning Daily” compiler",
            Subscribe("Deep Learning Daily", ("compiler",)),
        ),
        ("subscribe ‘deep learning daily’", Subscribe("Deep Learning Daily")),
        ('subscribe "PyTorch" "inductor" “mps”', Subscribe("PyTorch", ("inductor", "mps"))),
        # A quoted name is the whole name: the next word is a keyword, not more of the name.
        ('subscribe "Deep Learning" daily', Subscribe("Deep Learning", ("daily",))),
        ("subscribe Deep Learning daily", Subscribe("Deep Learning Daily")),
        ('subscribe PyTorch "graph breaks" fsdp', Subscribe("PyTorch", ("graph breaks", "fsdp"))),
        ('subscribe " Deep Learning Daily "', Subscribe("Deep Learning Daily")),
        ('subscribe PyTorch "" inductor"', Subscribe("PyTorch", ("inductor",))),
        ("subscribe PyTorch it's", Subscribe("PyTorch", ("it's",))),
        ("subscribe ＤＥＥＰ  learning daily", Subscribe("Deep Learning Daily")),
        ('unsubscribe "Deep Learning Daily"', Unsubscribe("Deep Learning Daily")),
        ("unsubscribe “PyTorch”", Unsubscribe("PyTorch")),
    ],
)
def test_quotes_around_shows_and_keywords_are_taken_off(text: str, expected: object) -> None:
    assert parse_command(text, DLD) == expected


@pytest.mark.parametrize(
    "text",
    [
        'subscribe "Deep Lerning Daily" compiler',
        "subscribe “Deep Learning Daly”",
        "subscribe Deep Lerning Daily",
    ],
)
def test_a_misspelt_quoted_show_gets_the_real_name_suggested(text: str) -> None:
    with pytest.raises(CommandError) as info:
        parse_command(text, DLD)
    typed, suggested = info.value.reason.removeprefix("There is no show called ").split(" — ")
    assert suggested == "did you mean Deep Learning Daily?"
    assert typed.strip('"“”') != "Deep Learning Daily"


@pytest.mark.parametrize(
    ("text", "number", "repo"),
    [
        ("pr https://github.com/pytorch/pytorch/pull/199001", 199001, "pytorch/pytorch"),
        ("pr <https://github.com/pytorch/pytorch/pull/199001>", 199001, "pytorch/pytorch"),
        ("pr <https://github.com/pytorch/pytorch/pull/199001|#199001>", 199001, "pytorch/pytorch"),
        ("pr &lt;https://github.com/pytorch/pytorch/pull/199001&gt;", 199001, "pytorch/pytorch"),
        (
            "pr https://github.com/pytorch/pytorch/pull/199001/files#diff-1",
            199001,
            "pytorch/pytorch",
        ),
        ("pr https://www.github.com/pytorch/pytorch/pull/5?notification=1", 5, "pytorch/pytorch"),
        # Another repository's link: that repository's PR.
        ("pr https://github.com/rust-lang/rust/pull/42", 42, "rust-lang/rust"),
        # A host in capitals is github.com (case is ASCII's).
        ("pr HTTPS://GitHub.COM/pytorch/pytorch/pull/7", 7, "pytorch/pytorch"),
    ],
)
def test_pr_takes_a_pasted_github_link(text: str, number: int, repo: str) -> None:
    assert parse_command(text, ONE) == Pr(number, repo=repo)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("pr https://github.com/pytorch/pytorch/issues/199001", "is not a pull-request number"),
        ("pr https://example.com/pull/199001", "is not a pull-request number"),
        # Look-alike hosts only Unicode's case folding makes github.com: not GitHub.
        ("pr https://g\u0131thub.com/pytorch/pytorch/pull/199001", "is not a pull-request number"),
        ("pr https://G\u0130THUB.COM/pytorch/pytorch/pull/199001", "is not a pull-request number"),
        ("pr http\u017f://github.com/pytorch/pytorch/pull/199001", "is not a pull-request number"),
        ("pr https://github.com/pytorch/pytorch/pull/0", "PR numbers start at 1"),
        ("pr https://github.com/pytorch/pytorch/pull/99999999999", "too large"),
    ],
)
def test_pr_refuses_links_that_are_not_pull_requests(text: str, reason: str) -> None:
    with pytest.raises(CommandError) as info:
        parse_command(text, ONE)
    assert reason in info.value.reason
    assert info.value.usage.startswith("`/episodes pr <number | PR link>`")


@pytest.mark.parametrize(
    "text",
    [
        'subscribe "Deep Learning" daily compiler',
        "subscribe Deep Learning Daily mps",
        'subscribe PyTorch "graph breaks" a&amp;b',
        'unsubscribe "Deep Learning"',
    ],
)
def test_unparse_round_trips_quoted_names(text: str) -> None:
    command = parse_command(text, DLD)
    assert parse_command(unparse(command), DLD) == command
