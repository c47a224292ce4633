"""Escaping, links, truncation, builders and limits: pure functions, parametrized tables."""

from __future__ import annotations

import json
import random
import re
import unicodedata
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from slack_sdk.models.blocks import Block

from digests.models import Episode
from digests.render import blocks as b
from digests.render import limits
from digests.render.environment import format_date, format_duration, make_environment
from digests.render.escape import (
    ELLIPSIS,
    Mrkdwn,
    link,
    mrkdwn,
    oneline,
    plain,
    safe_url,
    to_plain,
    truncate,
    unescape,
)
from digests.render.renderer import Renderer

# -- mrkdwn ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("plain words", "plain words"),
        ("a & b", "a &amp; b"),
        ("<!channel>", "&lt;!channel&gt;"),
        ("<!here> <!everyone>", "&lt;!here&gt; &lt;!everyone&gt;"),
        ("<@U0123>", "&lt;@U0123&gt;"),
        ("<#C0123|general>", "&lt;#C0123|general&gt;"),
        ("<!subteam^S012>", "&lt;!subteam^S012&gt;"),
        ("<https://evil|click>", "&lt;https://evil|click&gt;"),
        ("&amp; already", "&amp;amp; already"),
        ("\"quotes\" and 'apostrophes'", "\"quotes\" and 'apostrophes'"),
        ("*bold* _it_ ~s~ `code`", "*bold* _it_ ~s~ `code`"),
        ("bell\x07 and nul\x00 gone", "bell and nul gone"),
        ("tabs\tand\nnewlines stay", "tabs\tand\nnewlines stay"),
        ("dos\r\nand mac\rends", "dos\nand mac\nends"),
        ("bidi \u202egnirts\u202c gone", "bidi gnirts gone"),
        ("", ""),
        (None, ""),
        (42, "42"),
    ],
)
def test_mrkdwn_escapes_exactly_amp_lt_gt(raw: object, escaped: str) -> None:
    result = mrkdwn(raw)
    assert result == escaped
    assert isinstance(result, Mrkdwn)


def test_mrkdwn_does_not_escape_twice() -> None:
    once = mrkdwn("<a & b>")
    assert mrkdwn(once) == "&lt;a &amp; b&gt;"
    assert unescape(once) == "<a & b>"


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        (Mrkdwn("*Key*"), " <!channel>", "*Key* &lt;!channel&gt;"),
        ("<@U1> ", Mrkdwn("<https://a.example|a>"), "&lt;@U1&gt; <https://a.example|a>"),
    ],
)
def test_mrkdwn_concatenation_escapes_the_plain_side(left: str, right: str, expected: str) -> None:
    result = left + right
    assert result == expected
    assert isinstance(result, Mrkdwn)


def test_mrkdwn_join_and_format_escape_plain_parts() -> None:
    assert Mrkdwn(" · ").join(["a<b", Mrkdwn("<https://x.example|x>")]) == (
        "a&lt;b · <https://x.example|x>"
    )
    assert Mrkdwn("*{}*").format("<!here>") == "*&lt;!here&gt;*"
    assert Mrkdwn("%s!") % "a&b" == "a&amp;b!"


