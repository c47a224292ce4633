"""Renderer: digests, thread replies and lists are valid Block Kit, escaped, within limits."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from slack_sdk.models.blocks import Block

from digests.errors import ConfigError
from digests.models import Episode, PullRequestRef, RecapEpisode
from digests.render import blocks as b
from digests.render import limits
from digests.render.environment import MrkdwnEnvironment
from digests.render.escape import ELLIPSIS
from digests.render.limits import Message
from digests.render.renderer import Renderer, says_more

REPO = "https://github.com/pytorch/pytorch/pull"
EVIL = "<!channel> & <https://evil.example|click>"
EVIL_ESCAPED = "&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt;"


def pr(number: int, context: str = "") -> PullRequestRef:
    return PullRequestRef(number=number, url=f"{REPO}/{number}", context=context)


def episode(**changes: Any) -> Episode:
    """The 2026-10-05 briefing, paraphrased; override any field."""
    fields: dict[str, Any] = {
        "guid": "https://briefings.example/pytorch/2026-10-05",
        "show": "PyTorch",
        "title": "PyTorch: All-Gather Showdown and Stack-Aware Merges",
        "headline": "All-Gather Showdown and Stack-Aware Merges",
        "summary": (
            "Three competing all-gather designs for sharded training, merge tooling that "
            "understands stacked pull requests, and faster Apple-silicon kernels."
        ),
        "published_at": datetime(2026, 10, 5, 13, 0, 40, tzinfo=UTC),
        "duration_seconds": 151,
        "url": "https://briefings.example/pytorch/2026-10-05",
        "audio_url": "https://cdn.briefings.example/pytorch/2026-10-05.mp3",
        "pull_requests": (
            pr(199720, "Drafts 199720, 199721 and 199726 each propose an all-gather contract."),
            pr(199721, "Drafts 199720, 199721 and 199726 each propose an all-gather contract."),
            pr(199726, "Drafts 199720, 199721 and 199726 each propose an all-gather contract."),
            pr(199714, "The merge bot can now land a whole native stack (199714)."),
            pr(199687, "One Metal kernel replaces the upsample backward graph."),
        ),
        "nearby": (
            "Compiler Parity Push",
            "Distributed Hang Fixes and Compiler Hardening",
            "GEMM Fusion and Portable CUDA Graphs",
        ),
        "transcript": "Good morning, this is your PyTorch briefing.\n\nFirst, sharding.",
    }
    fields.update(changes)
    return Episode(**fields)


def huge_episode() -> Episode:
    words = "sharding contracts under stress & <edge> cases " * 500
    return episode(
        guid="urn:" + "g" * 2500,
        headline=("Very long headline " * 30)[:400],
        summary=words[:20_000],
        pull_requests=tuple(
            pr(199_000 + i, f"PR {199_000 + i}: " + "detail " * 80) for i in range(120)
        ),
        nearby=tuple(f"Nearby episode number {i} " * 5 for i in range(50)),
        transcript=("A paragraph of transcript with <!here> & more. " * 40 + "\n\n") * 20,
    )


def texts(message: Message) -> Iterator[tuple[str, str]]:
    """Every (type, text) in a message: mrkdwn or plain_text objects, and the fallback."""
    yield "mrkdwn", message["text"]

    def walk(node: object) -> Iterator[tuple[str, str]]:
        if isinstance(node, dict):
            if node.get("type") in ("mrkdwn", "plain_text") and isinstance(node.get("text"), str):
                yield node["type"], node["text"]
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)

    yield from walk(message["blocks"])


_LINK = re.compile(r"<([^<>|]*)(?:\|[^<>]*)?>")
_ALLOWED_URL = re.compile(
    r"^https://(github\.com/pytorch/pytorch/pull/\d+|[a-z.]*briefings\.example/)"
)


def assert_valid(message: Message) -> None:
    """What Slack would check, and what slack_sdk does not (block count, total size)."""
    json.dumps(message)
    assert message["text"].strip()
    assert len(message["text"]) <= limits.FALLBACK_TEXT
    assert 1 <= len(message["blocks"]) <= limits.BLOCKS_PER_MESSAGE
    assert limits.message_text_size(message) <= limits.MESSAGE_TEXT_BUDGET
    for block in message["blocks"]:
        Block.parse(block).validate_json()  # type: ignore[union-attr]
        if block["type"] == "section":
            assert 1 <= len(block["text"]["text"]) <= limits.SECTION_TEXT
        if block["type"] == "header":
            assert 1 <= len(block["text"]["text"]) <= limits.HEADER_TEXT
        if block["type"] == "context":
            assert 1 <= len(block["elements"]) <= limits.CONTEXT_ELEMENTS
    for kind, text in texts(message):
        if kind != "mrkdwn":
            continue
        # The only angle brackets are links we made, to places we chose.
        assert "<!" not in text and "<@" not in text and "<#" not in text
        for match in _LINK.finditer(text):
            assert _ALLOWED_URL.match(match.group(1)), match.group(0)
        assert text.count("<") == len(_LINK.findall(text))


def pr_numbers(*messages: Message) -> list[int]:
    """The PRs linked in ``messages``, in order."""
    return [
        int(n)
        for message in messages
        for block in message["blocks"]
        for n in re.findall(r"\|#(\d+)>", block.get("text", {}).get("text", ""))
    ]


@pytest.fixture
def renderer() -> Renderer:
    return Renderer()


# -- the digest --------------------------------------------------------------------------


def test_digest_layout(renderer: Renderer) -> None:
    message = renderer.digest(episode())
    assert_valid(message)
    assert message["text"] == "PyTorch: All-Gather Showdown and Stack-Aware Merges (2:31)"
    kinds = [block["type"] for block in message["blocks"]]
    assert kinds == ["header", "context", "section", "section", "context", "actions"]
    header, meta, summary, prs, nearby, actions = message["blocks"]
    assert header["text"] == {
        "type": "plain_text",
        "text": "All-Gather Showdown and Stack-Aware Merges",
        "emoji": True,
    }
    assert meta["elements"][0]["text"] == (
        "PyTorch · Mon 5 Oct 2026 · 2:31 · "
        "<https://briefings.example/pytorch/2026-10-05|Episode> · "
        "<https://cdn.briefings.example/pytorch/2026-10-05.mp3|Audio>"
    )
    assert summary["text"]["text"].startswith("Three competing all-gather designs")
    lines = prs["text"]["text"].split("\n")
    assert lines[0] == "*Key PRs*"
    assert lines[1] == (
        "• <https://github.com/pytorch/pytorch/pull/199720|#199720>, "
        "<https://github.com/pytorch/pytorch/pull/199721|#199721>, "
        "<https://github.com/pytorch/pytorch/pull/199726|#199726> — "
        "Drafts 199720, 199721 and 199726 each propose an all-gather contract."
    )
    assert len(lines) == 4
    assert nearby["elements"][0]["text"] == (
        "*Nearby:* Compiler Parity Push · Distributed Hang Fixes and Compiler Hardening"
        " · GEMM Fusion and Portable CUDA Graphs"
    )
    assert [(e["action_id"], e["text"]["text"]) for e in actions["elements"]] == [
        ("digest_prs", "Key PRs"),
        ("digest_nearby", "Nearby"),
    ]
    for element in actions["elements"]:
        assert json.loads(element["value"]) == {
            "show": "PyTorch",
            "guid": "https://briefings.example/pytorch/2026-10-05",
        }


def test_digest_without_buttons_or_optional_parts(renderer: Renderer) -> None:
    bare = episode(
        duration_seconds=None, url=None, audio_url=None, pull_requests=(), nearby=(), summary=""
    )
    message = renderer.digest(bare, buttons=False)
    assert_valid(message)
    assert [block["type"] for block in message["blocks"]] == ["header", "context"]
    assert message["blocks"][1]["elements"][0]["text"] == "PyTorch · Mon 5 Oct 2026"
    assert message["text"] == "PyTorch: All-Gather Showdown and Stack-Aware Merges"


@pytest.mark.parametrize(
    ("count", "more"), [(8, None), (9, "_and 1 more PR_"), (120, "_and 112 more PRs_")]
)
def test_digest_lists_at_most_eight_prs(renderer: Renderer, count: int, more: str | None) -> None:
    message = renderer.digest(episode(pull_requests=tuple(pr(1000 + i, "x") for i in range(count))))
    assert_valid(message)
    text = message["blocks"][3]["text"]["text"]
    assert text.count("<https://github.com/") == 8
    assert (text.split("\n")[-1] == more) if more else text.endswith("x")


def test_key_prs_button_only_when_the_episode_names_prs(renderer: Renderer) -> None:
    def buttons(message: Message) -> list[str]:
        return [
            e["action_id"]
            for bl in message["blocks"]
            if bl["type"] == "actions"
            for e in bl["elements"]
        ]

    assert buttons(renderer.digest(episode())) == ["digest_prs", "digest_nearby"]
    none = renderer.digest(episode(pull_requests=()))
    assert_valid(none)
    assert buttons(none) == ["digest_nearby"]


@pytest.mark.parametrize(
    ("count", "tail"),
    [
        (5, "Nearby episode 4"),
        (6, "Nearby episode 4 · _and 1 more_"),
        (8, "Nearby episode 4 · _and 3 more_"),
        (50, "Nearby episode 4 · _and 45 more_"),
    ],
)
def test_nearby_says_how_many_more(renderer: Renderer, count: int, tail: str) -> None:
    message = renderer.digest(episode(nearby=tuple(f"Nearby episode {i}" for i in range(count))))
    assert_valid(message)
    (nearby,) = [bl for bl in message["blocks"] if bl["type"] == "context"][1:]
    text = nearby["elements"][0]["text"]
    assert text.startswith("*Nearby:* Nearby episode 0 · ") and text.endswith(tail)
    assert text.count("Nearby episode") == 5


def test_huge_episode_renders_valid_everywhere(renderer: Renderer) -> None:
    big = huge_episode()
    message = renderer.digest(big)
    assert_valid(message)
    header = message["blocks"][0]["text"]["text"]
    assert len(header) <= limits.HEADER_TEXT and header.endswith(ELLIPSIS)
    summary = message["blocks"][2]["text"]["text"]
    assert summary.endswith(ELLIPSIS) and len(summary) <= limits.SECTION_TEXT
    # A GUID too long for a button value travels as its hash.
    value = json.loads(message["blocks"][-1]["elements"][0]["value"])
    assert value == {"show": "PyTorch", "guid_sha256": b.guid_key(big.guid)}

    replies = renderer.thread_reply(big)
    assert len(replies) >= 2
    for reply in replies:
        assert_valid(reply)
    # The digest shows 8, the thread the other 112: each PR once, post and thread together.
    assert pr_numbers(message) + pr_numbers(*replies) == [199_000 + i for i in range(120)]
    transcript = replies[-1]["blocks"][-1]["text"]["text"]
    assert "&lt;!here&gt;" in transcript and transcript.endswith(ELLIPSIS)
    every = renderer.key_prs(big)
    for reply in every:
        assert_valid(reply)
    assert pr_numbers(*every) == [199_000 + i for i in range(120)]

    listing = renderer.episode_list([big] * 30, "Recent")
    assert_valid(listing)


@pytest.mark.parametrize(
    "field",
    ["headline", "summary", "show", "pr_context", "nearby", "transcript", "url", "audio_url"],
)
def test_injection_in_every_field_is_neutralised(renderer: Renderer, field: str) -> None:
    table: dict[str, dict[str, Any]] = {
        "headline": {"headline": EVIL},
        "summary": {"summary": f"Intro {EVIL} outro"},
        "show": {"show": EVIL},
        "pr_context": {"pull_requests": (pr(199801, f"It {EVIL} works"),)},
        "nearby": {"nearby": (EVIL, "<@U0123> and <#C0123>")},
        "transcript": {"transcript": f"Hello {EVIL}"},
        "url": {"url": "https://evil.example/x|<!channel>"},
        "audio_url": {"audio_url": "https://evil.example/a.mp3>pwn"},
    }
    hostile = episode(**table[field])
    messages = [
        renderer.digest(hostile),
        *renderer.thread_reply(hostile),
        renderer.episode_list([hostile], EVIL),
    ]
    for message in messages:
        assert_valid(message)
    everything = json.dumps(messages, ensure_ascii=False)
    assert "evil.example/x" not in everything and "a.mp3>pwn" not in everything
    if field not in ("url", "audio_url"):
        assert EVIL_ESCAPED in everything or "&lt;!channel&gt;" in everything


@pytest.mark.parametrize(
    ("url", "meta"),
    [
        ("https://evil.example/x|label", "PyTorch · Mon 5 Oct 2026 · 2:31"),
        ("https://evil.example/x>y", "PyTorch · Mon 5 Oct 2026 · 2:31"),
        ("javascript:alert(1)", "PyTorch · Mon 5 Oct 2026 · 2:31"),
        (
            "https://briefings.example/e?a=1&b=2",
            "PyTorch · Mon 5 Oct 2026 · 2:31 · <https://briefings.example/e?a=1&amp;b=2|Episode>",
        ),
    ],
)
def test_unsafe_episode_urls_are_not_linked(renderer: Renderer, url: str, meta: str) -> None:
    message = renderer.digest(episode(url=url, audio_url=None))
    assert message["blocks"][1]["elements"][0]["text"] == meta
    line = renderer.episode_line(episode(url=url))
    assert ("<https://" in line) is url.startswith("https://briefings")


def test_dates_follow_the_configured_timezone() -> None:
    late = episode(published_at=datetime(2026, 10, 5, 23, 30, tzinfo=UTC))
    meta_utc = Renderer().digest(late)["blocks"][1]["elements"][0]["text"]
    meta_tokyo = Renderer(tz=ZoneInfo("Asia/Tokyo")).digest(late)["blocks"][1]["elements"][0][
        "text"
    ]
    assert "Mon 5 Oct 2026" in meta_utc
    assert "Tue 6 Oct 2026" in meta_tokyo


def test_digest_text_is_readable_plain_text(renderer: Renderer) -> None:
    text = renderer.digest_text(episode(headline=f"Fixes {EVIL}"))
    assert text.splitlines()[0] == f"Fixes {EVIL}"
    assert (
        "PyTorch · Mon 5 Oct 2026 · 2:31 · Episode (https://briefings.example/pytorch/2026-10-05)"
        in text
    )
    assert (
        "• #199720 (https://github.com/pytorch/pytorch/pull/199720), "
        "#199721 (https://github.com/pytorch/pytorch/pull/199721), "
        "#199726 (https://github.com/pytorch/pytorch/pull/199726) — Drafts" in text
    )
    assert "&amp;" not in text and "&lt;" not in text
    assert "\nKey PRs\n" in text and "digest_prs" not in text
    assert "\nand " not in text  # five PRs: no "and N more" line
    assert "*" not in text and "_" not in text
    assert text.endswith(
        "\nNearby: Compiler Parity Push · Distributed Hang Fixes and Compiler Hardening"
        " · GEMM Fusion and Portable CUDA Graphs\n"
    )


def test_digest_text_drops_inline_emphasis_but_not_feed_asterisks(renderer: Renderer) -> None:
    ep = episode(
        headline="Docs for __init__ and 2*3*4",
        summary="Renames snake_case_name; see https://docs.example/a_b_/c*d*/ today.",
        pull_requests=tuple(pr(1000 + i, "x") for i in range(9)),
        nearby=tuple(f"Title {i}" for i in range(8)),
    )
    text = renderer.digest_text(ep)
    lines = text.splitlines()
    assert lines[0] == "Docs for __init__ and 2*3*4"
    assert "Renames snake_case_name; see https://docs.example/a_b_/c*d*/ today." in lines
    assert "and 1 more PR" in lines
    assert lines[-1] == "Nearby: Title 0 · Title 1 · Title 2 · Title 3 · Title 4 · and 3 more"


# -- thread replies ----------------------------------------------------------------------


def test_key_prs_lists_every_pr_and_the_transcript(renderer: Renderer) -> None:
    replies = renderer.key_prs(episode())
    assert len(replies) == 1
    reply = replies[0]
    assert_valid(reply)
    body = "\n".join(block["text"]["text"] for block in reply["blocks"])
    assert body.startswith("*All 5 PRs in this episode*")
    assert re.findall(r"\|#(\d+)>", body) == ["199720", "199721", "199726", "199714", "199687"]
    assert "*Transcript excerpt*" in body
    assert "Good morning, this is your PyTorch briefing.\n\nFirst, sharding." in body


def test_thread_reply_does_not_repeat_prs_the_digest_shows(renderer: Renderer) -> None:
    # Five PRs: the digest lists them all, so the thread carries only the transcript.
    replies = renderer.thread_reply(episode())
    assert len(replies) == 1
    assert_valid(replies[0])
    assert pr_numbers(*replies) == []
    body = "\n".join(block["text"]["text"] for block in replies[0]["blocks"])
    assert body == (
        "*Transcript excerpt*\nGood morning, this is your PyTorch briefing.\n\nFirst, sharding."
    )
    assert replies[0]["text"] == "Transcript: All-Gather Showdown and Stack-Aware Merges"


@pytest.mark.parametrize("count", [9, 10, 17])
def test_thread_reply_lists_the_prs_the_digest_cut(renderer: Renderer, count: int) -> None:
    ep = episode(pull_requests=tuple(pr(1000 + i, f"Sentence {i}.") for i in range(count)))
    digest = renderer.digest(ep)
    replies = renderer.thread_reply(ep)
    for reply in replies:
        assert_valid(reply)
    assert pr_numbers(digest) == [1000 + i for i in range(8)]
    assert pr_numbers(*replies) == [1000 + i for i in range(8, count)]
    heading = replies[0]["blocks"][0]["text"]["text"]
    if count == 9:
        assert heading == "*One more PR* (9 of 9)"
    else:
        assert heading == f"*More PRs* (9–{count} of {count})"
    assert "*Transcript excerpt*" in json.dumps(replies)
    noun = "PR" if count == 9 else "PRs"
    assert (
        replies[0]["text"] == f"{noun} and transcript: All-Gather Showdown and Stack-Aware Merges"
    )


def test_a_sentence_split_by_the_cut_keeps_every_pr_once(renderer: Renderer) -> None:
    # PRs 7–10 are named in one sentence: 7 and 8 close the digest, 9 and 10 open the thread.
    ctx = [f"Sentence {i}." for i in range(6)] + ["PRs 7, 8, 9 and 10 land together."] * 4
    ep = episode(pull_requests=tuple(pr(1 + i, c) for i, c in enumerate(ctx)), transcript="")
    digest, (reply,) = renderer.digest(ep), renderer.thread_reply(ep)
    assert pr_numbers(digest) + pr_numbers(reply) == list(range(1, 11))
    assert reply["blocks"][1]["text"]["text"] == (
        f"• <{REPO}/9|#9>, <{REPO}/10|#10> — PRs 7, 8, 9 and 10 land together."
    )


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"pull_requests": (), "transcript": ""}, "nothing at all"),
        ({"transcript": ""}, "every PR is in the digest, no transcript"),
        ({"transcript": "  "}, "a blank transcript"),
        ({"transcript": "Three competing all-gather designs\nfor sharded training,"}, "summary"),
        (
            {"summary": "Hi <b> & more", "transcript": "hi <b>   & MORE"},
            "the summary again, spaced and cased differently",
        ),
    ],
)
def test_thread_reply_is_empty_when_there_is_nothing_new(
    renderer: Renderer, changes: dict[str, Any], why: str
) -> None:
    assert renderer.thread_reply(episode(**changes)) == [], why


SUMMARY = "Inductor learns to fuse reductions. Also a new MPS backend."
PR_SENTENCE = "Only PR 199500 today."


@pytest.mark.parametrize(
    ("text", "contexts", "more"),
    [
        ("", [PR_SENTENCE], False),
        ("Inductor learns to fuse reductions.", [], False),
        # The transcript is the PR sentence the digest already shows in its Key PRs lines.
        (PR_SENTENCE, [PR_SENTENCE], False),
        ("only pr 199500  today", [PR_SENTENCE], False),
        # Every sentence is somewhere already: in the summary or among the PRs' sentences.
        (f"{PR_SENTENCE} Also a new MPS backend!", [PR_SENTENCE], False),
        (f"Also a new MPS backend.\n{PR_SENTENCE}", ["PR 1 first.", PR_SENTENCE], False),
        ('"Only PR 199500 today." Inductor learns to fuse reductions.', [PR_SENTENCE], False),
        # One sentence the digest does not have is enough.
        (f"{PR_SENTENCE} The release slips a week.", [PR_SENTENCE], True),
        (PR_SENTENCE, [], True),
        (PR_SENTENCE, ["Only PR 199501 today."], True),
        ("Inductor learns to fuse reductions and more.", [PR_SENTENCE], True),
        ("Anything at all.", ["", "  "], True),
    ],
)
def test_says_more_only_with_a_sentence_the_digest_lacks(
    text: str, contexts: list[str], more: bool
) -> None:
    assert says_more(text, SUMMARY, contexts) is more


def test_thread_reply_skips_a_transcript_that_is_only_the_pr_sentences(
    renderer: Renderer,
) -> None:
    only = episode(
        summary="A quiet day.",
        pull_requests=(pr(199500, PR_SENTENCE),),
        transcript=PR_SENTENCE,
    )
    assert renderer.thread_reply(only) == []
    more = only.model_copy(update={"transcript": f"{PR_SENTENCE} And a surprise."})
    (reply,) = renderer.thread_reply(more)
    assert "And a surprise." in reply["text"] or "And a surprise." in json.dumps(reply)


def test_key_prs_is_empty_without_prs_or_transcript(renderer: Renderer) -> None:
    assert renderer.key_prs(episode(pull_requests=(), transcript="")) == []


def test_thread_reply_splits_over_messages_by_block_count() -> None:
    # Long contexts force one section per PR or two: more than 50 blocks in all.
    many = episode(pull_requests=tuple(pr(i, "word " * 290) for i in range(1, 400)), transcript="")
    for replies, first in ((Renderer().thread_reply(many), 9), (Renderer().key_prs(many), 1)):
        assert len(replies) > 2
        for reply in replies:
            assert_valid(reply)
        assert pr_numbers(*replies) == list(range(first, 400))


# -- lists -------------------------------------------------------------------------------


def test_episode_line(renderer: Renderer) -> None:
    assert renderer.episode_line(episode()) == (
        "Mon 5 Oct 2026 · <https://briefings.example/pytorch/2026-10-05|All-Gather Showdown"
        " and Stack-Aware Merges> · 2:31 · 5 PRs"
    )
    one = episode(pull_requests=(pr(1),), duration_seconds=None, url=None)
    assert renderer.episode_line(one) == (
        "Mon 5 Oct 2026 · All-Gather Showdown and Stack-Aware Merges · 1 PR"
    )


def test_episode_line_accepts_recap_episodes(renderer: Renderer) -> None:
    recap = RecapEpisode(
        show="PyTorch",
        guid="g",
        headline="Compiler Parity Push",
        url="https://briefings.example/p",
        published_at=datetime(2026, 10, 2, 13, 0, tzinfo=UTC),
        duration_seconds=3723,
    )
    assert renderer.episode_line(recap) == (
        "Fri 2 Oct 2026 · <https://briefings.example/p|Compiler Parity Push> · 1:02:03"
    )


def test_episode_list_caps_at_twenty_lines(renderer: Renderer) -> None:
    start = datetime(2026, 10, 5, tzinfo=UTC)
    episodes = [
        episode(guid=f"g{i}", headline=f"Episode {i}", published_at=start - timedelta(days=i))
        for i in range(25)
    ]
    message = renderer.episode_list(episodes, "Recent PyTorch episodes")
    assert_valid(message)
    assert message["blocks"][0]["text"]["text"] == "Recent PyTorch episodes"
    lines = "\n".join(bl["text"]["text"] for bl in message["blocks"][1:]).split("\n")
    assert len(lines) == 21
    assert lines[0].startswith(
        "Mon 5 Oct 2026 · <https://briefings.example/pytorch/2026-10-05|Episode 0>"
    )
    assert lines[-1] == "_and 5 more_"


@pytest.mark.parametrize(
    ("empty", "expected"),
    [
        (None, "No episodes yet."),
        ("Nothing matches <!here> & co.", "Nothing matches &lt;!here&gt; &amp; co."),
    ],
)
def test_episode_list_empty(renderer: Renderer, empty: str | None, expected: str) -> None:
    message = renderer.episode_list([], "Search: <!channel>", empty=empty)
    assert_valid(message)
    assert message["blocks"][0]["text"]["text"] == "Search: <!channel>"
    assert message["blocks"][1]["text"]["text"] == expected
    assert message["text"] == "Search: &lt;!channel&gt;"


# -- templates ---------------------------------------------------------------------------


def test_template_override_from_a_folder(tmp_path: Path) -> None:
    (tmp_path / "digest.j2").write_text(
        "<:text:>\nNew: {{ episode.headline }}\n"
        "<:section:>\n:tada: *{{ episode.headline }}* — {{ episode.duration_seconds|duration }}\n"
        "<:divider:>\n",
        encoding="utf-8",
    )
    (tmp_path / "list.j2").write_text("<:section:>\n*{{ title }}*: {{ episodes|length }}\n")
    custom = Renderer(templates_dir=str(tmp_path))
    message = custom.digest(episode(headline="Big <day>"))
    assert_valid(message)
    assert message["text"] == "New: Big &lt;day&gt;"
    assert message["blocks"] == [
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": ":tada: *Big &lt;day&gt;* — 2:31", "verbatim": True},
        },
        {"type": "divider"},
    ]
    # Without a <:text:> part the fallback is the first line of the message.
    assert custom.episode_list([episode()], "<x>") == {
        "text": "*&lt;x&gt;*: 1",
        "blocks": [
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": "*&lt;x&gt;*: 1", "verbatim": True},
            }
        ],
    }
    # Templates not overridden still come from the package.
    assert custom.thread_reply(episode())[0]["blocks"][0]["type"] == "section"
    assert Renderer().digest(episode())["blocks"][0]["type"] == "header"


@pytest.mark.parametrize(
    ("name", "source", "error"),
    [
        ("digest.j2", "{{ episode.no_such_field }}", "template digest.j2: 'digests.models.Episode"),
        ("digest.j2", "\n{% if %}", "template digest.j2, line 2: Expected an expression"),
        ("digest.j2", "<:bogus:>\n", "template digest.j2: unknown part <:bogus:>"),
        ("digest.j2", "{% include 'nope.j2' %}", "template digest.j2: nope.j2 not found"),
        ("common.j2", "{% macro meta(e) %}{{ e.show }", "template common.j2, line 1: "),
    ],
)
def test_broken_override_is_a_config_error(
    tmp_path: Path, name: str, source: str, error: str
) -> None:
    (tmp_path / name).write_text(source, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        Renderer(templates_dir=tmp_path).digest(episode())
    assert str(info.value).startswith(error)
    assert "\n" not in str(info.value)


def test_bundled_templates_do_not_depend_on_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert Renderer().digest(episode())["blocks"][0]["type"] == "header"


def test_a_new_renderer_reuses_compiled_templates(monkeypatch: pytest.MonkeyPatch) -> None:
    first = Renderer().digest(episode())

    def no_compiling(*args: object, **kwargs: object) -> None:
        raise AssertionError("a template was compiled again")

    monkeypatch.setattr(MrkdwnEnvironment, "compile", no_compiling)
    assert Renderer(tz=ZoneInfo("Europe/Berlin")).digest(episode()) == first


def test_an_override_edited_on_disk_is_compiled_anew(tmp_path: Path) -> None:
    (tmp_path / "list.j2").write_text("<:section:>\n*{{ title }}* one\n")
    assert Renderer(templates_dir=tmp_path).episode_list([episode()], "x")["text"] == "*x* one"
    (tmp_path / "list.j2").write_text("<:section:>\n*{{ title }}* two\n")
    assert Renderer(templates_dir=tmp_path).episode_list([episode()], "x")["text"] == "*x* two"


def test_a_feed_cannot_forge_a_layout_marker(renderer: Renderer) -> None:
    sneaky = episode(summary="line one\n<:actions:>\ndigest_prs Click me", headline="<:divider:>")
    message = renderer.digest(sneaky, buttons=False)
    assert_valid(message)
    assert [bl["type"] for bl in message["blocks"]] == [
        "header",
        "context",
        "section",
        "section",
        "context",
    ]
    assert message["blocks"][0]["text"]["text"] == "<:divider:>"
    assert "&lt;:actions:&gt;" in message["blocks"][2]["text"]["text"]


def test_random_hostile_episodes_always_render_valid(renderer: Renderer) -> None:
    rng = random.Random(11)
    pieces = [
        "<!channel>",
        "<@U1>",
        "&",
        "<",
        ">",
        "|",
        "*",
        "_",
        "\n",
        "\r\n",
        " ",
        "word",
        "é",
        "🙂",
    ]

    def junk(n: int) -> str:
        return "".join(rng.choice(pieces) for _ in range(rng.randint(0, n)))

    for _ in range(40):
        hostile = episode(
            show=junk(5) or "S",
            headline=junk(120),
            summary=junk(2500),
            pull_requests=tuple(pr(i, junk(300)) for i in range(rng.randint(0, 60))),
            nearby=tuple(junk(40) for _ in range(rng.randint(0, 12))),
            transcript=junk(2000),
            duration_seconds=rng.choice([None, 0, 59, 151, 3723]),
        )
        for message in [
            renderer.digest(hostile),
            *renderer.thread_reply(hostile),
            renderer.episode_list([hostile] * 3, junk(200) or "t"),
        ]:
            assert_valid(message)


@pytest.mark.parametrize(
    ("contexts", "sizes"),
    [
        (["a", "a", "a"], [3]),
        (["a", "b", "a"], [1, 1, 1]),
        (["", ""], [1, 1]),  # no sentence: nothing to share
        (["a"] * 12, [5, 5, 2]),  # capped so a line is never cut and loses a link
    ],
)
def test_prs_named_in_one_sentence_share_a_line(contexts: list[str], sizes: list[int]) -> None:
    from digests.render.environment import pr_groups

    prs = [pr(100 + i, c) for i, c in enumerate(contexts)]
    groups = pr_groups(prs)
    assert [len(g.prs) for g in groups] == sizes
    assert [p.number for g in groups for p in g.prs] == [p.number for p in prs]
