"""A digest as template authors see it: the Block Kit JSON the renderer makes for a sample
episode (timed PRs, chapters, GitHub details), and an HTML rendering of those blocks that
headless Chromium turns into a picture.

``python -m tests.blockkit_preview`` writes docs/examples/digest.json, thread.json,
digest.html and, when Chromium is installed, digest.png. tests/test_docs_example.py checks
that the JSON in docs is what the renderer makes today.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from digests.models import Chapter, Episode, PrInfo, PrTime, PullRequestRef
from digests.render.renderer import Renderer

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "docs" / "examples"
PR = "https://github.com/pytorch/pytorch/pull/"
AUDIO = "https://cdn.example.com/pytorch/2026-10-05.mp3"


def sample_episode() -> Episode:
    """A daily PyTorch episode as the bot holds it after a poll with a timed transcript,
    a chapters document and GitHub's details."""
    sentence = "PRs 199720, 199721 and 199726 move the all-gather layout to the new sharding."
    prs = (
        PullRequestRef(199720, PR + "199720", sentence),
        PullRequestRef(199721, PR + "199721", sentence),
        PullRequestRef(199726, PR + "199726", sentence),
        PullRequestRef(199801, PR + "199801", "PR 199801 adds the autotune cache."),
    )
    info = (
        PrInfo(199720, "All-gather layout for DTensor", "merged", "distributed", "ada", rank=0),
        PrInfo(199721, "Shard the gather buffers", "open", "distributed", "grace", rank=1),
        PrInfo(199726, "Benchmarks for the new layout", "draft", None, "alan", rank=3),
        PrInfo(199801, "Persistent autotune cache", "merged", "inductor", "edsger", rank=2),
    )
    return Episode(
        guid="pytorch-2026-10-05",
        show="PyTorch",
        title="PyTorch: All-Gather Showdown",
        headline="All-Gather Showdown",
        summary="The all-gather layout moves to the new sharding, and the autotune cache "
        "lands so that warm starts skip the search.",
        published_at=datetime(2026, 10, 5, 13, 0, tzinfo=UTC),
        duration_seconds=312,
        url="https://episodes.example.com/pytorch/2026-10-05",
        audio_url=AUDIO,
        pull_requests=prs,
        pr_info=info,
        pr_times=(
            PrTime(PR + "199720", 83),
            PrTime(PR + "199721", 90),
            PrTime(PR + "199726", 90),
            PrTime(PR + "199801", 185),
        ),
        chapters=(
            Chapter(0, "Intro"),
            Chapter(80, "All-gather layout", "https://episodes.example.com/ag"),
            Chapter(180, "Autotune cache"),
        ),
    )


def rendered() -> dict[str, Any]:
    renderer = Renderer(repos={"PyTorch": "pytorch/pytorch"})
    episode = sample_episode()
    return {"digest": renderer.digest(episode), "thread": renderer.thread_reply(episode)}


# -- Block Kit → HTML, enough of it to see a digest ---------------------------------------

_LINK = re.compile(r"<(https?://[^|>]+)\|([^>]*)>")


def _styled(text: str) -> str:
    out = html.escape(html.unescape(text), quote=False)
    out = re.sub(r"\*([^*\n]+)\*", r"<b>\1</b>", out)
    return re.sub(r"(?<![\w/])_([^_\n]+)_(?!\w)", r"<i>\1</i>", out)


def _mrkdwn(text: str) -> str:
    """Slack's mrkdwn as HTML: links, bold, italics, line breaks."""
    out: list[str] = []
    at = 0
    for m in _LINK.finditer(text):
        out.append(_styled(text[at : m.start()]))
        href = html.escape(html.unescape(m.group(1)))
        out.append(f'<a href="{href}">{_styled(m.group(2))}</a>')
        at = m.end()
    out.append(_styled(text[at:]))
    return "".join(out).replace("\n", "<br>")


def _block(block: dict[str, Any]) -> str:
    kind = block["type"]
    if kind == "header":
        return f"<h3>{html.escape(block['text']['text'])}</h3>"
    if kind == "section":
        return f"<p>{_mrkdwn(block['text']['text'])}</p>"
    if kind == "context":
        parts = " ".join(_mrkdwn(e.get("text", "")) for e in block["elements"])
        return f'<p class="context">{parts}</p>'
    if kind == "actions":
        buttons = "".join(
            f"<button>{html.escape(e['text']['text'])}</button>" for e in block["elements"]
        )
        return f"<div>{buttons}</div>"
    return ""


def to_html(messages: dict[str, Any]) -> str:
    digest = "".join(_block(b) for b in messages["digest"]["blocks"])
    thread = "".join(
        f'<div class="reply">{"".join(_block(b) for b in m["blocks"])}</div>'
        for m in messages["thread"]
    )
    return f"""<!doctype html><meta charset="utf-8"><style>
body {{ font: 15px/1.45 -apple-system, "Segoe UI", Roboto, sans-serif; margin: 16px;
  width: 640px; color: #1d1c1d; }}
.message {{ border-left: 4px solid #ddd; padding: 0 12px; }}
.reply {{ margin: 12px 0 0 28px; border-left: 4px solid #eee; padding: 0 12px; }}
.context {{ color: #616061; font-size: 13px; }}
a {{ color: #1264a3; text-decoration: none; }}
button {{ margin-right: 8px; padding: 4px 12px; border: 1px solid #ccc; background: #fff;
  border-radius: 4px; font-weight: 600; }}
h3 {{ margin: 8px 0; }}
</style><div class="message">{digest}</div>{thread}
"""


def write(directory: Path = EXAMPLES) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    messages = rendered()
    written = []
    for name in ("digest", "thread"):
        path = directory / f"{name}.json"
        path.write_text(json.dumps(messages[name], indent=2, ensure_ascii=False) + "\n")
        written.append(path)
    page = directory / "digest.html"
    page.write_text(to_html(messages))
    written.append(page)
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is not None:
        picture = directory / "digest.png"
        subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--screenshot={picture}", "--window-size=680,900", page.as_uri()],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        written.append(picture)
    return written


if __name__ == "__main__":
    for path in write():
        sys.stdout.write(f"{path.relative_to(ROOT)}\n")
