"""Rendering the weekly recap: wording, escaping, Block Kit limits and overflow to the thread."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from slack_sdk.models.blocks import Block

from digests.errors import ConfigError
from digests.models import Episode, WeeklyRecap
from digests.recap import aggregate
from digests.render import limits
from digests.render.environment import make_environment
from digests.render.limits import Message
from digests.render.recap import (
    format_listening,
    format_range,
    recap_text,
    recap_title,
    render_recap,
)
from digests.render.renderer import Renderer
from tests.fixtures.recap import episode, pr, sample_week

UTC_TZ = ZoneInfo("UTC")
SHOWS = ("PyTorch", "JAX", "Triton", "vLLM", "TensorFlow", "Hugging Face", "ONNX")


def all_text(message: Message) -> str:
    return json.dumps(message["blocks"], ensure_ascii=False)


def assert_within_limits(message: Message) -> None:
    assert message["text"].strip()
    assert len(message["blocks"]) <= limits.BLOCKS_PER_MESSAGE
    assert limits.message_text_size(message) <= limits.MESSAGE_TEXT_BUDGET
    for block in message["blocks"]:
        if block["type"] == "header":
            assert len(block["text"]["text"]) <= limits.HEADER_TEXT
        if block["type"] == "section" and "text" in block:
            assert 0 < len(block["text"]["text"]) <= limits.SECTION_TEXT
    # Nothing left for the last guard to cut: the layout fitted it on purpose.
    assert limits.fit(message) == message


def sample_recap() -> WeeklyRecap:
    return aggregate(sample_week(), year=2026, week=41, tz=UTC_TZ, shows=["PyTorch"])


@pytest.fixture
def renderer() -> Renderer:
    return Renderer(tz=UTC)


# -- small formatters -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "last", "expected"),
    [
        (date(2026, 10, 5), date(2026, 10, 11), "5 Oct – 11 Oct 2026"),
        (date(2026, 12, 28), date(2027, 1, 3), "28 Dec 2026 – 3 Jan 2027"),
        (date(2026, 9, 28), date(2026, 10, 4), "28 Sep – 4 Oct 2026"),
    ],
)
def test_format_range(first: date, last: date, expected: str) -> None:
    assert format_range(first, last) == expected


@pytest.mark.parametrize(
    ("seconds", "untimed", "expected"),
    [
        (0, 0, "0 min"),
        (20, 0, "under 1 min"),
        (29, 0, "under 1 min"),
        (30, 0, "1 min"),
        (703, 0, "12 min"),
        (840, 0, "14 min"),
        (3599, 0, "1 h 00 min"),
        (3900, 0, "1 h 05 min"),
        (703, 1, "12 min (+1 of unknown length)"),
        (0, 2, "0 min (+2 of unknown length)"),
    ],
)
def test_format_listening(seconds: int, untimed: int, expected: str) -> None:
    assert format_listening(seconds, untimed) == expected


@pytest.mark.parametrize(
    ("shows", "year", "week", "expected"),
    [
        (["PyTorch"], 2026, 41, "PyTorch — week 41, 5 Oct – 11 Oct 2026"),
        (["PyTorch", "JAX"], 2026, 53, "PyTorch, JAX — week 53, 28 Dec 2026 – 3 Jan 2027"),
        (list(SHOWS), 2026, 1, "7 shows — week 1, 29 Dec 2025 – 4 Jan 2026"),
    ],
)
def test_recap_title(shows: list[str], year: int, week: int, expected: str) -> None:
    recap = aggregate([], year=year, week=week, tz=UTC_TZ, shows=shows)
    assert recap_title(recap) == expected


# -- the sample week --------------------------------------------------------------------------


def test_sample_week_post(renderer: Renderer) -> None:
    rendered = render_recap(sample_recap(), renderer)
    assert rendered is not None
    post, replies = rendered
    assert replies == []  # 12 PRs: all in the post
    assert_within_limits(post)
    blocks = post["blocks"]
    assert blocks[0] == {
        "type": "header",
        "text": {
            "type": "plain_text",
            "text": "PyTorch — week 41, 5 Oct – 11 Oct 2026",
            "emoji": True,
        },
    }
    assert blocks[1]["text"]["text"] == "*5 episodes · 12 min (+1 of unknown length) · 12 PRs*"
    episode_lines = blocks[2]["text"]["text"].split("\n")
    assert episode_lines[0] == (
        "Mon 5 Oct · <https://example.invalid/pytorch/pytorch-2026-10-05|All-Gather Showdown"
        " and Stack-Aware Merges> · 2:31 · 5 PRs"
    )
    assert len(episode_lines) == 5
    text = all_text(post)
    pr_numbers = re.findall(r"/pull/(\d+)\|#\1>", text)
    assert pr_numbers[:5] == ["199720", "199726", "199714", "199687", "199830"]
    assert len(pr_numbers) == 12
    # Named side by side in one sentence of the same episodes: one line, the sentence once.
    assert (
        "• <https://github.com/pytorch/pytorch/pull/199720|#199720>, "
        "<https://github.com/pytorch/pytorch/pull/199726|#199726> · Mon, Wed · Three drafts"
    ) in text
    assert text.count("Three drafts") == 2  # once more for #199721, named on Monday only
    assert blocks[-1]["type"] == "context"
    assert blocks[-1]["elements"][0]["text"].startswith("*Came up more than once:* MPS · ")
    assert post["text"].startswith("PyTorch — week 41, 5 Oct – 11 Oct 2026: 5 episodes")


def test_hostile_feed_text_is_escaped(renderer: Renderer) -> None:
    eps = [
        episode(
            "evil",
            "2026-10-05T10:00:00+00:00",
            "Hi <!channel> & <https://evil.example|click> <@U123>",
            show="Evil <!here>",
            prs=(pr(1, "Context <!everyone> with <#C1> & more"),),
        ),
        episode("evil2", "2026-10-06T10:00:00+00:00", show="PyTorch"),
    ]
    recap = aggregate(eps, year=2026, week=41, tz=UTC_TZ, shows=[])
    rendered = render_recap(recap, renderer)
    assert rendered is not None
    post = rendered[0]
    # plain_text (the header) is shown literally by Slack: it cannot ping or link.
    assert post["blocks"][0]["text"]["type"] == "plain_text"
    assert post["blocks"][0]["text"]["text"].startswith("Evil <!here>, PyTorch — week 41")
    mrkdwn_parts = json.dumps(post["blocks"][1:]) + post["text"]
    for forbidden in ("<!channel>", "<!here>", "<!everyone>", "<@U123>", "<#C1>", "<https://evil"):
        assert forbidden not in mrkdwn_parts
    text = all_text(post)
    assert "Hi &lt;!channel&gt; &amp; &lt;https://evil.example¦click&gt;" in text
    assert "*Evil &lt;!here&gt;*" in text  # two shows: each line says which
    assert "Context &lt;!everyone&gt; with &lt;#C1&gt; &amp; more" in text


def test_empty_week_posts_nothing_unless_quiet_week(renderer: Renderer) -> None:
    recap = aggregate(sample_week(), year=2026, week=42, tz=UTC_TZ, shows=["PyTorch"])
    assert render_recap(recap, renderer) is None
    quiet = render_recap(recap, renderer, quiet_week=True)
    assert quiet is not None
    post, replies = quiet
    assert replies == []
    assert post["blocks"][0]["text"]["text"] == "PyTorch — week 42, 12 Oct – 18 Oct 2026"
    assert post["blocks"][1]["text"]["text"] == "_A quiet week: no new episodes._"
    assert "quiet week" in post["text"]


def test_environment_or_renderer_or_none_give_the_same_post(renderer: Renderer) -> None:
    recap = sample_recap()
    by_renderer = render_recap(recap, renderer)
    assert by_renderer == render_recap(recap, make_environment())
    assert by_renderer == render_recap(recap, None)
    with pytest.raises(TypeError):
        render_recap(recap, object())


def test_broken_template_override_is_a_config_error(tmp_path: Path) -> None:
    folder = tmp_path
    (folder / "recap.j2").write_text("{{ nope.nope }}")
    with pytest.raises(ConfigError, match=r"template recap\.j2"):
        render_recap(sample_recap(), Renderer(folder))


def test_template_override_changes_the_wording(tmp_path: Path) -> None:
    folder = tmp_path
    (folder / "recap_quiet.j2").write_text("<:section:>\nNothing this week, {{ title }}.\n")
    recap = aggregate([], year=2026, week=41, tz=UTC_TZ, shows=["PyTorch"])
    rendered = render_recap(recap, Renderer(folder), quiet_week=True)
    assert rendered is not None
    assert rendered[0]["blocks"][0]["text"]["text"] == (
        "Nothing this week, PyTorch — week 41, 5 Oct – 11 Oct 2026."
    )


# -- size limits ------------------------------------------------------------------------------


def big_week(
    *, headline_len: int = 70, context_len: int = 200, url_extra: int = 0, prs: int = 300
) -> list[Episode]:
    """7 shows × 7 episodes in 2026-W41 naming ``prs`` distinct PRs (some in two episodes)."""
    eps = []
    numbers = iter(range(200_000, 200_000 + prs))
    per_episode = -(-prs // 49)
    for s, show in enumerate(SHOWS):
        for d in range(7):
            mine = [n for _, n in zip(range(per_episode), numbers, strict=False)]
            if d and s == 0:
                mine.append(200_000 + d)  # named again later in the week
            when = datetime(2026, 10, 5, 9, tzinfo=UTC) + timedelta(days=d, minutes=s)
            head = (f"{show} day {d} " + "word " * 200)[:headline_len].strip()
            ctx = ("A sentence about this pull request. " * 100)[:context_len]
            eps.append(
                Episode(
                    guid=f"{show}-{d}",
                    show=show,
                    title=f"{show}: {head}",
                    headline=head,
                    published_at=when,
                    duration_seconds=240 + d,
                    url=f"https://podcasts.example/{show.replace(' ', '-')}/{d}?" + "x" * url_extra,
                    pull_requests=tuple(pr(n, ctx) for n in mine),
                )
            )
    return eps


def pr_numbers(messages: list[Message]) -> list[int]:
    found: list[int] = []
    for message in messages:
        found += [int(n) for n in re.findall(r"/pull/(\d+)\|#\1>", all_text(message))]
    return found


def episode_urls(messages: list[Message]) -> list[str]:
    found: list[str] = []
    for message in messages:
        found += re.findall(r"<(https://podcasts\.example/[^|>]+)\|", all_text(message))
    return found


@pytest.mark.parametrize(
    ("headline_len", "context_len", "url_extra"),
    [
        (70, 200, 0),  # a realistic busy week
        (150, 1500, 0),  # long headlines, long contexts
        (150, 200, 400),  # very long episode URLs: episodes must move to the thread
    ],
)
def test_seven_shows_seven_episodes_300_prs_fit_and_nothing_is_dropped(
    renderer: Renderer, headline_len: int, context_len: int, url_extra: int
) -> None:
    eps = big_week(headline_len=headline_len, context_len=context_len, url_extra=url_extra)
    recap = aggregate(eps, year=2026, week=41, tz=UTC_TZ, shows=SHOWS)
    assert len(recap.episodes) == 49 and len(recap.pull_requests) == 300
    rendered = render_recap(recap, renderer)
    assert rendered is not None
    post, replies = rendered
    assert replies, "300 PRs cannot all be in the post"
    for message in [post, *replies]:
        assert_valid_block_kit(message)
    # Every PR and every episode exactly once, post and thread together.
    assert sorted(pr_numbers([post, *replies])) == sorted(p.number for p in recap.pull_requests)
    assert sorted(episode_urls([post, *replies])) == sorted(e.url or "" for e in recap.episodes)
    # The post says how much went to the thread.
    in_post = pr_numbers([post])
    assert f"_…and {300 - len(in_post)} more PRs in the thread_" in all_text(post)
    # The post has the top of the list: the PRs named twice come first.
    assert len(in_post) >= 5
    assert in_post == [p.number for p in recap.pull_requests[: len(in_post)]]
    assert in_post[:5] == [200_001, 200_002, 200_003, 200_004, 200_005]
    episodes_in_post = len(episode_urls([post]))
    if episodes_in_post < 49:
        assert f"_…and {49 - episodes_in_post} more episodes in the thread_" in all_text(post)
    else:
        assert len(in_post) == 10


def test_realistic_busy_week_keeps_every_episode_in_the_post(renderer: Renderer) -> None:
    recap = aggregate(big_week(), year=2026, week=41, tz=UTC_TZ, shows=SHOWS)
    rendered = render_recap(recap, renderer)
    assert rendered is not None
    post, replies = rendered
    assert len(episode_urls([post])) == 49
    assert len(pr_numbers([post])) == 10
    assert len(replies) >= 2
    assert replies[0]["blocks"][0]["text"]["text"] == "*More pull requests* (11–300 of 300)"


def test_without_a_thread_the_overflow_is_counted_not_sent(renderer: Renderer) -> None:
    recap = aggregate(big_week(), year=2026, week=41, tz=UTC_TZ, shows=SHOWS)
    rendered = render_recap(recap, renderer, thread=False)
    assert rendered is not None
    post, replies = rendered
    assert replies == []
    assert_within_limits(post)
    assert "_…and 290 more PRs not shown here_" in all_text(post)


# -- PRs named in one sentence --------------------------------------------------------------


def assert_valid_block_kit(message: Message) -> None:
    assert_within_limits(message)
    for block in message["blocks"]:
        Block.parse(block).validate_json()  # type: ignore[union-attr]


ONE_SENTENCE = "Three drafts, PRs 199720, 199721 and 199726, propose all-gather owners."


def test_prs_named_in_one_sentence_share_a_line(renderer: Renderer) -> None:
    eps = [
        episode(
            "mon",
            "2026-10-05T13:00:00+00:00",
            prs=(
                pr(199720, ONE_SENTENCE),
                pr(199721, ONE_SENTENCE),
                pr(199726, ONE_SENTENCE),
                pr(199714, "PR 199714 merges a whole stack."),
            ),
        ),
        # The same words in another episode are another mention: a line of their own.
        episode("tue", "2026-10-06T13:00:00+00:00", prs=(pr(199800, ONE_SENTENCE),)),
    ]
    recap = aggregate(eps, year=2026, week=41, tz=UTC_TZ, shows=["PyTorch"])
    rendered = render_recap(recap, renderer)
    assert rendered is not None
    post, replies = rendered
    assert replies == []
    assert_valid_block_kit(post)
    lines = [ln for b in post["blocks"] if "text" in b for ln in b["text"]["text"].split("\n")]
    link = "<https://github.com/pytorch/pytorch/pull/{0}|#{0}>".format
    assert (
        lines.count(f"• {link(199720)}, {link(199721)}, {link(199726)} · Mon · {ONE_SENTENCE}") == 1
    )
    assert f"• {link(199800)} · Tue · {ONE_SENTENCE}" in lines
    assert all_text(post).count(ONE_SENTENCE) == 2
    assert pr_numbers([post]) == [199720, 199721, 199726, 199714, 199800]

    text = recap_text(recap).splitlines()
    at = text.index(f"  #199720, #199721, #199726 · Mon · {ONE_SENTENCE}")
    assert text[at + 1 : at + 4] == [
        f"    https://github.com/pytorch/pytorch/pull/{n}" for n in (199720, 199721, 199726)
    ]
    assert sum(ONE_SENTENCE in line for line in text) == 2


def test_a_sentence_cut_between_post_and_thread_keeps_every_pr_once(renderer: Renderer) -> None:
    # 3 PRs of their own, then 14 in one sentence: the post's top 10 ends inside that sentence.
    own = tuple(pr(100 + i, f"PR {100 + i} on its own.") for i in range(3))
    shared = tuple(pr(200 + i, "Fourteen PRs land as one series.") for i in range(14))
    eps = [episode("mon", "2026-10-05T13:00:00+00:00", prs=own + shared)]
    recap = aggregate(eps, year=2026, week=41, tz=UTC_TZ, shows=["PyTorch"])
    rendered = render_recap(recap, renderer)
    assert rendered is not None
    post, replies = rendered
    for message in (post, *replies):
        assert_valid_block_kit(message)
    numbers = [p.number for p in recap.pull_requests]
    assert pr_numbers([post]) == numbers[:10]
    assert pr_numbers(replies) == numbers[10:]
    assert "_…and 7 more PRs in the thread_" in all_text(post)
    assert replies[0]["blocks"][0]["text"]["text"] == "*More pull requests* (11–17 of 17)"
    # At most five to a line, the sentence once per line: 5 + 2 in the post, 5 + 2 after.
    assert all_text(post).count("Fourteen PRs") == 2
    assert sum(all_text(r).count("Fourteen PRs") for r in replies) == 2


# -- plain text -------------------------------------------------------------------------------


def test_recap_text_has_everything_unescaped() -> None:
    text = recap_text(sample_recap())
    lines = text.splitlines()
    assert lines[0] == "PyTorch — week 41, 5 Oct – 11 Oct 2026"
    assert lines[1] == "=" * len(lines[0])
    assert lines[2] == "5 episodes · 12 min (+1 of unknown length) · 12 PRs"
    assert "  Fri 9 Oct · Compiler Parity and MPS Fixes <!channel> · 3 PRs" in lines
    assert "    https://github.com/pytorch/pytorch/pull/199840" in lines
    assert len([ln for ln in lines if ln.startswith("    https://github.com/")]) == 12
    assert (
        "  #199720, #199726 · Mon, Wed · Three drafts, PRs 199720, 199721 and 199726, propose"
        " owners." in lines
    )
    assert len([ln for ln in lines if ln.startswith("  #")]) == 11
    assert "&lt;" not in text and "&amp;" not in text
    assert lines[-1].startswith("Came up more than once: MPS · compiler")


def test_recap_text_of_a_big_week_lists_every_pr() -> None:
    recap = aggregate(big_week(), year=2026, week=41, tz=UTC_TZ, shows=SHOWS)
    text = recap_text(recap)
    listed = re.findall(r"^    https://github\.com/pytorch/pytorch/pull/(\d+)$", text, re.MULTILINE)
    assert sorted(int(n) for n in listed) == sorted(p.number for p in recap.pull_requests)
    named = re.findall(r"#(\d+)", "\n".join(re.findall(r"^  #.*$", text, re.MULTILINE)))
    assert sorted(named) == sorted(listed)


def test_recap_text_of_an_empty_week() -> None:
    recap = aggregate([], year=2026, week=41, tz=UTC_TZ, shows=["PyTorch"], keywords=["fsdp"])
    assert recap_text(recap).splitlines()[-1] == "A quiet week: no new episodes matching fsdp."


def test_a_pr_number_of_two_repositories_in_one_recap_names_each_repository() -> None:
    """JAX's #5012 and Triton's #5012 side by side: "#5012" twice says nothing."""
    jax, triton = "jax-ml/jax", "triton-lang/triton"
    week = [
        episode("j1", "2026-10-06T10:00:00+00:00", show="JAX", prs=(pr(5012, "Sharding.", jax),)),
        episode(
            "t1",
            "2026-10-07T10:00:00+00:00",
            show="Triton",
            prs=(pr(5012, "TMA.", triton), pr(5020, "AMD.", triton)),
        ),
    ]
    recap = aggregate(week, year=2026, week=41, tz=UTC_TZ, shows=["JAX", "Triton"])
    renderer = Renderer(tz=UTC, repos={"JAX": jax, "Triton": triton})
    post = render_recap(recap, renderer)
    assert post is not None
    shown = all_text(post[0])
    assert f"|{jax}#5012>" in shown and f"|{triton}#5012>" in shown
    assert "|#5020>" in shown  # a number of one repository stays short
    text = recap_text(recap, renderer)
    assert f"{jax}#5012" in text and f"{triton}#5012" in text
