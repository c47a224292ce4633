"""Block Kit limits, and ``fit()``: the last guard so Slack never rejects what we post.

Numbers from Slack's Block Kit reference; see /work/shared/slack-notes.md.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, TypedDict

from digests.render.escape import ELLIPSIS, Mrkdwn, truncate

BLOCKS_PER_MESSAGE = 50
BLOCKS_PER_VIEW = 100  # Home tab and modals
HEADER_TEXT = 150
SECTION_TEXT = 3000
SECTION_FIELDS = 10
FIELD_TEXT = 2000
CONTEXT_ELEMENTS = 10
CONTEXT_TEXT = 3000  # a text object's own limit
ACTIONS_ELEMENTS = 25
BUTTON_TEXT = 75
BUTTON_VALUE = 2000
BUTTON_URL = 3000
ACTION_ID = 255
# Slack sums the text of all blocks and answers msg_blocks_too_long from about 13,200
# characters; one report failed at 11,341 counted (slackapi/bolt-js#2509, #2867). Stay well
# under, since the container overhead Slack adds is not documented.
MESSAGE_TEXT_BUDGET = 10_000
# The top-level `text` is cut by Slack past 40,000; as a notification a short one is better.
FALLBACK_TEXT = 3000

Block = dict[str, Any]
# A section shrunk below this is noise; it is dropped instead.
_MIN_KEPT = 40


class Message(TypedDict):
    """What ``chat.postMessage`` / ``respond`` take: ``text`` is always set (fallback)."""

    text: str
    blocks: list[Block]


def block_text_size(block: Block) -> int:
    """The characters of text a block carries (what counts toward the message budget)."""
    total = 0

    def walk(node: object) -> None:
        nonlocal total
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "text" and isinstance(value, str):
                    total += len(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(block)
    return total


def message_text_size(message: Message) -> int:
    return sum(block_text_size(b) for b in message["blocks"])


def _cut(obj: dict[str, Any], limit: int) -> None:
    """Truncate a text object in place, counting mrkdwn in its escaped form."""
    text = obj.get("text", "")
    if obj.get("type") == "mrkdwn":
        obj["text"] = str(truncate(Mrkdwn(text), limit))
    else:
        obj["text"] = truncate(text, limit)


def _fit_header(block: Block) -> Block | None:
    _cut(block["text"], HEADER_TEXT)
    return block if block["text"]["text"].strip() else None


def _fit_section(block: Block) -> Block | None:
    if "text" in block:
        _cut(block["text"], SECTION_TEXT)
        if not block["text"]["text"].strip():
            del block["text"]
    if "fields" in block:
        block["fields"] = block["fields"][:SECTION_FIELDS]
        for field in block["fields"]:
            _cut(field, FIELD_TEXT)
        block["fields"] = [f for f in block["fields"] if f["text"].strip()]
        if not block["fields"]:
            del block["fields"]
    return block if ("text" in block or "fields" in block) else None


def _fit_context(block: Block) -> Block | None:
    elements = block.get("elements", [])[:CONTEXT_ELEMENTS]
    for element in elements:
        if element.get("type") in ("mrkdwn", "plain_text"):
            _cut(element, CONTEXT_TEXT)
    block["elements"] = [e for e in elements if e.get("text", "x").strip()]
    return block if block["elements"] else None


def _fit_button(element: dict[str, Any]) -> dict[str, Any] | None:
    _cut(element["text"], BUTTON_TEXT)
    # A cut value or URL would be garbage to whoever reads it back: drop the button.
    if len(element.get("value", "")) > BUTTON_VALUE or len(element.get("url", "")) > BUTTON_URL:
        return None
    element["action_id"] = element.get("action_id", "")[:ACTION_ID]
    return element


def _fit_actions(block: Block) -> Block | None:
    kept = []
    for element in block.get("elements", [])[:ACTIONS_ELEMENTS]:
        fitted = _fit_button(element) if element.get("type") == "button" else element
        if fitted is not None:
            kept.append(fitted)
    block["elements"] = kept
    return block if kept else None


_FITTERS: dict[str, Callable[[Block], Block | None]] = {
    "header": _fit_header,
    "section": _fit_section,
    "context": _fit_context,
    "actions": _fit_actions,
}


def _fit_block(block: Block) -> Block | None:
    """The block within its own limits, or None when nothing valid is left of it."""
    fitter = _FITTERS.get(block.get("type", ""))
    return fitter(block) if fitter is not None else block


def _within_budget(blocks: list[Block], budget: int) -> list[Block]:
    """Shrink text sections from the last one back until the total fits; the header, the
    meta line and the buttons are small and stay. Only if that is not enough do blocks go
    from the end."""
    overflow = sum(block_text_size(b) for b in blocks) - budget
    dropped: set[int] = set()
    for index in range(len(blocks) - 1, -1, -1):
        if overflow <= 0:
            break
        block = blocks[index]
        if block.get("type") != "section" or "text" not in block or "fields" in block:
            continue
        text = block["text"]["text"]
        if len(text) - overflow >= _MIN_KEPT:
            block["text"]["text"] = str(truncate(Mrkdwn(text), len(text) - overflow))
            overflow -= len(text) - len(block["text"]["text"])
        else:
            dropped.add(index)
            overflow -= block_text_size(block)
    kept = [b for i, b in enumerate(blocks) if i not in dropped]
    while overflow > 0 and kept:
        overflow -= block_text_size(kept.pop())
    return kept


def fit(message: Message, *, max_blocks: int = BLOCKS_PER_MESSAGE) -> Message:
    """A copy of ``message`` that Slack accepts: every block within its limits, at most
    ``max_blocks`` blocks, the total text within ``MESSAGE_TEXT_BUDGET`` (the head is kept,
    the tail cut), and a non-empty fallback ``text``."""
    blocks: list[Block] = []
    for original in message["blocks"]:
        block = _fit_block(copy.deepcopy(original))
        if block is not None:
            blocks.append(block)
    blocks = blocks[:max_blocks]

    blocks = _within_budget(blocks, MESSAGE_TEXT_BUDGET)
    text = message.get("text") or ""
    text = str(truncate(Mrkdwn(text), FALLBACK_TEXT)) if text.strip() else ELLIPSIS
    return Message(text=text, blocks=blocks)
