"""Feed locations as they may be shown: errors, notices, logs and links never carry secrets.

A feed URL in the configuration may hold credentials (``https://user:pw@host/feed``) or a
token in its query (``?auth=…``, ``?key=…``). Only the fetch itself uses the full URL;
whatever is shown to people gets :func:`redact_url`.
"""

from __future__ import annotations

__all__ = ["redact_text", "redact_url", "without_userinfo"]

# Short pieces ("a", "1") are too likely to occur in the text for other reasons; a secret
# that short protects nothing anyway.
_MIN_SECRET = 4


def _split(location: str) -> tuple[str, str, str, str] | None:
    """(scheme with "://", userinfo, host[:port], path) and the rest after ``?``/``#``
    — or None for a plain path. Split by hand, not with urlsplit, so that no URL (bad
    port, broken IPv6 literal) can make redaction fail."""
    at = location.find("://")
    if at < 0:
        return None
    scheme, rest = location[: at + 3], location[at + 3 :]
    end = len(rest)
    for sep in "/?#":
        i = rest.find(sep)
        if 0 <= i < end:
            end = i
    authority, tail = rest[:end], rest[end:]
    userinfo, _, hostport = authority.rpartition("@")
    return scheme, userinfo, hostport, tail


def redact_url(location: str) -> str:
    """``location`` without userinfo (user and password), query or fragment.

    ``http://user:pw@host:9/feed.xml?auth=T`` → ``http://host:9/feed.xml?…``. Plain paths
    are returned as they are.
    """
    parts = _split(location)
    if parts is None:
        return location
    scheme, _, hostport, tail = parts
    cut = min((i for i in (tail.find("?"), tail.find("#")) if i >= 0), default=-1)
    if cut >= 0:
        tail = tail[:cut] + ("?…" if tail[cut] == "?" else "#…")
    return scheme + hostport + tail


def without_userinfo(location: str) -> str:
    """``location`` without user and password: for a link that is shown and followed (its
    query may be what names the page, so it stays)."""
    parts = _split(location)
    if parts is None:
        return location
    scheme, _, hostport, tail = parts
    return scheme + hostport + tail


def _secrets(location: str) -> list[str]:
    parts = _split(location)
    if parts is None:
        return []
    _, userinfo, _, tail = parts
    found = [userinfo, userinfo.partition(":")[2]]
    cut = min((i for i in (tail.find("?"), tail.find("#")) if i >= 0), default=-1)
    if cut >= 0:
        query = tail[cut + 1 :]
        found.append(query)
        # Each parameter's value too: a library may quote the query re-ordered or decoded.
        for pair in query.replace("#", "&").split("&"):
            found.append(pair.partition("=")[2])
    return sorted({s for s in found if len(s) >= _MIN_SECRET}, key=len, reverse=True)


def redact_text(text: str, location: str) -> str:
    """``text`` (an error reason, say) with ``location`` and its secrets redacted, for
    messages that quote the URL they were given (httpx's errors do, now and then)."""
    if location in text:
        text = text.replace(location, redact_url(location))
    for secret in _secrets(location):
        if secret in text:
            text = text.replace(secret, "…")
    return text
