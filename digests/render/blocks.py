"""Small Block Kit builders that respect the limits, for every part that posts to Slack.

Text given as a plain ``str`` is treated as untrusted and escaped; ``Mrkdwn`` (from
``link()``, ``mrkdwn()`` or a template) is used as is. Everything is cut to its limit at a
word with ``…``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from digests.models import guid_key
from digests.render import limits
from digests.render.escape import Mrkdwn, mrkdwn, plain, safe_url, truncate
from digests.render.limits import Block

__all__ = [
    "actions",
    "button",
    "button_value",
    "context",
    "divider",
    "guid_key",
    "header",
    "mrkdwn_text",
    "pack_lines",
    "plain_text",
    "read_button_value",
    "section",
]


def plain_text(text: object, limit: int) -> dict[str, Any]:
    return {"type": "plain_text", "text": truncate(plain(text), limit), "emoji": True}


def mrkdwn_text(text: object, limit: int = limits.SECTION_TEXT) -> dict[str, Any]:
    # verbatim: Slack must not turn feed words like #general or bare URLs into links.
    return {"type": "mrkdwn", "text": str(truncate(mrkdwn(text), limit)), "verbatim": True}


def header(text: object) -> Block:
    return {"type": "header", "text": plain_text(text, limits.HEADER_TEXT)}


def section(text: object, *, fields: Sequence[object] = ()) -> Block:
    block: Block = {"type": "section"}
    if str(text).strip():
        block["text"] = mrkdwn_text(text, limits.SECTION_TEXT)
    if fields:
        block["fields"] = [
            mrkdwn_text(f, limits.FIELD_TEXT) for f in list(fields)[: limits.SECTION_FIELDS]
        ]
    return block


def context(elements: Iterable[object]) -> Block:
    """Up to 10 mrkdwn elements; dicts (e.g. images) are passed through."""
    out: list[dict[str, Any]] = []
    for element in elements:
        if isinstance(element, dict):
            out.append(element)
        elif str(element).strip():
            out.append(mrkdwn_text(element, limits.CONTEXT_TEXT))
    return {"type": "context", "elements": out[: limits.CONTEXT_ELEMENTS]}


def divider() -> Block:
    return {"type": "divider"}


def actions(elements: Iterable[dict[str, Any]], *, block_id: str | None = None) -> Block:
    block: Block = {"type": "actions", "elements": list(elements)[: limits.ACTIONS_ELEMENTS]}
    if block_id:
        block["block_id"] = block_id[:255]
    return block


def button(
    text: object,
    action_id: str,
    value: str | None = None,
    url: str | None = None,
    *,
    style: str | None = None,
) -> dict[str, Any]:
    """A button. ``value`` is never cut (a cut value is garbage): too long raises ValueError —
    use ``button_value()``, which keeps within the limit."""
    element: dict[str, Any] = {
        "type": "button",
        "text": plain_text(text, limits.BUTTON_TEXT),
        "action_id": action_id[: limits.ACTION_ID],
    }
    if value is not None:
        if len(value) > limits.BUTTON_VALUE:
            raise ValueError(f"button value is {len(value)} chars, limit {limits.BUTTON_VALUE}")
        element["value"] = value
    checked = safe_url(url)
    if checked is not None:
        element["url"] = checked
    if style in ("primary", "danger"):
        element["style"] = style
    return element


def button_value(show: str, guid: str) -> str:
    """JSON ``{"show", "guid"}`` for an episode's buttons, within the 2,000-char limit.

    A GUID too long for that becomes ``{"show", "guid_sha256"}`` (see ``guid_key``); a show
    name too long as well becomes ``{"show_sha256", "guid_sha256"}``.
    """
    value = json.dumps({"show": show, "guid": guid}, separators=(",", ":"), ensure_ascii=False)
    if len(value) <= limits.BUTTON_VALUE:
        return value
    value = json.dumps(
        {"show": show, "guid_sha256": guid_key(guid)}, separators=(",", ":"), ensure_ascii=False
    )
    if len(value) <= limits.BUTTON_VALUE:
        return value
    return json.dumps({"show_sha256": guid_key(show), "guid_sha256": guid_key(guid)})


def read_button_value(value: str) -> dict[str, str]:
    """The inverse of ``button_value``; a value that is not ours gives ``{}``."""
    try:
        data = json.loads(value)
    except (TypeError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def pack_lines(lines: Iterable[object], limit: int = limits.SECTION_TEXT) -> list[Mrkdwn]:
    """Join lines into as few texts of at most ``limit`` chars as possible, breaking only
    between lines (a line longer than ``limit`` is cut on its own)."""
    chunks: list[Mrkdwn] = []
    current = ""
    for line in lines:
        text = str(truncate(mrkdwn(line), limit))
        if not text.strip():
            continue
        if current and len(current) + 1 + len(text) <= limit:
            current = f"{current}\n{text}"
            continue
        if current:
            chunks.append(Mrkdwn(current))
        current = text
    if current:
        chunks.append(Mrkdwn(current))
    return chunks
