"""One error tree for everything digestbot can get wrong.

Every error displays itself: ``str(err)`` is one line a user can act on (like click's
``ClickException``), and the CLI prints exactly that with exit code 2.
"""

from __future__ import annotations

from digests.redact import redact_text, redact_url


class DigestError(Exception):
    """Base of every error digestbot raises on purpose."""

    exit_code = 2

    def format_message(self) -> str:
        return " ".join(str(self).split())


class ConfigError(DigestError):
    """The configuration file or environment is wrong."""


class FetchError(DigestError):
    """A feed or page could not be fetched.

    The message reaches Slack, status replies and logs, so ``url`` is kept redacted (no
    credentials, query or fragment) and so is any copy of it or its secrets in ``reason``.
    """

    def __init__(self, url: str, reason: str) -> None:
        self.url = redact_url(url)
        self.reason = redact_text(reason, url)
        super().__init__(f"cannot fetch {self.url}: {self.reason}")


class FeedHTTPError(FetchError):
    """The server answered with an error ``status`` (404, 410, 500…): a caller can tell a
    feed that is gone (404/410) from one having a bad day (5xx)."""

    def __init__(self, url: str, reason: str, status: int) -> None:
        super().__init__(url, reason)
        self.status = status


class FeedUnavailable(FeedHTTPError):
    """The server said "later" (429 or 503); ``retry_after`` is how long, in seconds, if given."""

    def __init__(
        self, url: str, reason: str, retry_after: float | None = None, *, status: int = 503
    ) -> None:
        super().__init__(url, reason, status)
        self.retry_after = retry_after


class FeedParseError(DigestError):
    """Fetched bytes are not a feed or episode page we can read."""

    def __init__(self, source: str, reason: str) -> None:
        # Redacted like FetchError's URL: the source is the feed URL, secrets and all.
        self.source = redact_url(source)
        self.reason = redact_text(reason, source)
        super().__init__(f"cannot parse {self.source}: {self.reason}")


class PortInUse(ConfigError):
    """The HTTP port is taken by another process."""

    def __init__(self, port: int) -> None:
        super().__init__(f"port {port} is already in use (set PORT)")
        self.port = port


class EpisodeNotFound(DigestError):
    """A requested episode is not in the source or the store."""


class StoreError(DigestError):
    """The database is unreachable or refused an operation."""


class StoreTimeout(StoreError):
    """The database did not answer in time (connect, statement, lock or busy timeout)."""


class SlackError(DigestError):
    """Slack answered with an error we cannot retry away."""

    def __init__(self, method: str, error: str) -> None:
        super().__init__(f"Slack {method} failed: {error}")
        self.method = method
        self.error = error
