"""Log lines: text by default, one JSON object a line with ``LOG_FORMAT=json``; never a secret.

JSON through python-json-logger (its ``JsonFormatter`` is a ``logging.Formatter``, so the
lines of Bolt, uvicorn and APScheduler come out as JSON too, with no change to any logging
call). Each line has ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message`` and, where
known, ``show``, ``team``, ``channel`` and ``request_id`` (:func:`bind`, kept in a context
variable, so tasks and threads started for a request or a poll carry them), plus anything
passed in ``extra``.

Both formats pass through :class:`Redacting`: the configured secrets (tokens, the signing
secret, the client secret) and anything shaped like a Slack or GitHub token are replaced
in the finished line, whichever field they were in (message, arguments, a traceback,
``extra``). And httpx, which logs each request at INFO (``-v``) with its full URL, has
its URLs redacted by :class:`RedactedRequestLine` (a feed's URL may hold a user and
password, or a token in its query): no user-info, no query.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Iterable, Iterator
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import httpx
from pythonjsonlogger.json import JsonFormatter

from digests.redact import redact_url

if TYPE_CHECKING:
    from config.settings import Settings

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
CONTEXT_FIELDS = ("show", "team", "channel", "request_id")
MASK = "[redacted]"

# Slack tokens (bot, user, app-level, refresh, config) and GitHub tokens, wherever they occur.
TOKEN_PATTERN = re.compile(
    r"\b(?:xox[abeposr]|xapp|xoxe\.xox[bp])-[A-Za-z0-9-]{4,}"
    r"|\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"
)
# Secrets shorter than this are not masked (they would mask ordinary words).
_MIN_SECRET = 6

# What the current request or job is about; set with bind(), read by ContextFilter.
_CONTEXT: ContextVar[tuple[tuple[str, str], ...]] = ContextVar("log_context", default=())


def push(**fields: str | None) -> Token[tuple[tuple[str, str], ...]]:
    """Log lines carry ``fields`` (None: left out) until :func:`pop` with the token; tasks
    started meanwhile keep them. The cheap form of :func:`bind`, for every request."""
    known = dict(_CONTEXT.get())
    known.update({k: v for k, v in fields.items() if v})
    return _CONTEXT.set(tuple(known.items()))


def pop(token: Token[tuple[tuple[str, str], ...]]) -> None:
    _CONTEXT.reset(token)


@contextlib.contextmanager
def bind(**fields: str | None) -> Iterator[None]:
    """Within the block (and tasks it starts), log lines carry ``fields`` (None: left out)."""
    token = push(**fields)
    try:
        yield
    finally:
        pop(token)


def enter(**fields: str | None) -> None:
    """:func:`bind` for the rest of the current task (one of its own, as each channel's
    fan-out is): nothing to reset, the task's context ends with it."""
    known = dict(_CONTEXT.get())
    known.update({k: v for k, v in fields.items() if v})
    _CONTEXT.set(tuple(known.items()))


class ContextFilter(logging.Filter):
    """Puts the bound fields on each record (as ``extra`` would)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in _CONTEXT.get():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True


class JsonLines(JsonFormatter):
    def __init__(self) -> None:
        super().__init__(
            "{asctime}{levelname}{name}{message}",
            style="{",
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
        )

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


class Redacting(logging.Formatter):
    """``inner``'s line with every secret masked (see the module docstring)."""

    def __init__(self, inner: logging.Formatter, secrets: Iterable[str | None] = ()) -> None:
        super().__init__()
        self.inner = inner
        found: set[str] = set()
        for secret in secrets:
            if secret and len(secret) >= _MIN_SECRET:
                # As written, and as JSON escapes it inside a string.
                found |= {secret, json.dumps(secret)[1:-1]}
        self.secrets = sorted(found, key=len, reverse=True)

    def format(self, record: logging.LogRecord) -> str:
        line = self.inner.format(record)
        for secret in self.secrets:
            if secret in line:
                line = line.replace(secret, MASK)
        return TOKEN_PATTERN.sub(MASK, line)


def settings_secrets(settings: Settings) -> list[str | None]:
    return [
        settings.slack_bot_token,
        settings.slack_signing_secret,
        settings.slack_app_token,
        settings.slack_client_secret,
        settings.github_token,
    ]


def formatter(log_format: str, secrets: Iterable[str | None] = ()) -> logging.Formatter:
    inner: logging.Formatter = (
        JsonLines() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
    )
    return Redacting(inner, secrets)


def configure(settings: Settings, handlers: Iterable[logging.Handler]) -> None:
    """``handlers`` format as ``settings.log_format`` says, redacted, with the bound
    context on each record."""
    chosen = formatter(settings.log_format, settings_secrets(settings))
    for handler in handlers:
        handler.setFormatter(chosen)
        if not any(isinstance(f, ContextFilter) for f in handler.filters):
            handler.addFilter(ContextFilter())


# Libraries that log request URLs at INFO or above.
_URL_LOGGERS = ("httpx",)


class RedactedRequestLine(logging.Filter):
    """Every argument of a record that is a URL, redacted; the record still goes out."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and record.args:
            record.args = tuple(_redacted(arg) for arg in record.args)
        return True


def _redacted(arg: object) -> object:
    if isinstance(arg, httpx.URL):
        return redact_url(str(arg))
    return redact_url(arg) if isinstance(arg, str) and "://" in arg else arg


def redact_library_logs() -> None:
    """Install :class:`RedactedRequestLine` once on each library logger that writes URLs."""
    for name in _URL_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactedRequestLine) for f in logger.filters):
            logger.addFilter(RedactedRequestLine())


def context_of(body: dict[str, Any]) -> dict[str, str | None]:
    """The team and channel a Slack request names (slash command, event or payload)."""
    team = body.get("team_id") or _nested(body, "team", "id")
    channel = body.get("channel_id") or _nested(body, "channel", "id")
    event = body.get("event")
    if not channel and isinstance(event, dict):
        channel = event.get("channel") if isinstance(event.get("channel"), str) else None
    return {"team": _str(team), "channel": _str(channel)}


def _nested(body: dict[str, Any], outer: str, inner: str) -> Any:
    value = body.get(outer)
    return value.get(inner) if isinstance(value, dict) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
