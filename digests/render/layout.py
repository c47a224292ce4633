"""From a rendered template to a Block Kit message.

A template writes its message as marked parts, one marker per line::

    <:text:>      the notification fallback (mrkdwn, one line)
    <:header:>    plain text, one line, cut to 150
    <:section:>   mrkdwn, lines kept, cut to 3000
    <:lines:>     one item per line, packed into as many sections as needed
    <:context:>   one mrkdwn element per line (at most 10)
    <:divider:>
    <:actions:>   one button per line: ``action_id label`` (value supplied by the renderer)

Markers start with ``<``, which escaped feed text can never contain (and ``link()`` output
starts ``<http``), so a feed cannot forge a marker or a block.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from digests.errors import ConfigError
from digests.render import blocks as b
from digests.render import limits
from digests.render.escape import Mrkdwn, oneline
from digests.render.limits import Block, Message

_MARKER_RE = re.compile(r"^[ \t]*<:([a-z_]+):>[ \t]*$")
_KINDS = {"text", "header", "section", "lines", "context", "divider", "actions"}


def parts(script: str, *, template: str = "template") -> list[tuple[str, list[str]]]:
    """Split a rendered script into ``(kind, lines)``; text before the first marker is a
    section."""
    out: list[tuple[str, list[str]]] = []
    kind = "section"
    lines: list[str] = []
    for line in script.split("\n"):
        m = _MARKER_RE.match(line)
        if m is None:
            lines.append(line)
            continue
        if m.group(1) not in _KINDS:
            raise ConfigError(f"template {template}: unknown part <:{m.group(1)}:>")
        if kind != "section" or any(x.strip() for x in lines) or out:
            out.append((kind, lines))
        kind, lines = m.group(1), []
    out.append((kind, lines))
    return out


def _strip_blank(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def build(
    script: str,
    *,
    button_value: str | None = None,
    template: str = "template",
) -> Message:
    """The message a rendered script describes, each block within its limits.

    Empty parts (a section whose ``{% if %}`` produced nothing) are dropped, since Slack
    rejects empty text.
    """
    text = ""
    out: list[Block] = []
    for kind, raw in parts(script, template=template):
        lines = _strip_blank(raw)
        if kind == "divider":
            out.append(b.divider())
            continue
        if not lines:
            continue
        if kind == "text":
            text = oneline(Mrkdwn(" ".join(lines)))
        elif kind == "header":
            out.append(b.header(Mrkdwn(" ".join(lines))))
        elif kind == "section":
            out.append(b.section(Mrkdwn("\n".join(lines))))
        elif kind == "lines":
            out.extend(b.section(chunk) for chunk in b.pack_lines(Mrkdwn(x) for x in lines))
        elif kind == "context":
            elements = [Mrkdwn(x.strip()) for x in lines if x.strip()]
            out.append(b.context(elements))
        elif kind == "actions":
            buttons = []
            for line in lines:
                action_id, _, label = line.strip().partition(" ")
                if action_id and label.strip():
                    buttons.append(b.button(Mrkdwn(label), action_id, button_value))
            if buttons:
                out.append(b.actions(buttons))
    if not text:
        text = _fallback(out)
    return Message(text=str(text), blocks=out)


def _fallback(blocks: Sequence[Block]) -> Mrkdwn:
    """A template without a ``<:text:>`` part still notifies with something readable: the
    header, else the first section's first line."""
    for block in blocks:
        if block["type"] == "header":
            return Mrkdwn.escape(block["text"]["text"])
        if block["type"] == "section" and "text" in block:
            return Mrkdwn(oneline(Mrkdwn(block["text"]["text"].split("\n")[0])))
    return Mrkdwn("")


def paginate(
    blocks: Sequence[Block],
    text: str,
    *,
    max_blocks: int = limits.BLOCKS_PER_MESSAGE,
    budget: int = limits.MESSAGE_TEXT_BUDGET,
) -> list[Message]:
    """Split blocks over as many messages as needed, each within the block count and the
    text budget; a block never straddles two messages."""
    pages: list[Message] = []
    current: list[Block] = []
    size = 0
    for block in blocks:
        block_size = limits.block_text_size(block)
        if current and (len(current) >= max_blocks or size + block_size > budget):
            pages.append(Message(text=text, blocks=current))
            current, size = [], 0
        current.append(block)
        size += block_size
    if current or not pages:
        pages.append(Message(text=text, blocks=current))
    return [limits.fit(page, max_blocks=max_blocks) for page in pages]
