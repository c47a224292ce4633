"""Text helpers shared by the parsers: caps, HTML → plain text, whitespace, stable guids."""

from __future__ import annotations

import hashlib
import html
import re
import threading

from lxml import etree

# Feeds in the wild carry megabytes of junk in one field; nothing we show needs more.
MAX_TEXT = 100_000
MAX_TITLE = 2_000
MAX_ENTRIES = 10_000
MAX_NEARBY = 50

_BLANKS = re.compile(r"\n\s*\n\s*")
_NEWLINES = re.compile(r"\n\n+")
_SPACES_LINE = re.compile(r"\n +\n")
# '<' followed by something tag-like: "a < b" is text, "<p>" and "</p>" are markup.
_LOOKS_HTML = re.compile(r"<[A-Za-z/!?]")
# A PR's URL. Its scheme and host match in ASCII only ((?a:…)): re.I alone is Unicode's
# case folding, which makes "gıthub.com" (dotless ı), "GİTHUB.COM" and "httpſ" GitHub's.
_PULL_URL = r"(?a:(?:https?://)?(?:www\.)?github\.com/)[\w.-]+/[\w.-]+/pull/\d+"
_GITHUB_PULL = re.compile("^" + _PULL_URL, re.I)

# Elements whose end is a paragraph break; everything else is inline.
_BLOCK = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "dd",
        "details",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "li",
        "main",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "thead",
        "tfoot",
        "tr",
        "ul",
    ]
)
_SKIP = frozenset(
    ["script", "style", "noscript", "template", "head", "title", "iframe", "object", "svg", "math"]
)

_local = threading.local()


def html_parser() -> etree.HTMLParser:
    """One HTML parser per thread: lxml parser objects must not be shared across threads."""
    parser: etree.HTMLParser | None = getattr(_local, "html", None)
    if parser is None:
        parser = etree.HTMLParser(
            no_network=True, remove_comments=True, remove_pis=True, default_doctype=False
        )
        _local.html = parser
    return parser


