"""HTML → text: the tree-free fast path must agree with lxml.html on the markup it accepts."""

from __future__ import annotations

import random
import re
from collections.abc import Callable

import pytest
from lxml import etree

from digests.parse import text as t
from tests.benchmarks.bench_parse import show_notes

SIMPLE = [
    "<p>One.</p><p>Two.</p>",
    "<p>Hello <b>bold</b> and <em>em</em> &amp; <a href='/x'>link</a>.</p>",
    "Plain start<br>next line<br/><br />after blank",
    "<ul><li>first</li><li>second <code>x()</code></li></ul><p>after</p>",
    "<ol>\n  <li>one</li>\n  <li>two</li>\n</ol>",
    "<h2>Heading</h2>text after heading<blockquote>quoted</blockquote>",
    '<P CLASS="x">Upper-case tags</P><DIV>and divs</DIV>',
    "<p>Entities: &lt;tag&gt; &quot;q&quot; &#8230; &eacute;</p>",
    "<div><div><p>nested</p></div>tail</div>",
    "text with no tags at all & an ampersand",
    "<p>  lots   of\n\n   whitespace  </p>",
    "<span>inline</span><span>s</span> glued",
    "<p>Unclosed paragraph<p>next one",
    "<hr>ruled<hr/>",
]


@pytest.mark.parametrize("markup", SIMPLE)
def test_fast_path_matches_lxml(markup: str) -> None:
    fast = t._simple_html_to_text(markup)
    assert fast is not None, "this markup should take the fast path"
    assert fast == t._lxml_html_to_text(markup)


@pytest.mark.parametrize(
    "markup",
    [
        "<script>alert(1)</script>Visible",
        "<!-- comment -->text",
        "<table><tr><td>cell</td></tr></table>",
        "<p title='a>b'>attribute with a bracket</p>",
        '<a href="https://github.com/o/r/pull/1">#1</a>',
        "<img src=x onerror=alert(1)>after",
        "a <unknown>tag</unknown>",
        "<p>never closed <",
    ],
)
def test_other_markup_goes_to_lxml(markup: str) -> None:
    assert t._simple_html_to_text(markup) is None


@pytest.mark.parametrize(
    ("markup", "expected"),
    [
        ("<p>One.</p><p>Two.</p>", "One.\n\nTwo."),
        ("<ul><li>a</li><li>b</li></ul>", "- a\n\n- b"),
        ("<script>alert(1)</script><style>p{}</style>Visible", "Visible"),
        ("<!-- hidden -->shown", "shown"),
        ("<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>", "ab\n\nc"),
        ("<img src=x onerror=alert(1)>after", "after"),
        (
            '<a href="https://github.com/o/r/pull/1">#1</a> fixes',
            "#1 (https://github.com/o/r/pull/1) fixes",
        ),
        (
            '<a href="https://github.com/o/r/pull/1">https://github.com/o/r/pull/1</a>',
            "https://github.com/o/r/pull/1",
        ),
        ("<p>never closed <", "never closed <"),
        ("<noscript>no</noscript><template>t</template>yes", "yes"),
        ("", ""),
        ("   ", ""),
        ("<p></p>", ""),
    ],
)
def test_html_to_text(markup: str, expected: str) -> None:
    assert t.html_to_text(markup) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, ""),
        ("", ""),
        ("plain  text", "plain text"),
        ("para one\n\npara two", "para one\n\npara two"),
        ("&lt;p&gt;escaped&lt;/p&gt;", "escaped"),
        ("Tom &amp; Jerry", "Tom & Jerry"),
        ("&amp;lt;b&amp;gt; stays text", "&lt;b&gt; stays text"),
        ("x" * (t.MAX_TEXT + 10), "x" * t.MAX_TEXT),
    ],
)
def test_to_text(value: str | None, expected: str) -> None:
    assert t.to_text(value) == expected


def _well_formed(rng: random.Random) -> str:
    inline_tags = ["b", "em", "span", "a href='/x'", "code", "strong"]
    words = ["word", "Tom &amp; Jerry", "&lt;x&gt;", "é", "PR 12", " ", "\n"]

    def inline(depth: int) -> str:
        if depth > 2 or rng.random() < 0.4:
            return rng.choice(words)
        tag = rng.choice(inline_tags)
        inner = "".join(inline(depth + 1) for _ in range(rng.randint(1, 3)))
        return f"<{tag}>{inner}</{tag.split()[0]}>" if rng.random() < 0.9 else inner + "<br>"

    def block(depth: int) -> str:
        r = rng.random()
        if depth > 2 or r < 0.4:
            return "<p>" + "".join(inline(0) for _ in range(rng.randint(1, 4))) + "</p>"
        if r < 0.6:
            items = "".join("<li>" + inline(0) + "</li>" for _ in range(rng.randint(1, 3)))
            return f"<ul>{items}</ul>"
        if r < 0.7:
            return "<h3>" + inline(0) + "</h3>"
        return "<div>" + "".join(block(depth + 1) for _ in range(rng.randint(1, 3))) + "</div>"

    return "".join(block(0) if rng.random() < 0.8 else inline(0) for _ in range(rng.randint(1, 4)))


