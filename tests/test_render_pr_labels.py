"""A PR of another repository than the show's is labelled ``owner/repo#n`` on every surface
(digest, thread, Key PRs, recap post and thread, week answer, recap text); the show's own
repository's stay ``#n``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from config.settings import Settings, ShowConfig
from digests.models import Episode, PrInfo
from digests.recap import aggregate
from digests.render.limits import Message
from digests.render.prs import pr_label, pr_repo
from digests.render.recap import recap_text, render_recap
from digests.render.renderer import Renderer
from tests.fixtures.recap import episode, pr

REPOS = {"PyTorch": "pytorch/pytorch", "JAX": "jax-ml/jax"}
OWN = "<https://github.com/pytorch/pytorch/pull/5|#5>"
OTHER = "<https://github.com/triton-lang/triton/pull/7|triton-lang/triton#7>"


def blocks(messages: list[Message] | Message) -> str:
    items = messages if isinstance(messages, list) else [messages]
    return json.dumps([m["blocks"] for m in items], ensure_ascii=False)


def mixed(*, details: bool = False) -> Episode:
    e = episode(
        "g1",
        "2026-10-06T13:00:00+00:00",
        "Kernels Everywhere",
        summary="Two PRs.",
        prs=(
            pr(5, "PR 5 lands the pass."),
            pr(7, "Triton's PR 7 adds the kernel.", repo="triton-lang/triton"),
        ),
        transcript="A transcript that says something else entirely about kernels.",
    )
    if details:
        info = (PrInfo(5, "Own pass", "merged"), PrInfo(7, "Triton kernel", "open", rank=1))
        e = e.model_copy(update={"pr_info": info})
    return e


@pytest.mark.parametrize(
    ("number", "url", "repo", "label"),
    [
        (5, "https://github.com/pytorch/pytorch/pull/5", "pytorch/pytorch", "#5"),
        (5, "https://github.com/PyTorch/PyTorch/pull/5", "pytorch/pytorch", "#5"),
        (
            7,
            "https://github.com/triton-lang/triton/pull/7",
            "pytorch/pytorch",
            "triton-lang/triton#7",
        ),
        (
            7,
            "https://github.com/triton-lang/triton/pull/7/files",
            "jax-ml/jax",
            "triton-lang/triton#7",
        ),
        # No known repository (a PR named without a link, for a show not configured).
        (9, "", "pytorch/pytorch", "#9"),
        (9, None, None, "#9"),
        # The show's repository unknown: nothing to tell it apart from.
        (7, "https://github.com/triton-lang/triton/pull/7", None, "#7"),
        (7, "https://example.invalid/triton-lang/triton/pull/7", "pytorch/pytorch", "#7"),
    ],
)
def test_pr_label(number: int, url: str | None, repo: str | None, label: str) -> None:
    assert pr_label(number, url, repo) == label


def test_pr_repo() -> None:
    assert pr_repo("https://github.com/jax-ml/jax/pull/31001") == "jax-ml/jax"
    assert pr_repo("https://github.com/jax-ml/jax/issues/31001") is None
    assert pr_repo("") is None


@pytest.mark.parametrize("details", [False, True], ids=["feed only", "with GitHub details"])
def test_digest_thread_and_key_prs_label_another_repos_pr(details: bool) -> None:
    r = Renderer(repos=REPOS, max_prs=1)
    e = mixed(details=details)
    digest = blocks(r.digest(e))
    assert OWN in digest
    thread = blocks(r.thread_reply(e)) + blocks(r.key_prs(e))
    assert OTHER in thread and OWN in blocks(r.key_prs(e))
    assert "|#7>" not in digest + thread
    assert "triton-lang/triton#7" in Renderer(repos=REPOS).digest_text(e)


def test_unfurl_and_home_pr_lines_label_another_repos_pr() -> None:
    lines = str(Renderer(repos=REPOS).pr_lines(mixed(details=True)))
    assert OWN in lines and OTHER in lines


def test_the_digest_lists_both_labels_when_they_fit() -> None:
    message = blocks(Renderer(repos=REPOS).digest(mixed()))
    assert OWN in message and OTHER in message


def test_renderer_of_settings_knows_each_shows_repo() -> None:
    settings = Settings(
        shows=[
            ShowConfig(name="PyTorch", feed="p.xml"),
            ShowConfig(name="JAX", feed="j.xml", repo="jax-ml/jax"),
        ]
    )
    r = Renderer.of(settings)
    assert r.repos == REPOS
    jax = mixed().model_copy(update={"show": "JAX"})
    text = blocks(r.digest(jax))
    # In a JAX episode both are another repository's.
    assert "|pytorch/pytorch#5>" in text and OTHER in text


def test_recap_post_thread_week_and_text_label_another_repos_pr() -> None:
    tz = ZoneInfo("UTC")
    eps = [mixed()]
    # A JAX episode naming JAX's own PR and PyTorch's: labels follow each PR's episode show.
    eps.append(
        episode(
            "j1",
            datetime(2026, 10, 7, 9, tzinfo=UTC),
            "Sharding",
            show="JAX",
            prs=(pr(31001, "PR 31001.", repo="jax-ml/jax"), pr(6, "PyTorch PR 6.")),
        )
    )
    recap = aggregate(eps, year=2026, week=41, tz=tz, shows=["PyTorch", "JAX"])
    r = Renderer(repos=REPOS)
    rendered = render_recap(recap, r)
    assert rendered is not None
    post = blocks(rendered[0])
    assert OWN in post and OTHER in post
    assert "|#31001>" in post and "|pytorch/pytorch#6>" in post
    week = render_recap(recap, r, quiet_week=True, thread=False)
    assert week is not None and OTHER in blocks(week[0])
    text = recap_text(recap, r)
    assert "triton-lang/triton#7" in text and "#5 " in text and "pytorch/pytorch#6" in text
