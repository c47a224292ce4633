"""LOG_FORMAT: text or JSON lines, the request's context on each line, no secret anywhere."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator

import pytest

from bot import logs
from config.settings import Settings

BOT_TOKEN = "xoxb-1111-2222-configuredBotToken"
SIGNING = 'signing-secret-with-a-"quote"-and-\\backslash'
APP_TOKEN = "xapp-1-A0-configuredAppToken"
CLIENT_SECRET = "client-secret-abcdef123456"
GITHUB = "ghp_configuredGithubToken0123456789"
SECRETS = (BOT_TOKEN, SIGNING, APP_TOKEN, CLIENT_SECRET, GITHUB)
# Not configured, but shaped like tokens: masked all the same.
STRAYS = ("xoxb-9999-8888-someoneElsesToken", "xoxp-7-userTokenValue", "ghs_" + "a" * 36)
LEVELS = (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL)


def _settings(log_format: str) -> Settings:
    return Settings(
        slack_bot_token=BOT_TOKEN,
        slack_signing_secret=SIGNING,
        slack_app_token=APP_TOKEN,
        slack_client_secret=CLIENT_SECRET,
        github_token=GITHUB,
        log_format=log_format,  # type: ignore[arg-type]
    )


@pytest.fixture
def capture() -> Iterator[tuple[logging.Logger, io.StringIO, logging.Handler]]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("tests.logs")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    yield logger, stream, handler
    logger.removeHandler(handler)
    logger.propagate = True


def _log_everywhere(logger: logging.Logger, level: int, secret: str) -> None:
    """``secret`` in the message, an argument, ``extra`` and a traceback, at ``level``."""
    try:
        raise RuntimeError(f"failed with {secret}")
    except RuntimeError:
        logger.log(
            level,
            f"message {secret} and %s",
            f"arg {secret}",
            exc_info=True,
            extra={"detail": {"nested": secret}, "show": "PyTorch"},
        )


@pytest.mark.parametrize("log_format", ["json", "text"])
@pytest.mark.parametrize("level", LEVELS)
def test_no_secret_in_any_field_at_any_level(
    capture: tuple[logging.Logger, io.StringIO, logging.Handler], log_format: str, level: int
) -> None:
    logger, stream, handler = capture
    logs.configure(_settings(log_format), [handler])
    for secret in (*SECRETS, *STRAYS):
        _log_everywhere(logger, level, secret)
    out = stream.getvalue()
    # Message, argument and traceback; JSON also shows the ``extra``.
    places = 4 if log_format == "json" else 3
    assert out.count(logs.MASK) == places * len(SECRETS + STRAYS)
    for secret in (*SECRETS, *STRAYS):
        assert secret not in out
        assert json.dumps(secret)[1:-1] not in out  # nor as JSON escapes it
    if log_format == "json":
        lines = [json.loads(line) for line in out.splitlines()]
        assert len(lines) == len(SECRETS + STRAYS)
        first = lines[0]
        assert first["level"] == logging.getLevelName(level)
        assert first["logger"] == "tests.logs"
        assert first["time"].endswith("+00:00")
        assert first["show"] == "PyTorch" and "exc_info" in first


def test_json_lines_carry_the_bound_context_into_tasks(
    capture: tuple[logging.Logger, io.StringIO, logging.Handler],
) -> None:
    logger, stream, handler = capture
    logs.configure(_settings("json"), [handler])

    async def work() -> None:
        logger.warning("inside")

    async def main() -> None:
        with logs.bind(request_id="abc123def456", team="T0A", channel="C0B", show=None):
            await asyncio.create_task(work())
        logger.warning("outside")

    asyncio.run(main())
    inside, outside = (json.loads(line) for line in stream.getvalue().splitlines())
    assert inside["request_id"] == "abc123def456"
    assert (inside["team"], inside["channel"]) == ("T0A", "C0B")
    assert "show" not in inside
    assert "request_id" not in outside


def test_text_is_the_default(
    capture: tuple[logging.Logger, io.StringIO, logging.Handler],
) -> None:
    logger, stream, handler = capture
    logs.configure(Settings(), [handler])
    logger.warning("plain %s", "words")
    line = stream.getvalue().strip()
    assert line.endswith("WARNING tests.logs: plain words")


def test_an_unknown_log_format_is_refused() -> None:
    with pytest.raises(ValueError, match="log_format"):
        Settings(log_format="yaml")  # type: ignore[arg-type]
