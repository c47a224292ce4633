"""Validly signed payloads of a shape Slack never sends: one warning line, not a traceback.

Bolt reads a payload's fields as Slack shapes them (``actions`` a list of objects with a
string ``action_id``, ``event`` an object, ``team`` an object…) and fails inside its
matching on anything else; its default handler logs each failure with a traceback. The
reply was polite already (``bot.server.asgi``); :func:`quiet_odd_shapes`, the app's error
handler, logs such a failure as one WARNING line naming what was odd, and every other
failure with its traceback, as Bolt did.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

# Fields Slack always sends as a string (or leaves out, or null).
_STRINGS = (
    "type", "token", "callback_id", "trigger_id", "team_id", "api_app_id", "enterprise_id",
    "command", "text", "user_id", "channel_id", "response_url", "event_id", "action_ts",
)  # fmt: skip
# Fields Slack always sends as an object (or leaves out, or null).
_OBJECTS = ("team", "user", "channel", "enterprise", "view", "event", "container", "message")
# Fields of an action, of an event and of a view that Bolt's matchers read as strings.
_INNER_STRINGS = ("type", "action_id", "block_id", "callback_id", "subtype", "channel", "id")


def odd_shape(body: object) -> str | None:
    """What in ``body`` Slack would never send, or None when its shape is Slack's."""
    if not isinstance(body, dict):
        return f"the payload is {type(body).__name__}, not an object"
    for key in _STRINGS:
        if body.get(key) is not None and not isinstance(body[key], str):
            return f"{key} is {type(body[key]).__name__}, not a string"
    for key in _OBJECTS:
        if body.get(key) is not None and not isinstance(body[key], dict):
            return f"{key} is {type(body[key]).__name__}, not an object"
    for key in ("event", "view"):
        odd = _odd_fields(body.get(key) or {}, key)
        if odd:
            return odd
    actions = body.get("actions")
    if actions is None:
        return None
    if not isinstance(actions, list):
        return f"actions is {type(actions).__name__}, not a list"
    for action in actions:
        if not isinstance(action, dict):
            return f"an action is {type(action).__name__}, not an object"
        odd = _odd_fields(action, "an action's")
        if odd:
            return odd
    return None


def _odd_fields(obj: dict[str, Any], what: str) -> str | None:
    for key in _INNER_STRINGS:
        value = obj.get(key)
        if value is not None and not isinstance(value, str):
            return f"{what} {key} is {type(value).__name__}, not a string"
    return None


async def quiet_odd_shapes(error: Exception, body: Any) -> None:
    """Bolt's error handler (middleware and listeners): an odd payload's failure in one
    line; any other failure with its traceback."""
    odd = odd_shape(body)
    if odd is None:
        log.error("Slack request failed: %s", error, exc_info=error)
        return
    log.warning("odd signed request (%s): %s: %s", odd, type(error).__name__, error)