# -- links -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "label", "expected"),
    [
        (
            "https://github.com/pytorch/pytorch/pull/199801",
            "#199801",
            "<https://github.com/pytorch/pytorch/pull/199801|#199801>",
        ),
        ("http://example.com/a", "A & B", "<http://example.com/a|A &amp; B>"),
        ("https://example.com/?a=1&b=2", "q", "<https://example.com/?a=1&amp;b=2|q>"),
        ("https://example.com/", "x|y", "<https://example.com/|x¦y>"),
        ("https://example.com/", "<!channel>", "<https://example.com/|&lt;!channel&gt;>"),
        ("https://example.com/", "two\nlines", "<https://example.com/|two lines>"),
        ("https://example.com/", "", "<https://example.com/>"),
        ("https://evil.example|click", "label", "label"),
        ("https://evil.example>x", "label", "label"),
        ("https://evil.example/a b", "label", "label"),
        ("https://evil.example/<x", "a<b", "a&lt;b"),
        ("javascript:alert(1)", "label", "label"),
        ("ftp://files.example/x", "label", "label"),
        ("mailto:a@example.com", "label", "label"),
        ("https://", "label", "label"),
        ("", "label", "label"),
        (None, "label", "label"),
    ],
)
def test_link(url: str | None, label: str, expected: str) -> None:
    result = link(url, label)
    assert result == expected
    assert isinstance(result, Mrkdwn)


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://example.com/x?y=1", True),
        ("HTTP://EXAMPLE.COM", True),
        ("https://example.com/\x00", False),
        ('https://example.com/"x', False),
        ("//example.com/x", False),
        ("https://example.com/" + "a" * 3000, False),
        # Past the plain-host shortcut, as urlsplit judges them.
        ("https://example.com:8443#top", True),
        ("https://user@example.com/x", True),
        ("https://[::1]:8080/x", True),
        ("https://[::1/x", False),
        ("https://:80/x", False),
        ("httpſ://example.com/", False),  # ſ folds to s, but is no scheme letter
        ("https://", False),
    ],
)
def test_safe_url(url: str, ok: bool) -> None:
    assert (safe_url(url) is not None) is ok


# -- truncation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("short", 10, "short"),
        ("exactly ten", 11, "exactly ten"),
        ("the quick brown fox jumps", 15, "the quick…"),
        ("the quick brown fox jumps", 16, "the quick brown…"),
        ("trailing, comma here", 10, "trailing…"),
        ("supercalifragilistic", 8, "superca…"),
        ("a verylongwordthatdoesnotfit", 12, "a verylongw…"),
        ("two words", 1, "…"),
        ("newline\nbreaks count", 12, "newline…"),
    ],
)
def test_truncate_plain(text: str, limit: int, expected: str) -> None:
    result = truncate(text, limit)
    assert result == expected
    assert len(result) <= limit


@pytest.mark.parametrize(
    ("raw", "limit", "expected"),
    [
        # Escaping lengthens: the limit holds for the escaped text.
        ("a & b & c & d", 12, "a &amp; b…"),
        ("<<<<<<<<<<", 12, "&lt;&lt;…"),
        # A hard cut never splits an entity: it backs off to the entity's start.
        ("xx&yyyyyyyyyyyy", 5, "xx…"),
        ("&&&&", 11, "&amp;&amp;…"),
        ("fits &amp; exactly", 26, "fits &amp;amp; exactly"),
    ],
)
def test_truncate_escaped_counts_and_keeps_entities(raw: str, limit: int, expected: str) -> None:
    result = truncate(mrkdwn(raw), limit)
    assert result == expected
    assert len(result) <= limit
    assert isinstance(result, Mrkdwn)


def test_truncate_never_splits_a_link() -> None:
    text = Mrkdwn("see ") + link("https://github.com/pytorch/pytorch/pull/1", "#1 is long")
    for limit in range(1, len(text)):
        result = truncate(text, limit)
        assert len(result) <= limit
        assert result.count("<") == result.count(">")


_ENTITY_OK = re.compile(r"&(?!amp;|lt;|gt;)")


def test_truncate_property_random_hostile_text() -> None:
    rng = random.Random(7)
    alphabet = ["&", "<", ">", " ", "\n", "a", "b", "ü", "é", "-", ",", ";"]
    for _ in range(400):
        raw = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        escaped = mrkdwn(raw)
        limit = rng.randint(1, 90)
        result = truncate(escaped, limit)
        assert len(result) <= limit
        assert not _ENTITY_OK.search(result), (raw, limit, result)
        assert "<" not in result and ">" not in result
        if len(escaped) <= limit:
            assert result == escaped
        else:
            assert result.endswith(ELLIPSIS)
            assert escaped.startswith(result[: -len(ELLIPSIS)])


def test_truncate_rejects_a_zero_limit() -> None:
    with pytest.raises(ValueError):
        truncate("x", 0)


