"""The thread reply's headings count PRs in words that fit the number."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from bot.jobs.ingest import extract_episodes, parse_feed
from digests.models import Episode, PrInfo, PullRequestRef
from digests.render.limits import Message
from digests.render.renderer import Renderer
from digests.store import Store

REPO = "pytorch/pytorch"


def episode(prs: int) -> Episode:
    return Episode(
        guid="g",
        show="PyTorch",
        title="PyTorch: Counting",
        headline="Counting",
        summary="A short summary.",
        published_at=datetime(2026, 10, 5, 13, 0, tzinfo=UTC),
        duration_seconds=120,
        url="https://briefings.example/pytorch/2026-10-05",
        transcript="",
        pull_requests=tuple(
            PullRequestRef(
                number=100 + n,
                url=f"https://github.com/pytorch/pytorch/pull/{100 + n}",
                context=f"PR {100 + n} lands.",
            )
            for n in range(prs)
        ),
    )


def heading(message: dict[str, object]) -> str:
    blocks = message["blocks"]
    assert isinstance(blocks, list)
    return str(blocks[0]["text"]["text"]).split("\n", 1)[0]


def test_key_prs_of_one_pr_is_singular() -> None:
    (reply,) = Renderer().key_prs(episode(1))
    assert heading(reply) == "*The one PR in this episode*"
    assert reply["text"] == "PR: Counting"
    (two,) = Renderer().key_prs(episode(2))
    assert heading(two) == "*All 2 PRs in this episode*"
    assert two["text"] == "PRs: Counting"


def test_one_pr_past_the_digest_is_one_more() -> None:
    (reply,) = Renderer(max_prs=2).thread_reply(episode(3))
    assert heading(reply) == "*One more PR* (3 of 3)"
    (more,) = Renderer(max_prs=2).thread_reply(episode(4))
    assert heading(more) == "*More PRs* (3–4 of 4)"


def texts(messages: list[Message]) -> str:
    return "\n".join(json.dumps(m["blocks"], ensure_ascii=False) for m in messages)


def with_transcript(prs: int) -> Episode:
    return episode(prs).model_copy(
        update={"transcript": "The whole conversation, which says much more than the summary."}
    )


def test_key_prs_under_a_thread_that_has_the_transcript_does_not_post_it_again() -> None:
    r = Renderer(max_prs=8)
    e = with_transcript(3)
    # The delivered thread reply carries the transcript (it says more than the digest).
    assert "Transcript excerpt" in texts(r.thread_reply(e))
    in_thread = texts(r.key_prs(e, in_thread=True))
    assert "Transcript excerpt" not in in_thread and "whole conversation" not in in_thread
    assert "*All 3 PRs in this episode*" in in_thread
    # Anywhere else (an ephemeral answer) it is the whole answer, as before.
    assert "whole conversation" in texts(r.key_prs(e))


def test_prs_of_one_sentence_quote_it_once_in_the_thread() -> None:
    sentence = "Twelve PRs land the whole series in one go."
    e = episode(0).model_copy(
        update={
            "pull_requests": tuple(
                PullRequestRef(n, f"https://github.com/pytorch/pytorch/pull/{n}", sentence)
                for n in range(100, 112)
            )
        }
    )
    for messages in (Renderer().key_prs(e), Renderer(max_prs=2).thread_reply(e)):
        text = texts(messages)
        assert text.count(sentence) == 1
        assert all(f"/pull/{n}|#{n}>" in text for n in range(102, 112))
    details = e.model_copy(update={"pr_info": tuple(PrInfo(n, f"T{n}") for n in range(100, 112))})
    text = texts(Renderer().key_prs(details))
    assert text.count(sentence) == 1 and "*T111*" in text


def many_prs_feed(count: int) -> bytes:
    numbers = ", ".join(str(200_000 + n) for n in range(count))
    return (
        '<?xml version="1.0"?><rss version="2.0"><channel><title>PyTorch</title>'
        "<item><title>PyTorch: The Big Merge</title><guid>big</guid>"
        "<pubDate>Mon, 05 Oct 2026 13:00:00 GMT</pubDate>"
        f"<description>A long week. PRs {numbers} all land at once.</description>"
        "</item></channel></rss>"
    ).encode()


def test_a_thread_of_an_episode_naming_more_prs_than_kept_says_first_of_how_many(
    store: Store,
) -> None:
    (big,) = extract_episodes(parse_feed(many_prs_feed(250), "feed.xml"), "PyTorch", REPO)
    assert len(big.pull_requests) == 200 and big.pull_requests_named == 250
    store.ensure_show("PyTorch", "feed.xml", REPO)
    store.upsert_episodes([big], datetime(2026, 10, 5, 14, tzinfo=UTC))
    stored = store.episode("PyTorch", "big")
    assert stored is not None and stored.pull_requests_named == 250
    for e in (big, stored):
        replies = Renderer(max_prs=8).thread_reply(e)
        assert heading(replies[0]) == "*More PRs* (9–200: the first 200 of 250)"
        assert heading(Renderer().key_prs(e)[0]) == "*The first 200 of 250 PRs in this episode*"
    # All of them kept: counted as before, and nothing extra to store.
    (all_kept,) = extract_episodes(parse_feed(many_prs_feed(200), "feed.xml"), "PyTorch", REPO)
    assert all_kept.pull_requests_named == 0
    assert heading(Renderer(max_prs=8).thread_reply(all_kept)[0]) == "*More PRs* (9–200 of 200)"
