"""Links as a reader follows them: relative references resolved, script schemes refused.

A feed's relative link (``<link>blog/post/1</link>``, an enclosure ``url="ep1.mp3"``) is
relative to the document it came from, or to the ``xml:base`` in force where it sits
(XML Base; nested bases resolve against their ancestors', which lxml's ``.base`` does).
feedparser and lemon24/reader resolve the same way: ``urljoin`` of the reference onto
the innermost base, the feed's own URL last.
"""

from __future__ import annotations

from urllib.parse import urljoin, urlsplit

from digests.redact import without_userinfo

__all__ = ["feed_base", "resolve"]

# Schemes that run or embed content instead of naming a page: never a link we keep.
_REFUSED = frozenset({"javascript", "data", "vbscript"})
_ABSOLUTE = ("http://", "https://")


def feed_base(source: str) -> str | None:
    """The base a feed's relative links resolve against: its URL without credentials,
    query or fragment (a ``?auth=`` token must not ride along into a posted link). None
    for a local file or a name: a ``file:`` link means nothing in Slack."""
    if not source.startswith(_ABSOLUTE):
        return None
    bare = without_userinfo(source)
    cut = min((i for i in (bare.find("?"), bare.find("#")) if i >= 0), default=-1)
    return bare[:cut] if cut >= 0 else bare


def resolve(href: str, base: str | None, xml_base: str | None = None) -> str | None:
    """``href`` made absolute against ``xml_base`` (itself resolved against ``base``),
    else ``base``; None for an empty or a script/data link. A reference nothing can
    resolve stays as it is (as before: a file's relative link)."""
    href = href.strip()
    if not href:
        return None
    if href.startswith(_ABSOLUTE):
        return href  # the common case: no parsing at all
    try:
        scheme = urlsplit(href).scheme.lower()
    except ValueError:
        return None
    if scheme in _REFUSED:
        return None
    if scheme:
        return href
    joined = href
    try:
        if xml_base:
            inner = urljoin(base, xml_base) if base else xml_base
            if urlsplit(inner).scheme.lower() in _REFUSED:
                inner = base or ""
            joined = urljoin(inner, href) if inner else href
        if base and not urlsplit(joined).scheme:
            joined = urljoin(base, joined)
        refused = urlsplit(joined).scheme.lower() in _REFUSED
    except ValueError:
        return None  # a base with a broken IPv6 literal, say: no link rather than a wrong one
    return None if refused else joined