# -- plain, oneline, to_plain ------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("<!channel> & co", "<!channel> & co"),
        (Mrkdwn("&lt;!channel&gt; &amp; co"), "<!channel> & co"),
        ("  two\n\tlines  ", "two lines"),
        ("bell\x07", "bell"),
        (None, ""),
    ],
)
def test_plain(value: object, expected: str) -> None:
    assert plain(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [("a\n\n b\tc ", "a b c"), (None, ""), (Mrkdwn("x\ny"), "x y")],
)
def test_oneline(value: object, expected: str) -> None:
    assert oneline(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("<https://a.example/p|PR &amp; co>", "PR & co (https://a.example/p)"),
        ("<https://a.example/p>", "https://a.example/p"),
        ("&lt;!channel&gt;", "<!channel>"),
        ("no links", "no links"),
        ("*Key PRs*\n• x\n_and 3 more PRs_", "Key PRs\n• x\nand 3 more PRs"),
        ("2*3*4 stays", "2*3*4 stays"),
        # Inline emphasis, as Slack reads it, goes too.
        ("*Nearby:* A · B · _and 3 more_", "Nearby: A · B · and 3 more"),
        ('• *bold* and _italic_, (*x*) "_y_".', '• bold and italic, (x) "y".'),
        ("*_both_* and _*both*_", "both and both"),
        (
            "*<https://a.example/p|PR>* · _<https://a.example/q|Q>_",
            "PR (https://a.example/p) · Q (https://a.example/q)",
        ),
        ("*Evil &lt;!here&gt;* · x", "Evil <!here> · x"),
        # Not emphasis to Slack: inside words, paths and URLs, spaced out, unclosed, code.
        ("2 * 3 * 4", "2 * 3 * 4"),
        ("snake_case_name and __init__", "snake_case_name and __init__"),
        ("see https://a.example/*a*/b_c_/d", "see https://a.example/*a*/b_c_/d"),
        ("<https://a.example/_a_/|a_b_c>", "a_b_c (https://a.example/_a_/)"),
        ("a* b *c and *open", "a* b *c and *open"),
        ("*two\nlines*", "*two\nlines*"),
        ("`*code*` and *x*", "`*code*` and x"),
        ("&lt;*b*&gt; &amp;_x_", "<*b*> &_x_"),
        ("**", "**"),
    ],
)
def test_to_plain(value: str, expected: str) -> None:
    assert to_plain(value) == expected


# -- durations and dates -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (151, "2:31"),
        (3723, "1:02:03"),
        (0, "0:00"),
        (59, "0:59"),
        (60, "1:00"),
        (3600, "1:00:00"),
        (36000 + 61, "10:01:01"),
        (151.6, "2:32"),
        (None, ""),
        (-5, ""),
    ],
)
def test_format_duration(seconds: int | float | None, expected: str) -> None:
    assert format_duration(seconds) == expected


@pytest.mark.parametrize(
    ("when", "tz", "expected"),
    [
        (datetime(2026, 10, 5, 13, 0, 40, tzinfo=UTC), "UTC", "Mon 5 Oct 2026"),
        (datetime(2026, 10, 5, 23, 30, tzinfo=UTC), "Asia/Tokyo", "Tue 6 Oct 2026"),
        (datetime(2026, 3, 15, 2, 0, tzinfo=UTC), "America/New_York", "Sat 14 Mar 2026"),
        (datetime(2026, 12, 31, 12, 0), "UTC", "Thu 31 Dec 2026"),
        (None, "UTC", ""),
    ],
)
def test_format_date(when: datetime | None, tz: str, expected: str) -> None:
    assert format_date(when, ZoneInfo(tz)) == expected


# -- the environment ---------------------------------------------------------------------

HOSTILE = '<!channel> & <https://evil.example|click> "q"'


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ x }}", '&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt; "q"'),
        ("{{ x|mrkdwn }}", '&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt; "q"'),
        (
            "{{ link('https://ok.example', x) }}",
            '<https://ok.example|&lt;!channel&gt; &amp; &lt;https://evil.example¦click&gt; "q">',
        ),
        (
            "{{ [x, link('https://ok.example', 'ok')]|join(' · ') }}",
            '&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt; "q" · '
            "<https://ok.example|ok>",
        ),
        ("{{ x|truncate_words(17) }}", "&lt;!channel&gt;…"),
        (
            "{% macro m(v) %}*{{ v }}*{% endmacro %}{{ m(x) }}",
            '*&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt; "q"*',
        ),
        ("{{ nothing }}", ""),
        # `~` and |e escape for Slack too: no HTML entities like &#34; for quotes.
        (
            "{{ x ~ link('https://ok.example', 'ok') }}",
            '&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt; "q"<https://ok.example|ok>',
        ),
        (
            "{% set y = x ~ '!' %}{{ y }}",
            '&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt; "q"!',
        ),
        ("{{ x|e }}", '&lt;!channel&gt; &amp; &lt;https://evil.example|click&gt; "q"'),
        ("{{ x|upper }}", '&lt;!CHANNEL&gt; &amp; &lt;HTTPS://EVIL.EXAMPLE|CLICK&gt; "Q"'),
    ],
)
def test_environment_escapes_every_value_for_mrkdwn(source: str, expected: str) -> None:
    env = make_environment()
    assert env.from_string(source).render(x=HOSTILE, nothing=None) == expected


