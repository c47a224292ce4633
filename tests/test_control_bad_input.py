"""The channel-control subcommands given bad or borderline filters, over real signed HTTP
(SQLite and PostgreSQL): each refusal is one line plus the usage and saves nothing; a filter of
only ``-`` terms is allowed, says so, and delivers everything else through real polls; signed
phrases are stored as phrases."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.messages.usage import USAGE_SHORT
from digests.filters import Filter
from tests.fixtures.app import wait_for
from tests.fixtures.control import START, Rig
from tests.fixtures.delivery import rss, rss_item

WORDS_30 = " ".join(f"w{n}" for n in range(30))
EMPTY_QUOTES = '`""` is an empty phrase; put words between the quotes, like "flex attention".'
LONE = "`{}` needs a word right after the {} (like +cuda or -rocm)."
OPEN_QUOTE = "A quote in the filter is never closed; put phrases in pairs of quotes."


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (f"subscribe PyTorch {WORDS_30}", "A filter takes at most 10 terms, not 30."),
        ('subscribe PyTorch ""', EMPTY_QUOTES),
        ("subscribe PyTorch “”", EMPTY_QUOTES),
        ("subscribe PyTorch +", LONE.format("+", "+")),
        ("subscribe PyTorch mps -", LONE.format("-", "-")),
        ("subscribe PyTorch fsdp (+)", LONE.format("(+)", "+")),
        ('subscribe PyTorch "flex attention', OPEN_QUOTE),
        ('subscribe PyTorch +"flex attention', OPEN_QUOTE),
        ('subscribe PyTorch keywords: fsdp "graph breaks', OPEN_QUOTE),
    ],
)
async def test_bad_subscribe_filters_get_one_line_and_the_usage_and_save_nothing(
    rig: Rig, text: str, reason: str
) -> None:
    rig.slash("subscribe PyTorch inductor")
    lines = rig.slash(text)
    assert lines[0] == f":warning: {reason}"
    assert lines[1].startswith("Usage: `/episodes subscribe [shows…]")
    assert len(lines) == 2
    (sub,) = rig.store.subscriptions()
    assert sub.filter == Filter(any_of=("inductor",))


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('preview PyTorch ""', EMPTY_QUOTES),
        ('preview PyTorch inductor “”', EMPTY_QUOTES),
        ("preview PyTorch " + WORDS_30, "A filter takes at most 10 terms, not 30."),
        ("preview Pytorh inductor", "There is no show called Pytorh — did you mean PyTorch?"),
    ],
)
async def test_bad_previews_get_one_line_and_the_usage(rig: Rig, text: str, reason: str) -> None:
    lines = rig.slash(text)
    assert lines == [f":warning: {reason}", lines[1]]
    assert lines[1].startswith("Usage: `/episodes preview [show] [filter…]`")


async def test_a_filter_of_only_exclusions_says_so_and_posts_everything_else(rig: Rig) -> None:
    rig.serve(1)
    url = rig.fake.response_url()
    response = rig.sender.slash('subscribe PyTorch -rocm -"hip kernels"', response_url=url)
    reply = [b["text"]["text"] for b in response.json()["blocks"] if "text" in b]
    assert reply[0] == (
        "This channel now gets new *PyTorch* episodes — everything except those that mention "
        "“rocm” or “hip kernels”."
    )
    assert reply[1] == (
        "Now: *PyTorch* · every episode except those that mention “rocm” or “hip kernels” · "
        "weekly recap on"
    )
    (announced,) = wait_for(lambda: rig.fake.responses(url), what="the announcement")
    assert announced["text"].endswith(
        "*PyTorch* episodes — everything except those that mention “rocm” or “hip kernels”."
    )
    assert rig.slash("list")[1] == (
        "• *PyTorch* — every episode except those mentioning “rocm” or “hip kernels”"
    )
    (sub,) = rig.store.subscriptions()
    assert sub.filter == Filter(none_of=("rocm", "hip kernels"))

    await rig.poll(START)
    rig.feed.route(
        "/feed.xml",
        rss(
            rss_item(5, headline="Quiet Day"),
            rss_item(4, headline="New HIP Kernels"),
            rss_item(3, headline="ROCm Wheels"),
            rss_item(2),
            rss_item(1),
        ),
    )
    await rig.poll(datetime(2026, 10, 5, 14, 0, tzinfo=UTC))
    posted = rig.posted()
    assert "PyTorch:pytorch-2026-10-05" in posted and "PyTorch:pytorch-2026-10-02" in posted
    assert not {"PyTorch:pytorch-2026-10-03", "PyTorch:pytorch-2026-10-04"} & set(posted)


async def test_signed_phrases_and_mixed_filters_are_read_out(rig: Rig) -> None:
    reply = rig.slash('subscribe PyTorch inductor +"flex attention" -rocm')
    assert reply[0].startswith(
        "This channel now gets new *PyTorch* episodes that pass its filter: mentions "
        "“inductor”, must mention “flex attention”, never “rocm”."
    )
    (sub,) = rig.store.subscriptions()
    assert sub.filter == Filter(("inductor",), ("flex attention",), ("rocm",))
    # The preview it offers reads back to the same filter.
    assert reply[-1] == (
        "Which recent episodes this lets through: "
        '`/episodes preview PyTorch inductor +"flex attention" -rocm`'
    )
    replaced = rig.slash("subscribe PyTorch fsdp")
    assert replaced[0].endswith(
        "It replaces the earlier filter (mentions “inductor”, must mention “flex attention”, "
        "never “rocm”)."
    )


async def test_help_lists_every_channel_control_with_the_filter_syntax(rig: Rig) -> None:
    everything = "\n".join(rig.slash("help"))
    assert (
        "`/episodes subscribe [shows…] [filter…] [recap on|off] [daily [17:00] | daily off] "
        '[pr-updates on|off]` — post new episodes here; a filter is words and "phrases" '
        "(any of them), +required, -excluded"
    ) in everything
    for usage in (
        "`/episodes preview [show] [filter…]`",
        "`/episodes pause [show] [for 3d | until mon | until 2026-12-24]`",
        "`/episodes resume [show] [--catch-up]`",
        "`/episodes why &lt;episode link",
        "`/episodes subscribe PyTorch -rocm`",
    ):
        assert usage in everything
    # An unknown subcommand gets the help too.
    assert rig.slash("frobnicate")[0].startswith("I don't know `frobnicate`. *digestbot")
    # The short usage (an error of no one subcommand) names them as well.
    for word in ("preview [show] [filter…]", "pause [show]", "resume [show]", "why <episode>"):
        assert f"| {word}" in USAGE_SHORT


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            "subscribe PyTorch daily 9:30am fsdp",
            "`daily 9:30am` goes at the end, after the filter: e.g. "
            "`subscribe JAX fsdp daily 9:30am`.",
        ),
        (
            "subscribe PyTorch recap maybe",
            "`recap` goes at the end, as `recap on` or `recap off` (not `recap maybe`); to "
            'filter on the word, quote it: `"recap"`.',
        ),
        (
            "subscribe PyTorch recap",
            "`recap` goes at the end, as `recap on` or `recap off`; to filter on the word, "
            'quote it: `"recap"`.',
        ),
    ],
)
def test_misplaced_daily_or_recap_is_refused_not_made_keywords(
    rig: Rig, text: str, reason: str
) -> None:
    lines = rig.slash(text)
    assert lines == [f":warning: {reason}", lines[1]]
    assert lines[1].startswith("Usage: `/episodes subscribe")
    assert rig.store.subscriptions() == []
