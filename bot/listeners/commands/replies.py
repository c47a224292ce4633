"""Small Block Kit pieces for the Slack side's own replies (errors, help, share button).

Everything passed in as ``text`` here is mrkdwn we wrote or already escaped; feed text goes
through ``digests.render.escape`` before it reaches these helpers.
"""

from __future__ import annotations

import hashlib
import json
import re

from bot.listeners.commands.model import CommandError
from bot.messages.home import SHARE_BUTTON, SHARE_GONE, SHARED_BY
from bot.messages.subscriptions import SOMEONE
from bot.messages.usage import (
    EXAMPLES_LABEL,
    HELP_EXAMPLES,
    HELP_FOOTER,
    HELP_START,
    HELP_TITLE,
    UNKNOWN_SUBCOMMAND,
    USAGE,
    USAGE_LABEL,
)
from digests.render import blocks, escape, limits
from digests.render.escape import Mrkdwn
from digests.render.limits import Block, Message

MAX_BLOCKS = limits.BLOCKS_PER_MESSAGE
SHARE_ACTION = "episodes_share"
# Marks a reply that found nothing: there is nothing to share, so it gets no Share button.
EMPTY_BLOCK = "episodes_empty"
# A Slack user id, as the payload gives it: only such a value becomes a mention.
_USER_RE = re.compile(r"[UW][A-Z0-9]{2,20}")


def mention(user_id: str | None) -> str | None:
    """``<@U…>`` for a real user id; None for anything else (never echoed into mrkdwn)."""
    return f"<@{user_id}>" if user_id and _USER_RE.fullmatch(user_id) else None


def who(user_id: str | None) -> str:
    """The author of a change, as the channel is told: a mention, or "Someone"."""
    return mention(user_id) or SOMEONE


def section(text: str) -> Block:
    """A mrkdwn section from text we composed; every outside part must be escaped already."""
    return blocks.section(Mrkdwn(text))


def context(*texts: str) -> Block:
    return blocks.context(Mrkdwn(t) for t in texts)


def divider() -> Block:
    return blocks.divider()


def message(text: str, content: list[Block], *, max_blocks: int = MAX_BLOCKS) -> Message:
    """A message Slack accepts: ``fit`` cuts blocks, text and the fallback to their limits.

    ``text`` (the notification fallback) is composed mrkdwn, like a section's text.
    """
    return limits.fit(Message(text=text, blocks=content), max_blocks=max_blocks)


def nothing(text: str, *more: Block) -> Message:
    """A reply that found nothing (``text`` is composed mrkdwn): it is never shared."""
    return mark_empty(message(text, [section(text), *more]))


def mark_empty(reply: Message) -> Message:
    """``reply``, marked as having nothing worth sharing (via its first block's id)."""
    content = list(reply["blocks"])
    if content:
        content[0] = {**content[0], "block_id": EMPTY_BLOCK}
    return Message(text=reply["text"], blocks=content)


def is_empty(reply: Message) -> bool:
    return any(b.get("block_id") == EMPTY_BLOCK for b in reply["blocks"])


def error_reply(error: CommandError) -> Message:
    """One line of reason, then the usage it concerns; never a stack trace."""
    # Reasons quote the user's own words back, and usage lines contain `<` `>`: escape both.
    reason, usage = escape.mrkdwn(error.reason), escape.mrkdwn(error.usage)
    usage_line = USAGE_LABEL.format(usage=usage)
    return message(f"{reason} {usage_line}", [section(f":warning: {reason}"), context(usage_line)])


def help_reply(unknown: str | None = None) -> Message:
    lead = escape.mrkdwn(UNKNOWN_SUBCOMMAND.format(word=unknown)) + " " if unknown else ""
    lines = "\n".join(f"• {escape.mrkdwn(line)}" for line in USAGE.values())
    examples = " · ".join(escape.mrkdwn(e) for e in HELP_EXAMPLES)
    return message(
        f"{lead}{HELP_TITLE}",
        [
            section(f"{lead}*{HELP_TITLE}*\n{escape.mrkdwn(HELP_START)}"),
            section(lines),
            context(EXAMPLES_LABEL.format(examples=examples)),
            context(HELP_FOOTER),
        ],
    )


def share_gone() -> Message:
    return message(SHARE_GONE, [section(SHARE_GONE)])


def share_value(command_text: str, token: str | None = None) -> str:
    data = {"c": command_text} if token is None else {"c": command_text, "a": token}
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def _share_data(value: str) -> dict[str, object]:
    try:
        data = json.loads(value)
    except (ValueError, TypeError):
        return {}
    return data if isinstance(data, dict) else {}


def read_share_value(value: str) -> str | None:
    """The command text a Share button carries, or None when the value is not ours."""
    text = _share_data(value).get("c")
    return text if isinstance(text, str) else None


def read_share_token(value: str) -> str | None:
    """The token of the answer the person was shown (``Deps.answers``), if the value has one."""
    token = _share_data(value).get("a")
    return token if isinstance(token, str) else None


def answer_token(reply: Message) -> str:
    """Names an answer by its content: the same answer shown twice is one entry."""
    data = json.dumps(reply, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(data).hexdigest()[:24]


def with_share(reply: Message, command_text: str, token: str | None = None) -> Message:
    """The reply plus a "Share in channel" button, still within the 50-block limit.

    A command too long to fit a button's value (2,000 characters) gets no button: a cut
    value would re-run some other command. Nor does a reply that found nothing.
    """
    value = share_value(command_text, token)
    if len(value) > limits.BUTTON_VALUE or is_empty(reply):
        return reply
    button = blocks.actions(
        [blocks.button(SHARE_BUTTON, SHARE_ACTION, value)], block_id=SHARE_ACTION
    )
    kept = list(reply["blocks"])[: MAX_BLOCKS - 1]
    return Message(text=reply["text"], blocks=[*kept, button])


def shared_copy(reply: Message, user_id: str) -> Message:
    """What goes in the channel: the same blocks, minus our button, plus who shared it."""
    kept = [b for b in reply["blocks"] if not (b.get("type") == "actions" and _has_share(b))]
    if mention(user_id) is not None:
        kept = [*kept[: MAX_BLOCKS - 1], context(SHARED_BY.format(user=user_id))]
    return Message(text=reply["text"], blocks=kept)


def _has_share(block: Block) -> bool:
    return any(e.get("action_id") == SHARE_ACTION for e in block.get("elements", []))