@pytest.mark.parametrize("name", ["urlize", "xmlattr"])
def test_html_building_filters_are_gone(name: str) -> None:
    from jinja2 import TemplateAssertionError

    with pytest.raises(TemplateAssertionError):
        make_environment().from_string("{{ x|" + name + " }}")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ 151|duration }}", "2:31"),
        ("{{ when|date }}", "Tue 6 Oct 2026"),
        ("{{ pr|pr_link }}", "<https://github.com/pytorch/pytorch/pull/199801|#199801>"),
    ],
)
def test_environment_filters(source: str, expected: str) -> None:
    from digests.models import PullRequestRef

    env = make_environment(tz=ZoneInfo("Asia/Tokyo"))
    pr = PullRequestRef(number=199801, url="https://github.com/pytorch/pytorch/pull/199801")
    when = datetime(2026, 10, 5, 23, 30, tzinfo=UTC)
    assert env.from_string(source).render(pr=pr, when=when) == expected


# -- builders ----------------------------------------------------------------------------


def _valid(block: dict[str, object]) -> None:
    Block.parse(block).validate_json()  # type: ignore[union-attr]


def test_header_is_plain_and_cut_to_150() -> None:
    block = b.header("word " * 100 + "<!channel>")
    assert len(block["text"]["text"]) <= limits.HEADER_TEXT
    assert block["text"]["text"].endswith(ELLIPSIS)
    _valid(block)


def test_section_escapes_str_and_trusts_mrkdwn() -> None:
    assert b.section("<!here>")["text"]["text"] == "&lt;!here&gt;"
    assert b.section(link("https://a.example", "a"))["text"]["text"] == "<https://a.example|a>"
    long = b.section("&" * 5000)
    assert len(long["text"]["text"]) <= limits.SECTION_TEXT
    _valid(long)


def test_section_fields_are_capped() -> None:
    block = b.section("x", fields=["f" * 2500] * 12)
    assert len(block["fields"]) == limits.SECTION_FIELDS
    assert all(len(f["text"]) <= limits.FIELD_TEXT for f in block["fields"])
    _valid(block)


def test_context_caps_elements_and_skips_empty() -> None:
    block = b.context(["", *[f"e{i}" for i in range(15)]])
    assert [e["text"] for e in block["elements"]] == [f"e{i}" for i in range(10)]
    _valid(block)


def test_button_limits() -> None:
    element = b.button("x" * 100, "a" * 300, "v", url="https://ok.example/")
    assert len(element["text"]["text"]) <= limits.BUTTON_TEXT
    assert len(element["action_id"]) <= limits.ACTION_ID
    assert element["url"] == "https://ok.example/"
    _valid(b.actions([element]))
    with pytest.raises(ValueError):
        b.button("x", "a", "v" * 2001)
    assert "url" not in b.button("x", "a", url="javascript:alert(1)")


@pytest.mark.parametrize(
    ("guid", "key"),
    [
        ("https://example.com/ep/1", "guid"),
        ("g" * 1990, "guid_sha256"),
        ('<!channel>"\\', "guid"),
    ],
)
def test_button_value_round_trips_within_limit(guid: str, key: str) -> None:
    value = b.button_value("PyTorch", guid)
    assert len(value) <= limits.BUTTON_VALUE
    data = b.read_button_value(value)
    assert data["show"] == "PyTorch"
    assert data[key] == (guid if key == "guid" else b.guid_key(guid))


