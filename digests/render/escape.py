"""Slack mrkdwn escaping, safe links and entity-aware truncation.

Feed text is hostile: it must never ping ``<!channel>``, mention users or forge links. Slack's
formatting has exactly three control characters (``&``, ``<``, ``>``), so escaping those is
complete; ``Mrkdwn`` marks text that is already escaped (or built by us) so it is not
escaped twice.
"""

from __future__ import annotations

import re
from typing import Any, Self
from urllib.parse import urlsplit

from markupsafe import Markup

ELLIPSIS = "…"

_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_ESCAPE_RE = re.compile(r"[&<>]")
# A label's `|` would end the link label early in some clients; a lookalike keeps it readable.
_PIPE = "¦"
# Unicode's format characters (category Cf): invisible, yet they change what text shows —
# bidi overrides and isolates make it read backwards, RLM/ALM reorder it, zero-width spaces
# and joiners, word joiners, the BOM and tag characters hide inside words, a soft hyphen
# appears only at a line break. The ranges are Unicode 15.1's (tests/test_render_escape.py
# checks them against the running Python's table).
_INVISIBLE = (
    r"\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f"
    r"\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    r"\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    r"\U000e0020-\U000e007f"
)
# C0 controls (but tab, newline), DEL and the format characters.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f" + _INVISIBLE + "]")
_CR_RE = re.compile(r"\r\n?")
# Any character escaping changes (the three, CR, the controls): most text has none, and one
# search then replaces three substitutions (a recap escapes a few thousand values).
_UNSAFE_RE = re.compile(r"[&<>\r\x00-\x08\x0b\x0c\x0e-\x1f\x7f" + _INVISIBLE + "]")
# The same for text with no format character (ASCII, or printable: Cf never is), which is
# most text: a class of ranges past Latin-1 costs the search three times as much.
_UNSAFE_PLAIN_RE = re.compile(r"[&<>\r\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_WS_RE = re.compile(r"\s+")
# Whitespace that collapsing changes: any but a space, or spaces in a row.
_NOT_ONE_SPACE_RE = re.compile(r"[^\S ]| {2}")
# What may not sit inside ``<…|…>``: a delimiter, a quote, whitespace or a control (one
# search; a recap checks a URL per episode line).
_URL_BREAKER_RE = re.compile(r"[|<>\"'`\s\x00-\x08\x0b\x0c\x0e-\x1f\x7f" + _INVISIBLE + "]")
_URL_BREAKER_ASCII_RE = re.compile(r"[|<>\"'`\s\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# An http(s) URL with a plain host (ASCII letters, digits, dots, hyphens; maybe a port):
# urlsplit would find its scheme and host, so it is not asked (a recap checks a URL per line).
_PLAIN_URL_RE = re.compile(r"https?://[A-Za-z0-9.-]+(?::[0-9]*)?(?:[/?#]|\Z)", re.I | re.A)
# The atoms of escaped mrkdwn that a cut must never split: entities and our own <…> links.
_ATOM_RE = re.compile(r"&(?:amp|lt|gt);|<[^<>]*>")
# Never `;`: it ends an entity.
_TRAILING_JUNK = " \t\n,:-–—(/"


class Mrkdwn(Markup):
    """A string that is valid, safe mrkdwn: templates and builders pass it through untouched.

    ``markupsafe.Markup`` with Slack's escaping instead of HTML's (which would turn ``"`` into
    ``&#34;``): concatenation, ``join``, ``%`` and ``format`` escape the plain parts, so
    safety survives them, and Jinja treats it as safe output.
    """

    __slots__ = ()

    def __new__(cls, object: Any = "", encoding: str | None = None, errors: str = "strict") -> Self:
        # Ours are made from plain strings thousands of times a recap: no ``__html__`` to
        # look for, nothing to decode.
        if type(object) is str:
            return str.__new__(cls, object)
        return super().__new__(cls, object, encoding, errors)

    @classmethod
    def escape(cls, s: Any, /) -> Self:
        if hasattr(s, "__html__"):
            return cls(s.__html__())
        raw = str(s)
        visible = raw.isascii() or raw.isprintable()
        if (_UNSAFE_PLAIN_RE if visible else _UNSAFE_RE).search(raw) is None:
            return cls(raw)
        raw = _CONTROL_RE.sub("", _CR_RE.sub("\n", raw))
        return cls(_ESCAPE_RE.sub(lambda m: _ESCAPES[m.group()], raw))

    def unescape(self) -> str:
        return unescape(str(self))

    def __repr__(self) -> str:
        return f"Mrkdwn({str.__repr__(self)})"


def mrkdwn(text: object) -> Mrkdwn:
    """Escape ``&``, ``<`` and ``>`` (and only those); ``Mrkdwn`` and ``None`` pass through.

    Anything with ``__html__`` (a Jinja macro's output in our environment) counts as already
    escaped: our templates only ever produce mrkdwn-escaped text.
    """
    if isinstance(text, Mrkdwn):
        return text
    if text is None:
        return Mrkdwn("")
    return Mrkdwn.escape(text)


def unescape(text: str) -> str:
    """Undo ``mrkdwn()``; ``&amp;`` last so ``&amp;lt;`` comes back as ``&lt;``."""
    # str() first: Markup.replace would escape its own arguments.
    return str(text).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def safe_url(url: str | None) -> str | None:
    """The URL if it may sit inside ``<…|…>``: http(s), a host, no delimiter or space."""
    if not url:
        return None
    url = url.strip()
    if _URL_BREAKER_RE.search(url) if not url.isascii() else _URL_BREAKER_ASCII_RE.search(url):
        return None
    if _PLAIN_URL_RE.match(url):
        return url if len(url) <= 3000 else None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    if len(url) > 3000:
        return None
    return url


def link(url: str | None, label: object) -> Mrkdwn:
    """``<url|label>`` with the label escaped; an unusable URL yields just the label.

    ``&`` in the URL is escaped too: Slack decodes entities inside the angle brackets.
    """
    text = Mrkdwn(str(mrkdwn(oneline(label))).replace("|", _PIPE))
    checked = safe_url(url)
    if checked is None:
        return text
    target = checked.replace("&", "&amp;")
    if not text:
        return Mrkdwn(f"<{target}>")
    return Mrkdwn(f"<{target}|{text}>")


def oneline(text: object) -> str:
    """Collapse every run of whitespace (newlines included) to one space."""
    if text is None:
        return ""
    if hasattr(text, "__html__"):
        return Mrkdwn(_collapse(str(text.__html__())))
    return _collapse(str(text))


def _collapse(raw: str) -> str:
    # Most text has only single spaces: one search, and no new string to build.
    if _NOT_ONE_SPACE_RE.search(raw) is None:
        return raw.strip(" ")
    return _WS_RE.sub(" ", raw).strip()


def plain(text: object) -> str:
    """Text for a ``plain_text`` object: Slack shows it literally, so no escaping — but one
    line, no control characters, and already-escaped ``Mrkdwn`` is turned back into text."""
    if text is None:
        return ""
    raw = unescape(str(text.__html__())) if hasattr(text, "__html__") else str(text)
    return _WS_RE.sub(" ", _CONTROL_RE.sub("", raw)).strip()


def truncate(text: str, limit: int) -> str:
    """Cut ``text`` to at most ``limit`` characters at a word boundary, ending with ``…``.

    For ``Mrkdwn`` input the escaped form is what is counted and cut, and an entity
    (``&amp;``) or a link (``<url|label>``) is never split: it stays whole or goes. The result
    has the type of the input, so escaped text stays ``Mrkdwn``.
    """
    if limit < 1:
        raise ValueError("limit must be at least 1")
    if len(text) <= limit:
        return text
    safe = hasattr(text, "__html__")
    budget = limit - len(ELLIPSIS)
    cut = _cut_point(str(text), budget, atomic=safe)
    head = str.__getitem__(text, slice(0, cut)).rstrip(_TRAILING_JUNK)
    result = head + ELLIPSIS if head else ELLIPSIS
    return Mrkdwn(result) if safe else result


def _cut_point(text: str, budget: int, *, atomic: bool) -> int:
    """Where to cut so ``text[:cut]`` fits ``budget``: the last space, unless that wastes over
    half the room (one very long word), then a hard cut — never inside an atom when
    ``atomic``."""
    if budget <= 0:
        return 0
    blocked = bytearray(budget + 1)
    if atomic:
        for m in _ATOM_RE.finditer(text):
            if m.start() >= budget:
                break
            for pos in range(m.start() + 1, min(m.end(), budget + 1)):
                blocked[pos] = 1
    space = -1
    for pos in range(budget, 0, -1):
        if text[pos].isspace() and not blocked[pos]:
            space = pos
            break
    if space > budget // 2:
        return space
    hard = budget
    while hard > 0 and blocked[hard]:
        hard -= 1
    return max(hard, space, 0)


_LINK_RE = re.compile(r"<([^<>|]*)(?:\|([^<>]*))?>")
# What Slack never formats inside: our links and `code`. Kept aside while emphasis goes.
_OPAQUE_RE = re.compile(r"<[^<>]*>|`[^`\n]+`")
_OPAQUE_TOKEN_RE = re.compile(r"\x00(\d+)\x00")


# Emphasis as Slack reads it: a marker after a space, an opening bracket or quote (never
# inside a word, a URL or a path: ``2*3*4``, ``snake_case``, ``/a_b_/``), text that neither
# starts nor ends with a space, and a closing marker before a space or punctuation. The
# other marker may sit next to it (``*_both_*``); the same one may not (``__init__``).
def _emphasis_re(marker: str, other: str) -> re.Pattern[str]:
    m, o = re.escape(marker), re.escape(other)
    before = rf"""(?<![^\s(\[{{"'‘“{o}])"""
    after = rf"""(?![^\s.,;:!?)\]}}"'’”…{o}])"""
    return re.compile(rf"{before}{m}(?=[^\s{m}])(.*?[^\s{m}]){m}{after}")


_EMPHASIS_RES = (_emphasis_re("*", "_"), _emphasis_re("_", "*"))


def strip_emphasis(text: str) -> str:
    """``*bold*`` and ``_italic_`` markers removed wherever Slack would read them as such;
    asterisks and underscores inside words, URLs, links and ``code`` stay."""
    kept: list[str] = []

    def aside(m: re.Match[str]) -> str:
        kept.append(m.group())
        return f"\x00{len(kept) - 1}\x00"

    # NUL never reaches Slack (escaping drops it), so it cannot clash with our tokens.
    out = _OPAQUE_RE.sub(aside, text.replace("\x00", ""))
    for pattern in _EMPHASIS_RES:
        # Until nothing changes: ``*_both_*`` is bold around italic.
        while True:
            stripped = pattern.sub(r"\1", out)
            if stripped == out:
                break
            out = stripped
    return _OPAQUE_TOKEN_RE.sub(lambda m: kept[int(m.group(1))], out)


def to_plain(text: str) -> str:
    """Escaped mrkdwn as readable plain text: emphasis markers dropped,
    ``<url|label>`` → ``label (url)``."""

    def repl(m: re.Match[str]) -> str:
        url, label = m.group(1), m.group(2)
        if not label or label == url:
            return url
        return f"{label} ({url})"

    return unescape(_LINK_RE.sub(repl, strip_emphasis(str(text))))
