"""CDATA sections written as text before libxml2 reads them (``digests.parse.cdata``):
every document reads exactly as it does without the rewrite, refusals included."""

from __future__ import annotations

from pathlib import Path

import pytest

from digests.errors import FeedParseError
from digests.extract import build_episodes
from digests.parse import feeds, parse_bytes
from digests.parse.cdata import cdata_as_text
from tests.benchmarks.bench_parse import make_feed

DATA = Path(__file__).parent / "data"

_DECL = b'<?xml version="1.0" encoding="UTF-8"?>\n'
_ROOT = b'<rss version="2.0"><channel><title>S</title>'
_TAIL = b"</channel></rss>\n"


def _item(body: bytes) -> bytes:
    return b"<item><title>T</title><guid>g1</guid><description>" + body + b"</description></item>"


def _feed(*parts: bytes, prolog: bytes = b"") -> bytes:
    return _DECL + prolog + _ROOT + b"".join(parts) + _TAIL


# Sections in every place a scan could misread, and contents the rewrite must escape.
_CASES = {
    "markup": _feed(_item(b"<![CDATA[<p>PR 12 &amp; <b>bold</b> a < b && c]]>")),
    "entity text": _feed(_item(b"<![CDATA[&lt;p&gt; stays &#38; as written]]>")),
    "crlf": _feed(_item(b"<![CDATA[one\r\ntwo\rthree\n\r\nfour]]>")),
    "bracket end": _feed(_item(b"<![CDATA[ends in a bracket]]]]><![CDATA[>]]>")),
    "split end": _feed(_item(b"<![CDATA[a]]]>]]&gt;")),
    "adjacent": _feed(_item(b"before <![CDATA[<i>x</i>]]><![CDATA[y]]> after")),
    "nested open": _feed(_item(b"<![CDATA[text <![CDATA[ inside ]]> tail")),
    "in comment": _feed(b"<!-- <![CDATA[ -->", _item(b"<![CDATA[<p>x</p>]]>"), b"<!-- ]]> -->"),
    "comment hides item": _feed(b"<!-- <![CDATA[ --> ", _item(b"x"), b" ]]>"),
    "in pi": _feed(b"<?x <![CDATA[ ?>", _item(b"<![CDATA[<p>x</p>]]>"), b"<?y ]]> ?>"),
    "after comment": _feed(_item(b"<!-- c --><![CDATA[<p>x</p>]]>")),
    "in attribute": _feed(b'<item><title x="<![CDATA[y]]>">T</title></item>'),
    "attribute gt": _feed(b'<item><title a=">" x="<![CDATA[y]]>">T</title></item>'),
    "attribute quoted": _feed(b"<item><title a='\"' b=\"'\">T<![CDATA[ <x> ]]></title></item>"),
    "prolog": _feed(_item(b"<![CDATA[x]]>"), prolog=b"<![CDATA[ ]]>"),
    "prolog text": _feed(_item(b"<![CDATA[x]]>"), prolog=b"<![CDATA[x]]>"),
    "prolog after comment": _feed(_item(b"<![CDATA[x]]>"), prolog=b"<!-- c --><![CDATA[x]]>"),
    "no declaration": _feed(_item(b"<![CDATA[<p>x</p>]]>"))[len(_DECL) :],
    "epilog blank": _feed(_item(b"<![CDATA[x]]>")) + b"<![CDATA[ \n ]]>",
    "epilog": _feed(_item(b"<![CDATA[x]]>")) + b"<![CDATA[ y ]]>",
    "doctype": _feed(
        _item(b"<![CDATA[<p>x</p>]]>"),
        prolog=b'<!DOCTYPE rss PUBLIC "-//N//DTD RSS 0.91//EN" "x.dtd">',
    ),
    "internal subset": _feed(
        _item(b"<![CDATA[<p>&e;</p>]]>"), prolog=b'<!DOCTYPE rss [<!ENTITY e "<![CDATA[x]]>">]>'
    ),
    "control char": _feed(_item(b"<![CDATA[bad \x01 char]]>")),
    "bad utf-8": _feed(_item(b"<![CDATA[caf\xe9 <b>x</b>]]>")),
    "latin-1": _feed(_item(b"<![CDATA[caf\xe9 <b>x</b>]]>")).replace(b"UTF-8", b"ISO-8859-1"),
    "unterminated": _feed(_item(b"<![CDATA[never ends")),
    "blank section": _feed(_item(b"x<![CDATA[  ]]>y")),
    "empty section": _feed(_item(b"<![CDATA[]]>")),
    "non-ascii": _feed(_item("<![CDATA[<p>naïve — “quoted” 日本</p>]]>".encode())),
    "bom": b"\xef\xbb\xbf" + _feed(_item(b"<![CDATA[<p>x</p>]]>")),
    "utf-16": _feed(_item(b"<![CDATA[<p>x</p>]]>")).decode().encode("utf-16"),
    "atom": b'<feed xmlns="http://www.w3.org/2005/Atom"><title>S</title><entry><id>e1</id>'
    b'<title>T</title><content type="html"><![CDATA[<p>PR 5</p>]]></content></entry></feed>',
    "end tag attrs": _feed(b"<item><title>T</title x='1'><![CDATA[y]]></item>"),
    "self closing": _feed(b"<item><title>T</title><br/><![CDATA[y]]></item>"),
}


def _read(data: bytes) -> str:
    try:
        parsed = parse_bytes(data, "https://example.org/feed.xml")
    except FeedParseError as err:
        return f"refused: {err}"
    episodes = build_episodes(parsed, "S", "o/r")
    return repr((parsed, [e.__dict__ for e in episodes]))


def _both(data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    rewritten = _read(data)
    with monkeypatch.context() as m:
        m.setattr(feeds, "cdata_as_text", lambda data: None)
        written = _read(data)
    return rewritten, written


@pytest.mark.parametrize("name", sorted(_CASES))
def test_a_document_reads_as_it_does_without_the_rewrite(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    rewritten, written = _both(_CASES[name], monkeypatch)
    assert rewritten == written


@pytest.mark.parametrize(
    "data",
    [make_feed(200, seed=5), *(p.read_bytes() for p in sorted(DATA.iterdir()))],
    ids=["generated", *(p.name for p in sorted(DATA.iterdir()))],
)
def test_feeds_read_as_without_the_rewrite(data: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    rewritten, written = _both(data, monkeypatch)
    assert rewritten == written


def test_a_huge_section_is_refused_as_without_the_rewrite(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Past libxml2's limit on one text node (10 MB without huge_tree) either way.
    data = _feed(_item(b"<![CDATA[" + b"<p>word</p> " * 900_000 + b"]]>"))
    rewritten, written = _both(data, monkeypatch)
    assert rewritten == written
    assert rewritten.startswith("refused")


def test_only_sections_in_element_content_are_rewritten() -> None:
    data = _feed(_item(b"<![CDATA[<p>a & b</p>]]>"))
    assert cdata_as_text(data) == data.replace(
        b"<![CDATA[<p>a & b</p>]]>", b"&lt;p>a &amp; b&lt;/p>"
    )
    for name in ("in attribute", "attribute gt", "internal subset", "latin-1", "utf-16"):
        assert cdata_as_text(_CASES[name]) is None, name
    assert cdata_as_text(_CASES["blank section"]) is None  # whitespace: left as written
    assert cdata_as_text(_feed(_item(b"no sections"))) is None