def test_fast_path_equals_lxml_on_generated_well_formed_markup() -> None:
    rng = random.Random(20261005)
    for _ in range(1000):
        markup = _well_formed(rng)
        fast = t._simple_html_to_text(markup)
        assert fast is not None, markup
        assert fast == t._lxml_html_to_text(markup), markup


def test_fast_path_keeps_the_same_text_on_tag_soup() -> None:
    # Stray end tags may move a paragraph break; the characters must not change.
    tokens = [
        "<p>", "</p>", "<b>", "</b>", "<br>", "</br>", "<li>", "</li>", "<ul>", "</ul>",
        "<div class='x'>", "</div>", "<a href='/x'>", "</a>", "<em>", "</em>", "<h2>", "</h2>",
        "word", " ", "\n", "&amp;", "&lt;", "Tom", ".", "<hr/>", "<span>", "</span>", "<BR/>",
        "<P id=a>", "  ", "&#8230;", "é",
    ]  # fmt: skip

    def squeeze(text: str) -> str:
        return "".join(text.split()).replace("-", "")

    rng = random.Random(7)
    for _ in range(1000):
        markup = "".join(rng.choice(tokens) for _ in range(rng.randint(1, 25)))
        fast = t._simple_html_to_text(markup)
        assert fast is not None
        assert squeeze(fast) == squeeze(t._lxml_html_to_text(markup)), markup


# Pieces for the lxml path: every element kind element_text treats apart (blocks, <li>,
# <br>, skipped subtrees, <a> naming a PR or not, nested), names it reads differently
# from lxml's ("x}p", the Kelvin sign), tag soup, entities and whitespace.
_TREE_PIECES = [
    "<p>", "</p>", "<div>", "</div>", "<li>", "</li>", "<ul>", "</ul>", "<br>", "<br/>",
    "</br>", "<h2>", "</h2>", "<table><tr><td>", "</td></tr></table>", "<script>", "</script>",
    "<style>", "</style>", "<svg>", "</svg>", "<title>", "</title>", "<head>", "</head>",
    "<body>", '<a href="https://github.com/o/r/pull/7">', "<a href=' https://GitHub.com/o/r/pull/8'>",
    '<a href="github.com/o/r/pull/9">', '<a href="https://gıthub.com/o/r/pull/10">',
    '<a href="https://x.test/a">', "<a>", "</a>", "#7", "https://github.com/o/r/pull/7",
    "<x}p>", "</x}p>", "<bloc\u212aquote>", "</bloc\u212aquote>", "<SPAN>", "</SPAN>", "<!-- c -->",
    "<?pi x?>", "&nbsp;", "&amp;", "&#8230;", "word", "Tom", " ", "\n", "\n\n", "\t", "\xa0", "é",
]  # fmt: skip


def test_document_text_equals_the_element_walk_on_generated_markup() -> None:
    # The lxml path serialises a changed tree instead of walking it (html_document_text):
    # the text must be element_text's, on every tree the HTML parser makes.
    rng = random.Random(20261206)
    checked = 0
    for _ in range(4000):
        markup = "".join(rng.choice(_TREE_PIECES) for _ in range(rng.randint(1, 30)))
        try:
            root = etree.fromstring(markup, t.html_parser())
        except (etree.ParserError, ValueError):
            continue
        if root is None:
            continue
        walked = t.element_text(root)
        root = etree.fromstring(markup, t.html_parser())
        assert t.html_document_text(root, markup) == walked, markup
        checked += 1
    assert checked > 3000


