"""Feeds people add from Slack (`/episodes add-show`): which URLs may be fetched at all, and
the policy every fetch of one runs under. Pure: no I/O.

A URL a workspace admin typed is not trusted like the config file: it must be http(s), with
a host that is neither ``localhost`` nor a literal non-public address in any spelling
(``127.0.0.1``, ``[::1]``, ``::ffff:127.0.0.1``, ``2130706433``, ``0177.0.0.1``,
``0x7f000001``, ``10.x``, ``192.168.x``, ``169.254.169.254``…) — refused before connecting.
A name that resolves to such an address, and every redirect hop, are refused by
:func:`digests.sources.fetch.fetch` under :func:`policy` (``False``: public addresses only).

Tests serve their feeds on loopback. They reach them through :func:`pretend_public`, a
test-only allowance for one exact host and port, set in the test process; no setting turns
the guard off, and nothing in production calls it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from digests.sources.addresses import is_localhost_name, is_public_ip, literal_ip
from digests.sources.fetch import PrivateOrigin, PrivatePolicy

# Longer than any feed URL seen in the wild, short enough for a button value (2,000).
MAX_URL = 1000

_pretended: set[tuple[str, int]] = set()


@contextmanager
def pretend_public(host: str, port: int) -> Iterator[None]:
    """Test-only: treat ``host:port`` (a test's loopback server) as a public origin."""
    key = (host.lower(), port)
    _pretended.add(key)
    try:
        yield
    finally:
        _pretended.discard(key)


def _origin(url: str) -> tuple[str, int] | None:
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    return (parts.hostname or "").lower(), port


def _pretended_origin(url: str) -> tuple[str, int] | None:
    origin = _origin(url)
    return origin if origin is not None and origin in _pretended else None


def refusal(url: str) -> str | None:
    """Why ``url`` may not be added as a feed (one line, for the reply), or None."""
    if len(url) > MAX_URL:
        return f"longer than {MAX_URL} characters"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return "only http and https feeds can be added"
    try:
        parts.port  # noqa: B018 - raises for a bad port
    except ValueError:
        return "the port is not a number"
    host = parts.hostname or ""
    if not host:
        return "it has no host"
    if parts.username is not None or parts.password is not None:
        return "it carries a user name or password"
    if _pretended_origin(url) is not None:
        return None
    if is_localhost_name(host):
        return "it names this machine (localhost)"
    ip = literal_ip(host)
    if ip is not None and not is_public_ip(ip):
        return f"it names a private address ({ip})"
    return None


def policy(url: str) -> PrivatePolicy:
    """How a fetch of an added feed treats non-public addresses: ``False`` (refused on every
    hop, local files too), or only the one origin a test pretends is public."""
    origin = _pretended_origin(url)
    return PrivateOrigin("net", *origin) if origin is not None else False


__all__ = ["MAX_URL", "policy", "pretend_public", "refusal"]
