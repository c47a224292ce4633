"""docs/examples holds what the renderer makes today for the sample episode (timed PRs,
chapters, GitHub details): regenerate with ``python -m tests.blockkit_preview``."""

from __future__ import annotations

import json

from tests.blockkit_preview import EXAMPLES, rendered, to_html


def test_the_documented_block_kit_is_what_the_renderer_makes() -> None:
    messages = rendered()
    for name in ("digest", "thread"):
        documented = json.loads((EXAMPLES / f"{name}.json").read_text())
        assert documented == json.loads(json.dumps(messages[name])), name
    assert (EXAMPLES / "digest.html").read_text() == to_html(messages)


def test_the_example_shows_times_chapters_and_details() -> None:
    text = json.dumps(rendered(), ensure_ascii=False)
    assert "#t=83|▶ 1:23>" in text
    assert "*Chapters*" in text and "All-gather layout" in text
    assert "*All-gather layout for DTensor* · merged" in text