@pytest.mark.parametrize("value", ["", "not json", "[1]", '{"show": 3}'])
def test_read_button_value_ignores_foreign_values(value: str) -> None:
    assert b.read_button_value(value).get("show") is None


def test_pack_lines_never_splits_a_line_and_respects_limit() -> None:
    lines = [f"line {i} " + "w " * (i * 7) for i in range(60)]
    chunks = b.pack_lines(lines, 500)
    assert all(len(c) <= 500 for c in chunks)
    assert "\n".join(chunks).split("\n") == [str(truncate(mrkdwn(line), 500)) for line in lines]


# -- fit ---------------------------------------------------------------------------------


def _message(blocks: list[dict[str, Any]], text: str = "t") -> limits.Message:
    return limits.Message(text=text, blocks=blocks)


def test_fit_caps_block_count() -> None:
    fitted = limits.fit(_message([b.section(f"s{i}") for i in range(70)]))
    assert len(fitted["blocks"]) == limits.BLOCKS_PER_MESSAGE


def test_fit_shrinks_sections_from_the_end_and_keeps_header_and_buttons() -> None:
    blocks = [
        b.header("Title"),
        *[b.section("word " * 590) for _ in range(6)],
        b.actions([b.button("Go", "go", "v")]),
    ]
    fitted = limits.fit(_message(blocks))
    assert limits.message_text_size(fitted) <= limits.MESSAGE_TEXT_BUDGET
    assert fitted["blocks"][0]["type"] == "header"
    assert fitted["blocks"][-1]["type"] == "actions"
    assert fitted["blocks"][1]["text"]["text"] == blocks[1]["text"]["text"]
    for block in fitted["blocks"]:
        _valid(block)


def test_fit_repairs_raw_dicts() -> None:
    raw: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": "h" * 400}},
        {"type": "section", "text": {"type": "mrkdwn", "text": "&amp;" * 1000}},
        {"type": "section", "text": {"type": "mrkdwn", "text": "   "}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": "c"}] * 14},
        {"type": "actions", "elements": [b.button("b", f"a{i}") for i in range(30)]},
        {
            "type": "actions",
            "elements": [{**b.button("b", "a"), "value": "v" * 3000}],
        },
        {"type": "divider"},
    ]
    fitted = limits.fit(_message(raw, text=""))
    kinds = [block["type"] for block in fitted["blocks"]]
    assert kinds == ["header", "section", "context", "actions", "divider"]
    assert fitted["text"] == ELLIPSIS
    assert not _ENTITY_OK.search(fitted["blocks"][1]["text"]["text"])
    for block in fitted["blocks"]:
        _valid(block)
    json.dumps(fitted)
    assert raw[0]["text"]["text"] == "h" * 400  # the input is not modified


# -- invisible formatting characters --------------------------------------


def _format_characters() -> list[str]:
    return [chr(cp) for cp in range(0x110000) if unicodedata.category(chr(cp)) == "Cf"]


def test_every_format_character_is_stripped_from_mrkdwn_plain_text_and_urls() -> None:
    found = _format_characters()
    assert "\u00ad" in found and "\u200b" in found and "\u200f" in found and "\u061c" in found
    for char in found:
        text = f"pay{char}pal"
        assert mrkdwn(text) == "paypal", repr(char)
        assert plain(text) == "paypal", repr(char)
        assert safe_url(f"https://pay{char}pal.example/") is None, repr(char)


def test_a_digest_shows_no_invisible_formatting_characters() -> None:
    hidden = "\u200b\u200c\u200d\u2060\ufeff\u00ad\u200e\u200f\u061c\U000e0041"
    episode = Episode(
        guid="g",
        show="PyTorch",
        title=f"PyTorch: Mer{hidden}ges",
        headline=f"Mer{hidden}ges",
        summary=f"Stack{hidden}-aware merges land in PR 199734.",
        published_at=datetime(2026, 10, 5, 13, tzinfo=UTC),
        url="https://example.test/e/1",
    )
    message = Renderer().digest(episode)
    shown = json.dumps(message, ensure_ascii=False)
    assert "Merges" in shown and "Stack-aware" in shown
    assert not [c for c in shown if unicodedata.category(c) == "Cf"]