def cap(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[:limit]


def squash(text: str) -> str:
    """All whitespace runs → one space, trimmed."""
    # isprintable() is False for every whitespace character but the ASCII space (and for
    # ASCII text a few memchr calls tell the same), so text that passes these C-level
    # checks is already squashed; splitting it into words and joining them again is the
    # costliest step of reading a large feed.
    if len(text) < 40:
        return " ".join(text.split())  # a word or two: splitting is cheaper than checking
    if text.isascii():
        plain = "\n" not in text and not _odd_ascii_space(text)
    else:
        plain = text.isprintable()
    if plain and "  " not in text and not text.startswith(" ") and not text.endswith(" "):
        return text
    return " ".join(text.split())


def _odd_ascii_space(text: str) -> bool:
    """Whether ASCII ``text`` holds whitespace other than space and newline: a memchr per
    character, far cheaper than ``isprintable`` (which non-ASCII text still needs)."""
    return (
        "\t" in text
        or "\r" in text
        or "\x0b" in text
        or "\x0c" in text
        or "\x1c" in text
        or "\x1d" in text
        or "\x1e" in text
        or "\x1f" in text
    )


def paragraphs(text: str) -> str:
    """Whitespace normalised inside paragraphs; paragraphs (blank-line separated) kept."""
    if "\n" not in text:
        return squash(text)
    # A break is a whitespace run with two newlines. With no line of spaces, and with the
    # ASCII space as the only other whitespace (as in squash), that is a run of newlines,
    # which splitting at such runs finds without splitting the text into words.
    ascii = text.isascii()
    if ascii and _odd_ascii_space(text):
        return _paragraphs_general(text)
    out: list[str] = []
    # Each run split at once: markup's block tags leave long runs, and a split at every
    # second newline would leave empty parts to step over.
    for part in _NEWLINES.split(text):
        inner = False
        if "\n" in part:
            part = part.strip("\n")
            if "\n" in part:
                # A line of spaces is a break too, and only a part with a newline left
                # can hold one: looked for here, not in the whole text (a slow search
                # where newlines are many).
                if "\n " in part and _SPACES_LINE.search(part) is not None:
                    return _paragraphs_general(text)
                inner = True
                part = part.replace("\n", " ")
        if not part:
            continue
        if not ascii and not part.isprintable():
            if inner:
                return _paragraphs_general(text)  # other whitespace may make a break here
            # Other whitespace (a no-break space, say) on one line: no break in it.
            part = " ".join(part.split())
            if part:
                out.append(part)
            continue
        if "  " in part or part[0] == " " or part[-1] == " ":
            part = " ".join(part.split())
            if not part:
                continue
        out.append(part)
    return "\n\n".join(out)


def _paragraphs_general(text: str) -> str:
    parts = (" ".join(p.split()) for p in _BLANKS.split(text))
    return "\n\n".join(p for p in parts if p)


def looks_html(text: str) -> bool:
    return "<" in text and _LOOKS_HTML.search(text) is not None


# Slack's own syntax typed into feed text (<@U123>, <!here>, <https://x|label>) is words the
# writer meant, not markup: HTML parsing would drop it, so it is kept as text (rendering
# escapes it for mrkdwn like any feed text, so it never pings or links).
_SLACK_SYNTAX = re.compile(
    r"<(?:[@#][A-Z0-9][A-Za-z0-9]{1,30}(?:\|[^<>\n]{0,200})?"
    r"|!(?:here|channel|everyone)\b[^<>\n]{0,200}"
    r"|!(?:subteam|date)\^[^<>\n]{0,300}"
    r"|https?://[^\s<>|]{1,2000}(?:\|[^<>\n]{0,300})?)>"
)


def _keep_slack_syntax(value: str) -> str:
    """``value`` with Slack-syntax tokens entity-escaped, so HTML → text gives them back."""
    return _SLACK_SYNTAX.sub(lambda m: html.escape(m.group(0), quote=False), value)


def to_text(value: str | None, *, from_xml: bool = False) -> str:
    """A feed text field as plain text: HTML → paragraphs, entities decoded, capped.
    ``from_xml``: the value is text an XML parser gave (see ``_joined_to_text``)."""
    if not value:
        return ""
    value = cap(value, MAX_TEXT * 2)
    if "<" in value and _links_github(value):
        # A link that may name a PR, whose href must survive: the tag-by-tag path when
        # every tag is simple and every such link plain, else lxml (none of the checks
        # for the simple path below, each a scan of the markup, could spare the tree).
        linked = _linked_markup_to_text(value, from_xml)
        if linked is not None:
            return cap(linked)
        return cap(_lxml_html_to_text(_keep_slack_syntax(value)))
    if "<" in value:
        # Block tags (not <li>) replaced first: when that leaves no "<", every "<" opened
        # one, so the check that each opens a simple tag (a regex test at every "<") is
        # not needed. Either way, without <li> the replacement is _blocks_to_text's.
        text = _PLAIN_BLOCK_TAG.sub("\n\n", value)
        if "<" not in text or _NOT_PLAIN.search(value) is None:
            # Every "<" opens a simple tag other than <li> and <a>: the simple path
            # applies with neither list items to mark nor links to keep.
            return cap(_inline_to_text(text))
        if _NOT_SIMPLE.search(value) is None:
            # Every "<" opens a simple tag, so none starts Slack syntax ("<@", "<#", "<!",
            # "<http" are none of them): nothing to keep, and the simple path applies.
            if looks_html(value):
                simple = _simple_markup_to_text(value)
                return cap(simple if simple is not None else _lxml_html_to_text(value))
        else:
            kept = _keep_slack_syntax(value)
            if looks_html(kept):
                return cap(html_to_text(kept))
    if "&" in value:
        # Double-escaped feeds ("&amp;amp;", "&lt;p&gt;" inside CDATA) are common.
        value = html.unescape(value)
        if "<" in value:
            kept = _keep_slack_syntax(value)
            if looks_html(kept):
                return cap(html_to_text(kept))
    return cap(paragraphs(value))


# Simple markup — the <p>/<a>/<em>/<li> of nearly every podcast description — converts
# without building a tree. Anything else (comments, scripts, tables, odd attributes, a
# '<' that is not one of these tags) goes to lxml.html. On well-formed markup the two
# give identical text; on tag soup only paragraph breaks may differ (tests compare them).
_INLINE = (
    "a|abbr|b|bdi|bdo|cite|code|data|del|dfn|em|i|ins|kbd|mark|q|s|samp|small|span|strong|"
    "sub|sup|time|u|var|wbr"
)
_BLOCKS = (
    "p|div|blockquote|h[1-6]|ul|ol|li|dl|dt|dd|section|article|header|footer|main|aside|"
    "figure|figcaption|hr|address|nav"
)
_BLOCK_NAMES = frozenset(_BLOCKS.replace("h[1-6]", "h1|h2|h3|h4|h5|h6").split("|"))
_ATTRS = r"""(?:\s+[A-Za-z_:][-\w:.]*(?:\s*=\s*(?:"[^"<>]*"|'[^'<>]*'|[^\s"'<>=`]+))?)*\s*/?"""
# A '<' that does not open one of the simple tags above.
_NOT_SIMPLE = re.compile(rf"<(?!/?(?i:{_BLOCKS}|{_INLINE}|br)\b{_ATTRS}>)")
# The same, with <li> and <a> refused too: markup without either (most descriptions) needs
# no check for list items or PR links (each a scan of the text) once this one has passed.
_NOT_PLAIN = re.compile(
    rf"<(?!/?(?i:{_BLOCKS.replace('|li|', '|')}|{_INLINE.removeprefix('a|')}|br)\b{_ATTRS}>)"
)
_LI_OPEN = re.compile(rf"<(?i:li)\b{_ATTRS}>")
# With the whitespace after it: that joins the paragraph break the tag becomes anyway,
# and leaves fewer newline runs for paragraphs() to take apart.
_BLOCK_TAG = re.compile(rf"</?(?i:{_BLOCKS})\b{_ATTRS}>\s*")
# The same without <li>: markup that passes _NOT_PLAIN has none.
_PLAIN_BLOCK_TAG = re.compile(rf"</?(?i:{_BLOCKS.replace('|li|', '|')})\b{_ATTRS}>\s*")
# <br> is a line break; lxml drops a stray </br>, and so do we.
_BR_TAG = re.compile(rf"<(?i:br)\b{_ATTRS}>")
_INLINE_TAG = re.compile(rf"<(?:/(?i:br)|/?(?i:{_INLINE}))\b{_ATTRS}>")
_A_OPEN = re.compile(r"<[aA]\b")


def _links_github(markup: str) -> bool:
    """Whether ``markup`` opens an <a> and names github.com, in any case (a host is
    case-insensitive: "GitHub.com" is github.com): it may link a PR, whose href must
    survive. Nearly every feed writes the host in lower case, found by ``in``; only markup
    with a link and without it is lowered to look again."""
    if "github.com" in markup:
        return _A_OPEN.search(markup) is not None
    return _A_OPEN.search(markup) is not None and "github.com" in markup.lower()


def html_to_text(markup: str) -> str:
    """Plain text of an HTML fragment: block elements become paragraph breaks."""
    simple = _simple_html_to_text(markup)
    if simple is not None:
        return simple
    return _lxml_html_to_text(markup)


def _simple_html_to_text(markup: str) -> str | None:
    # C-level passes and no Python per tag: refuse anything not simple, then replace
    # block tags by paragraph breaks, <br> by a newline, and drop inline tags.
    if _NOT_SIMPLE.search(markup) is not None:
        return None
    return _simple_markup_to_text(markup)


def _simple_markup_to_text(markup: str) -> str | None:
    """``_simple_html_to_text`` of markup whose every "<" opens a simple tag."""
    if _links_github(markup):
        return None  # a PR link's href must survive: lxml path appends it
    text = _LI_OPEN.sub("\n\n- ", markup) if "<l" in markup or "<L" in markup else markup
    return _blocks_to_text(text)


def _blocks_to_text(text: str) -> str:
    """Text of simple markup with no <li> left: block tags become paragraph breaks."""
    return _inline_to_text(_BLOCK_TAG.sub("\n\n", text))


def _inline_to_text(text: str) -> str:
    """Text of simple markup whose block tags are paragraph breaks already."""
    if "<" in text:
        # Two string replacements, not one with a function called for every tag.
        text = _INLINE_TAG.sub("", _BR_TAG.sub("\n", text))
    if "&" in text:
        text = html.unescape(text)
    return paragraphs(text)


# Characters libxml2 keeps in text that lxml's path then refuses to set.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# The C0 controls but tab and the line ends, and what a podcast's text reads them as: as
# html.unescape reads a reference to one (HTML's rule, and what the paths that read most
# show notes without lxml give), nothing, but a form feed (whitespace in HTML) a space.
_C0 = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_C0_TEXT = {code: None for code in range(0x20) if code not in (0x09, 0x0A, 0x0D)} | {0x0C: " "}


def without_controls(text: str) -> str:
    """``text`` with its C0 control characters (but tab, newline and CR) deleted, a form
    feed read as a space (see ``_C0_TEXT``)."""
    return text.translate(_C0_TEXT) if _C0.search(text) is not None else text


# Markup split at its tags (name with any "/", then the attributes), each a tag the simple
# path knows or not: a "<" that opens no tag of this form stays in the text between. The
# attributes are _ATTRS made possessive (a sixth faster here, the same splits: nothing in
# it needs to give back what a repetition took).
_TAG_SPLIT = re.compile(
    r"""<(/?[A-Za-z][A-Za-z0-9]*+)((?:\s++[A-Za-z_:][-\w:.]*+"""
    r"""(?:\s*+=\s*+(?:"[^"<>]*+"|'[^'<>]*+'|[^\s"'<>=`]++))?+)*+\s*+/?)>"""
)
# The same for tags whose attributes are each a space, a name and a double-quoted value
# (the <a href="…" target="…"> of nearly every feed), a simpler pattern and faster to run.
# Where it splits at every "<", it splits as _TAG_SPLIT does (each of its tags is one of
# those, and every tag ends at the first ">" either way).
_PLAIN_TAG_SPLIT = re.compile(
    r"""<(/?[A-Za-z][A-Za-z0-9]*+)((?: [A-Za-z][-A-Za-z]*+="[^"<>]*+")*+)>"""
)
_TAG_TEXT = {
    **{f"{slash}{name}": "\n\n" for name in _BLOCK_NAMES for slash in ("", "/")},
    **{f"{slash}{name}": "" for name in _INLINE.split("|") for slash in ("", "/")},
    "li": "\n\n- ",
    "br": "\n",
    "/br": "",
}
# The same when that href is a PR's (_GITHUB_PULL's): most links this path looks at, read
# by one match.
_PULL_HREF_FIRST = re.compile(
    rf"""\s+(?i:href)\s*=\s*"((?i:{_PULL_URL})"""
    r'[^"<>]*)"'
)
_HREF_FIRST = re.compile(r"""\s+(?i:href)\s*=\s*(?:"([^"<>]*)"|'([^'<>]*)')""")
_ATTR = re.compile(
    r"""\s+([A-Za-z_:][-\w:.]*)(?:\s*=\s*(?:"([^"<>]*)"|'([^'<>]*)'|([^\s"'<>=`]+)))?"""
)


def _linked_markup_to_text(markup: str, from_xml: bool = False) -> str | None:
    """``_lxml_html_to_text`` of markup whose every tag is one the simple path knows, whose
    tags nest as written and whose every PR link is plain (a quoted href, entities
    ``&amp;`` at most, text with no tags inside); None for any other markup. The markup
    is split at its tags, each tag replaced by its text (a paragraph break, a line
    break, nothing), and a PR link's href put after its end tag, as lxml's path does."""
    joined = _linked_joined(markup)
    return None if joined is None else _joined_to_text(joined[0], from_xml)


def _linked_joined(markup: str) -> tuple[str, bool] | None:
    """The text of ``_linked_markup_to_text``'s markup before its entities are read and
    its paragraphs normalised, and whether every element it opens is closed in it; None
    where that function gives None for its tags."""
    if "\r" in markup:
        return None  # libxml2 reads a lone CR as a line break; paragraphs() does not
    parts = _PLAIN_TAG_SPLIT.split(markup)
    if len(parts) != 3 * markup.count("<") + 1:
        parts = _TAG_SPLIT.split(markup)  # a "<" it did not take
    names = parts[1::3]
    get = _TAG_TEXT.get
    texts = list(map(get, names))  # a C loop: no Python step a tag
    if None in texts:
        names = [name.lower() for name in names]
        texts = list(map(get, names))
        if None in texts:
            return None
    unclosed = _unclosed(names)
    if unclosed < 0:
        return None
    if "a" in names and not _plain_links(parts, names):
        return None
    parts[1::3] = texts
    parts[2::3] = [""] * len(texts)
    return "".join(parts), unclosed == 0


def _joined_to_text(text: str, from_xml: bool = False) -> str | None:
    """``_linked_markup_to_text`` of the markup ``_linked_joined`` made ``text`` of.
    ``from_xml``: the markup is text from an XML parser, which admits no control
    character but DEL (and tab, newline and CR), raw or referenced: only DEL is looked
    for, not the whole set (a scan of the text with a character class)."""
    if "<" in text:
        return None  # a "<" that opens no simple tag
    # Control characters, which lxml's path refuses.
    if ("\x7f" in text) if from_xml else (_CONTROL.search(text) is not None):
        return None
    if "&" not in text:
        return paragraphs(text)
    if "&#" in text and not _plain_references(text):
        return None
    return paragraphs(html.unescape(text))


def notes_texts(description: str | None, content: str | None) -> tuple[str, str]:
    """``to_text`` of an item's description and of its content (``content:encoded``),
    both text from an XML parser, each converted once where the content repeats the
    description or goes on from it, as many hosts write show notes."""
    if content == description:
        text = to_text(description, from_xml=True)
        return text, text
    if description and content and content.startswith(description):
        both = _continued_text(description, content)
        if both is not None:
            return both
    return to_text(description, from_xml=True), to_text(content, from_xml=True)


def _continued_text(description: str, content: str) -> tuple[str, str] | None:
    """``notes_texts`` of a description that ``content`` starts with, when the tag-by-tag
    path reads both and the description ends with a closed block: the content's text is
    then the description's, a paragraph break and the text of the rest, read alone (its
    split at tags, nesting, links, entities and paragraphs are the whole's, the break
    before it parting both). None: not so, or not known to be."""
    if (
        len(content) > MAX_TEXT * 2
        or not description.endswith(">")
        or not _links_github(description)
    ):
        return None
    first = _linked_joined(description)
    if first is None or not first[1] or not first[0].endswith("\n\n"):
        return None
    text = _joined_to_text(first[0], from_xml=True)
    if text is None or len(text) >= MAX_TEXT:
        return None
    rest = _linked_joined(content[len(description) :])
    more = _joined_to_text(rest[0], from_xml=True) if rest is not None else None
    if more is None:
        return None
    return text, cap(f"{text}\n\n{more}" if text and more else text or more)


# Characters html.unescape and libxml2 give alike: references to a control character or
# a noncharacter are read otherwise by each (and lxml's path refuses a control character).
_NUMERIC_REFERENCE = re.compile(r"&#(?:[xX]([0-9a-fA-F]{1,8})|([0-9]{1,10}));")


def _plain_references(text: str) -> bool:
    """Whether every numeric character reference in ``text`` is complete and names a
    character both readers give as it is."""
    count = 0
    for m in _NUMERIC_REFERENCE.finditer(text):
        count += 1
        code = int(m.group(1), 16) if m.group(1) is not None else int(m.group(2))
        if not (0x20 <= code < 0x7F or 0xA0 <= code <= 0x10FFFF):
            return False
        if 0xD800 <= code <= 0xDFFF or 0xFDD0 <= code <= 0xFDEF or code & 0xFFFE == 0xFFFE:
            return False
    return count == text.count("&#")


# Blocks lxml's HTML parser closes when another block starts in them: the paragraph
# breaks would then fall where it closes them, so such markup is lxml's to read.
_CLOSED_BY_BLOCKS = frozenset(["p", "h1", "h2", "h3", "h4", "h5", "h6"])
_CLOSES = {
    **{name: frozenset(_BLOCK_NAMES) for name in _CLOSED_BY_BLOCKS},
    "li": frozenset(["li"]),
    "dt": frozenset(["dt", "dd"]),
    "dd": frozenset(["dt", "dd"]),
}
_END_TAG = {name: f"/{name}" for name in (*_BLOCK_NAMES, *_INLINE.split("|")) if name != "hr"}
def _unclosed(names: list[str]) -> int:
    """-1 unless tags ``names`` (lower case, "/" first for an end tag) nest as written:
    each end tag the innermost open element's, no block that would close the one it opens
    in (lxml's tree would then place the breaks otherwise); else how many elements they
    leave open."""
    open_tags: list[str] = []  # the end tag each open element awaits
    blocks: list[str] = []  # the open blocks
    for name in names:
        end = _END_TAG.get(name)
        if end is not None:  # an element's start tag
            open_tags.append(end)
            if name in _BLOCK_NAMES:
                if blocks and name in _CLOSES.get(blocks[-1], ()):
                    return -1
                blocks.append(name)
        elif name == "br" or name == "/br":
            continue  # lxml drops </br>
        elif name == "hr":
            if blocks and blocks[-1] in _CLOSED_BY_BLOCKS:
                return -1
        elif not open_tags or open_tags.pop() != name:
            return -1  # an end tag not the innermost element's, or </hr>
        elif name[1:] in _BLOCK_NAMES:
            blocks.pop()
    return len(open_tags)


def _plain_links(parts: list[str], names: list[str]) -> bool:
    """``_plain_link`` of each <a> of ``parts``, a ``_TAG_SPLIT`` split whose tag names
    (lower case) are ``names``."""
    at = -1
    while True:
        try:
            at = names.index("a", at + 1)
        except ValueError:
            return True
        i = 3 * at + 1
        attrs = parts[i + 1]
        # An href "/pull/" is not in, and no entity but &amp; in it (none could spell
        # "/pull/"): no PR's.
        if "/pull/" not in attrs.lower() and attrs.count("&") == attrs.count("&amp;"):
            continue
        if not _plain_link(parts, i):
            return False


def _first_href(attrs: str) -> str | None:
    """The first ``href`` of a tag's attributes (as lxml keeps it), when it is quoted."""
    m = _HREF_FIRST.match(attrs)  # most links: the href first
    if m is not None:
        return m.group(1) if m.group(1) is not None else m.group(2)
    for m in _ATTR.finditer(attrs):
        if m.group(1).lower() == "href":
            return m.group(2) if m.group(2) is not None else m.group(3)
    return None


def _plain_link(parts: list[str], i: int) -> bool:
    """For the <a> at ``parts[i]`` of a ``_TAG_SPLIT`` split: False when lxml could read
    its href otherwise than as written here; else True, its href (when a PR's, not in
    its text) put after its end tag."""
    attrs = parts[i + 1]
    pull = _PULL_HREF_FIRST.match(attrs)
    href = pull.group(1) if pull is not None else _first_href(attrs)
    if href is None:
        return "href" not in (m.group(1).lower() for m in _ATTR.finditer(attrs))
    value = href
    if "&" in href:
        value = href.replace("&amp;", "&")
        if "&" in href.replace("&amp;", ""):
            return False  # an entity lxml may read otherwise
    if " " in href or not href.isprintable():
        return False  # whitespace its strip() would take
    # (Decoding "&amp;" changes nothing _GITHUB_PULL reads: its characters hold no "&".)
    if pull is None and _GITHUB_PULL.match(value) is None:
        return True
    if i + 3 >= len(parts) or (parts[i + 3] != "/a" and parts[i + 3] != "/A"):
        return False  # tags inside, or no end tag: lxml decides where it ends
    inner = parts[i + 2]
    if value not in (html.unescape(inner) if "&" in inner else inner):
        parts[i + 5] = f" ({href}){parts[i + 5]}"  # decoded with the rest of the text
    return True


def _lxml_html_to_text(markup: str) -> str:
    markup = without_controls(markup)  # as lxml's text could not hold them
    try:
        root = etree.fromstring(markup, html_parser())
    except (etree.ParserError, ValueError):
        # lxml refuses empty or whitespace-only documents (and str with an encoding decl).
        return paragraphs(html.unescape(_strip_tags(markup)))
    if root is None:
        return ""
    try:
        return html_document_text(root, markup)
    except ValueError:
        # A reference to a control character in a text the tree's change had to set
        # (lxml refuses it): read the tree as parsed, in Python.
        return element_text(etree.fromstring(markup, html_parser()))


# A tag name that _BLOCK, _SKIP or "a" matches only as element_text reads it: after a
# "}" (the HTML tokenizer keeps "x}p" as a name) or through the Kelvin sign
# ("\u212a".lower() is "k", the one character outside ASCII that lowers into it).
_ODD_TAG_NAME = re.compile(r"<[^\s/>]*[}\u212a]")
_BLOCK_OR_BR = (*_BLOCK, "br")


def html_document_text(root: etree._Element, markup: str) -> str:
    """``element_text(root)`` of the document lxml's HTML parser made from ``markup``
    (tags in lower case, no comments or PIs), which no one else holds: the tree is
    changed so that lxml's own text serialisation (one pass in C) gives that text, with
    Python for the block, <br> and <a> elements only, not at every node."""
    if ("}" in markup or "\u212a" in markup) and _ODD_TAG_NAME.search(markup) is not None:
        return element_text(root)
    # PR links first, on the text as parsed: in document order an <a>'s check never reads
    # a tail changed before it (that of an <a> inside it comes later).
    for a in root.iter("a"):
        href = (a.get("href") or "").strip()
        # A PR linked as "#123" would lose its number's repo otherwise.
        if _GITHUB_PULL.match(href) and href not in "".join(a.itertext()):
            a.tail = f" ({href}){a.tail or ''}"
    # (Never the element passed: element_text reads the root whatever its name.)
    etree.strip_elements(root, *_SKIP, with_tail=False)
    for el in root.iter(*_BLOCK_OR_BR):
        if el.tag == "br":
            el.text = "\n" + (el.text or "")
        else:
            el.text = ("\n\n- " if el.tag == "li" else "\n\n") + (el.text or "")
            el.tail = "\n\n" + (el.tail or "")
    text = etree.tostring(root, method="text", encoding="unicode")
    # libxml2 reads a reference to a control character as the character.
    return paragraphs(without_controls(text) if "&#" in markup else text)


def element_text(root: etree._Element) -> str:
    """Plain text of a parsed (X)HTML element tree, paragraphs separated by blank lines."""
    out: list[str] = []
    skipping = 0
    for event, el in etree.iterwalk(root, events=("start", "end")):
        tag = el.tag
        if not isinstance(tag, str):
            # Comments, PIs, entities: no text of their own, but their tail is content.
            if event == "end" and not skipping and el.tail:
                out.append(el.tail)
            continue
        name = tag.rsplit("}", 1)[-1].lower()
        # The root is read whatever its name: an Atom <title type="xhtml"> is no <title>.
        skipped = name in _SKIP and el is not root
        if event == "start":
            if skipped or skipping:
                skipping += skipped
                continue
            _opened(name, el, out)
            continue
        if skipped:
            skipping -= 1
        elif not skipping:
            _closed(name, el, out)
        if not skipping and el.tail:
            out.append(el.tail)
    return paragraphs(without_controls("".join(out)))


def _opened(name: str, el: etree._Element, out: list[str]) -> None:
    if name in _BLOCK:
        out.append("\n\n- " if name == "li" else "\n\n")
    elif name == "br":
        out.append("\n")
    if el.text:
        out.append(el.text)


def _closed(name: str, el: etree._Element, out: list[str]) -> None:
    if name == "a":
        href = (el.get("href") or "").strip()
        # A PR linked as "#123" would lose its number's repo otherwise.
        if _GITHUB_PULL.match(href) and href not in "".join(el.itertext()):
            out.append(f" ({href})")
    if name in _BLOCK:
        out.append("\n\n")


_TAG = re.compile(r"<[^<>]{0,2000}>")


def _strip_tags(markup: str) -> str:
    return _TAG.sub(" ", markup)


def stable_guid(link: str | None, title: str, published: str | None) -> str:
    """An id that survives re-polls for items that publish none: the link, else a hash."""
    if link:
        return link
    blob = f"{title}\x1f{published or ''}".encode()
    return "sha1:" + hashlib.sha1(blob, usedforsecurity=False).hexdigest()