# PR links as feeds write them, and forms whose href lxml may read otherwise (entities,
# whitespace, unquoted, repeated), for the tag-by-tag path of markup with links.
_PR = "https://github.com/o/r/pull/7"
_HREFS = [
    f'"{_PR}"', f"'{_PR}'", f'"{_PR}?a=1&amp;b=2"', '"https://x.test/a?b=1&amp;c"', f'"{_PR}&x;"',
    '"https://github.com/o/r/issues/3"', f'" {_PR}"', '"https://GitHub.com/o/r/pull/8"', _PR,
    '"https://github.com/o/r/pull/9&#47;"', '"https://github&#46;com/o/r/pull/10"', f'"{_PR} "',
    '"github.com/o/r/pull/11"', '"www.github.com/o/r/pull/12"', '""', '"https://gıthub.com/o/r/pull/13"',
]  # fmt: skip
_LINK_WORDS = [
    "word", "Tom &amp; Jerry", "&lt;x&gt;", "é", " ", "\n", "#7", _PR, "&nbsp;", "&ndash;", "&",
    "a > b", "\xa0", "&notit;", "&amp", _PR + "?a=1&amp;b=2", "\n\n", "\t", "&#8217;", "&#x2019;",
    "&#7;", "&#65", "&#x80;", "&#xFFFE;", "&#0;", "\x01", "\x0c", "\x00", "\x85", "&#13;", "\r",
]  # fmt: skip
_LINK_SOUP = [
    "<p>", "</p>", "<div>", "</div>", "<li>", "</li>", "<ul>", "</ul>", "<h2>", "</h2>", "<br>",
    "</br>", "<hr>", "</hr>", "<b>", "</b>", "</a>", "<dl>", "<dt>", "<dd>", "</dd>", "<P>", "</P>",
    "<em>", "</em>", "<blockquote>", "</blockquote>", "<span>", "</span>", "<img src=x>",
]  # fmt: skip


def _link_open(rng: random.Random) -> str:
    href = rng.choice(_HREFS)
    return rng.choice(
        [
            f"<a href={href}>",
            f'<a target="_blank" href={href} rel="noopener">',
            f"<A HREF={href}>",
            f'<a href={href} href="https://x.test/">',
            f"<a data-href={href}>",
            f"<a href = {href} >",
        ]
    )


def _linked_markup(rng: random.Random) -> str:
    def inline(depth: int) -> str:
        r = rng.random()
        if depth > 2 or r < 0.45:
            return rng.choice(_LINK_WORDS)
        if r < 0.6:
            inner = rng.choice(_LINK_WORDS) if rng.random() < 0.8 else inline(depth + 1)
            return _link_open(rng) + inner + ("</a>" if rng.random() < 0.9 else "")
        if r < 0.65:
            return rng.choice(["<br>", "<br/>"])
        tag = rng.choice(["b", "em", "strong", "span", "code"])
        return f"<{tag}>{''.join(inline(depth + 1) for _ in range(rng.randint(1, 3)))}</{tag}>"

    def block(depth: int) -> str:
        r = rng.random()
        closed = rng.random() < 0.9
        if depth > 2 or r < 0.4:
            return "<p>" + "".join(inline(0) for _ in range(rng.randint(1, 4))) + "</p>" * closed
        if r < 0.6:
            items = "".join(f"<li>{inline(0)}" + "</li>" * closed for _ in range(rng.randint(1, 3)))
            return f"<ul>{items}</ul>"
        if r < 0.7:
            return f"<h3>{inline(0)}</h3>"
        if r < 0.75:
            return "<hr>"
        return "<div>" + "".join(block(depth + 1) for _ in range(rng.randint(1, 3))) + "</div>"

    if rng.random() < 0.5:
        pieces = [rng.random() for _ in range(rng.randint(1, 25))]
        markup = "".join(
            rng.choice(_LINK_SOUP if r < 0.4 else _LINK_WORDS) if not 0.4 <= r < 0.55
            else _link_open(rng)
            for r in pieces
        )  # fmt: skip
    else:
        count = rng.randint(1, 4)
        markup = "".join(block(0) if rng.random() < 0.8 else inline(0) for _ in range(count))
    return markup + _link_open(rng) + "x</a>"


def test_markup_with_links_reads_as_lxml_reads_it_when_taken_tag_by_tag() -> None:
    # Markup linking a PR: the tag-by-tag path must give lxml's text wherever it answers,
    # and leave every other document (soup lxml rearranges, unclear hrefs) to lxml.
    rng = random.Random(20261207)
    taken = 0
    for _ in range(6000):
        markup = _linked_markup(rng)
        fast = t._linked_markup_to_text(markup)
        if fast is None:
            continue
        taken += 1
        assert fast == t._lxml_html_to_text(markup), markup
    assert taken > 300


@pytest.mark.parametrize(
    ("markup", "expected"),
    [
        (
            f'<p>Landed: <a href="{_PR}" target="_blank">#7</a>, see <a href="{_PR}">{_PR}</a></p>',
            f"Landed: #7 ({_PR}), see {_PR}",
        ),
        (f'<ul><li><a href="{_PR}?x=1&amp;y=2">fix</a></li></ul>', f"- fix ({_PR}?x=1&y=2)"),
        (f"<P>One</P><A HREF='{_PR}'>two</A>", f"One\n\ntwo ({_PR})"),
        ('<p><a href="https://x.test/?a=1&amp;b=2">x</a> &ndash; y</p>', "x – y"),
    ],
)
def test_plain_links_are_read_tag_by_tag(markup: str, expected: str) -> None:
    assert t._linked_markup_to_text(markup) == expected
    assert t.to_text(markup) == expected


