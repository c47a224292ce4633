"""The thread reply's headings count PRs in words that fit the number."""

from __future__ import annotations

from datetime import UTC, datetime

from digests.models import Episode, PullRequestRef
from digests.render import Renderer


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
