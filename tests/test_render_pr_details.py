"""Digests and threads with GitHub details: ranked key PRs (at most 5), each ``#n`` *title*
state · area; every PR in the thread the same way; as before when nothing is known."""

from __future__ import annotations

from datetime import UTC, datetime

from config.settings import ShowConfig
from digests.models import Episode, PullRequestRef
from digests.pulls import with_details
from digests.render.renderer import Renderer
from digests.types import PrDetails

REPO = "pytorch/pytorch"
RULES = ShowConfig(name="PyTorch", feed="f.xml").pr_rules()
NUMBERS = (199720, 199721, 199726, 199687, 199690, 199691, 199692)


def episode() -> Episode:
    return Episode(
        guid="g1",
        show="PyTorch",
        title="PyTorch: All-Gather Showdown",
        headline="All-Gather Showdown",
        published_at=datetime(2026, 10, 5, 13, tzinfo=UTC),
        summary="Compiler and sharding news.",
        pull_requests=tuple(
            PullRequestRef(n, f"https://github.com/{REPO}/pull/{n}", f"It names {n}.")
            for n in NUMBERS
        ),
    )


def details() -> dict[tuple[str, int], PrDetails]:
    return {
        (REPO, 199720): PrDetails(REPO, 199720, "Closed for good", state="closed"),
        (REPO, 199721): PrDetails(
            REPO, 199721, "Stack-aware merges", "closed", labels=("Merged", "module: fsdp")
        ),
        (REPO, 199692): PrDetails(
            REPO, 199692, "<!channel> breaks *all*", "open", labels=("topic: bc breaking",)
        ),
        (REPO, 199726): PrDetails(REPO, 199726, "Reverted one", "closed", labels=("Reverted",)),
    }


def section_texts(message: dict) -> list[str]:
    return [b["text"]["text"] for b in message["blocks"] if b["type"] == "section"]


def test_key_prs_ranked_with_title_state_area() -> None:
    enriched = with_details(episode(), details(), REPO, RULES)
    key = next(t for t in section_texts(Renderer().digest(enriched)) if "*Key PRs*" in t)
    lines = key.splitlines()[1:]
    assert lines[0] == (
        f"• <https://github.com/{REPO}/pull/199692|#199692> *&lt;!channel&gt; breaks *all** · open"
    )
    assert lines[1] == (
        f"• <https://github.com/{REPO}/pull/199721|#199721> *Stack-aware merges* · merged · fsdp"
    )
    assert lines[2].endswith("*Reverted one* · reverted")
    assert lines[3] == f"• <https://github.com/{REPO}/pull/199687|#199687> — It names 199687."
    assert len(lines) == 6 and lines[5] == "_and 2 more PRs_"
    assert "199720" not in key  # closed: below the five


def test_thread_lists_every_pr_the_same_way() -> None:
    enriched = with_details(episode(), details(), REPO, RULES)
    texts = [t for m in Renderer().thread_reply(enriched) for t in section_texts(m)]
    assert texts[0] == "*All 7 PRs in this episode*"
    lines = texts[1].splitlines()
    assert len(lines) == 7  # in the episode's order
    assert lines[0] == (
        f"• <https://github.com/{REPO}/pull/199720|#199720> *Closed for good* · closed "
        "— It names 199720."
    )


def test_without_details_nothing_changes() -> None:
    plain = episode()
    assert with_details(plain, {}, REPO, RULES) is plain
    renderer = Renderer()
    assert "·" not in section_texts(renderer.digest(plain))[1]