@pytest.mark.parametrize(
    "markup",
    [
        f'<p>a<a href="{_PR}">x</p>y</a>',  # the link closed by the paragraph
        f'<a href="{_PR}"><b>x</b></a>',  # markup inside the link
        f'<a href="{_PR}&#x3f;">x</a>',  # an entity in the href
        f"<a href={_PR}>x</a>",  # unquoted
        f'<p>a<div><a href="{_PR}">x</a></div>b</p>',  # a block closing the paragraph
        f'x</p>y<a href="{_PR}">x</a>',  # a stray end tag
        f'<a href="{_PR}">x</a>\x01',  # a control character
        f'<a href="{_PR}">x</a>&#1;',  # a reference to one
        f'<a href="{_PR}">x</a>\ry',
        f'<table><tr><td><a href="{_PR}">x</a></td></tr></table>',
        f'<a href="{_PR}">x</a><!-- c -->',
    ],
)
def test_other_markup_with_links_goes_to_lxml(markup: str) -> None:
    assert t._linked_markup_to_text(markup) is None


def test_the_plain_tag_split_splits_as_the_full_one_where_it_takes_every_tag() -> None:
    # _PLAIN_TAG_SPLIT takes double-quoted attributes only: where it splits at every
    # "<", its split must be _TAG_SPLIT's.
    rng = random.Random(20261208)
    taken = 0
    for _ in range(4000):
        markup = _linked_markup(rng)
        parts = t._PLAIN_TAG_SPLIT.split(markup)
        if len(parts) == 3 * markup.count("<") + 1:
            taken += 1
            assert parts == t._TAG_SPLIT.split(markup), markup
    assert taken > 1000


# Characters no XML parser gives (the C0 controls but tab, newline and CR).
_NOT_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _read(convert: Callable[..., object], *args: str) -> object:
    """What ``convert(*args)`` gives, or the kind of error it raises (lxml refuses a
    reference to a control character, as the item's reader then does)."""
    try:
        return convert(*args)
    except ValueError as err:
        return type(err)


def _from_xml(markup: str) -> str:
    return t.to_text(markup, from_xml=True)


def _each_alone(description: str, content: str) -> tuple[str, str]:
    return t.to_text(description), t.to_text(content)


def test_markup_from_xml_reads_as_any_markup() -> None:
    rng = random.Random(20261209)
    for _ in range(4000):
        markup = _linked_markup(rng)
        if _NOT_XML.search(markup) is None:
            assert _read(_from_xml, markup) == _read(t.to_text, markup), markup


_NOTES_PIECES = [*_LINK_SOUP, *_LINK_WORDS, "&#", "&#38;", "38;", "\n \n", "\xa0\n", "<p>", "</ul>"]


def _continued_notes(rng: random.Random) -> tuple[str, str]:
    """Show notes (content:encoded) and a description that is their first blocks, each
    maybe with a piece of markup, soup or text put in."""
    notes = show_notes(rng, rng.randint(1, 10**6))
    ends = [m.end() for m in re.finditer(r"</p>|</ul>", notes)]
    first = notes[: rng.choice(ends)]
    rest = notes[len(first) :]
    for _ in range(rng.choice([0, 0, 1, 2])):
        if rng.random() < 0.5:
            at = rng.randrange(len(first))
            first = first[:at] + rng.choice(_NOTES_PIECES) + first[at:]
        else:
            at = rng.randrange(len(rest) + 1)
            rest = rest[:at] + rng.choice(_NOTES_PIECES) + rest[at:]
    if rng.random() < 0.2:
        first += rng.choice(_NOTES_PIECES)
    elif rng.random() < 0.2:  # an inline element or a block left open at its end
        first += rng.choice(["<em>x</em>", _link_open(rng) + "#7</a>", "<br>", "<p>", "<div>"])
    return first, first + rest


def test_notes_going_on_from_the_description_read_as_each_read_alone() -> None:
    # The content's text is made of the description's and the rest's: it must be what
    # converting each whole gives, and most such notes must be read that way.
    rng = random.Random(20261210)
    continued = 0
    for _ in range(1500):
        description, content = _continued_notes(rng)
        if _NOT_XML.search(content) is not None:
            continue  # text from an XML parser never holds these
        texts = _read(t.notes_texts, description, content)
        assert texts == _read(_each_alone, description, content), (description, content)
        continued += t._continued_text(description, content) is not None
    assert continued > 500
