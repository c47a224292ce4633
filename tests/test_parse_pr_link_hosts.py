"""A PR link whose host is written in another case (``GitHub.com``): hosts are
case-insensitive, so its URL survives in the text exactly as a ``github.com`` link's does —
on the tag-by-tag path, on lxml's path, through escaped markup and a description the
content goes on from, and on the command line (issue 25). Case is ASCII's only: a host that
Unicode's case folding alone makes github.com ("gıthub.com") is not GitHub, its link a
plain one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from digests.parse import text as t
from tests.fixtures.cli import run_cli

HOSTS = ["GitHub.com", "GITHUB.COM", "www.GitHub.com", "gitHub.Com"]

_LINK = '<a href="https://{host}/pytorch/pytorch/pull/201101">the fix</a>'
TAG_BY_TAG = f"<p>Landed: {_LINK}.</p><ul><li>And more</li></ul>"
LXML = f"<p>Landed: {_LINK}.</p><table><tr><td>a cell</td></tr></table>"
INLINE = f"Landed: {_LINK} &amp; more"  # no block: the simple paths' shape


def _as(markup: str, host: str) -> str:
    return markup.replace("{host}", host)


def _lower(text: str, host: str) -> str:
    return text.replace(host, "github.com")


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("markup", [TAG_BY_TAG, LXML, INLINE])
@pytest.mark.parametrize("from_xml", [False, True])
def test_the_link_reads_as_a_lower_case_one(host: str, markup: str, from_xml: bool) -> None:
    expected = t.to_text(_as(markup, "github.com"), from_xml=from_xml)
    assert "(https://" in expected
    got = t.to_text(_as(markup, host), from_xml=from_xml)
    assert f"(https://{host}/pytorch/pytorch/pull/201101)" in got
    assert _lower(got, host) == expected


@pytest.mark.parametrize("host", HOSTS)
def test_each_path_reads_it(host: str) -> None:
    simple = _as(TAG_BY_TAG, host)
    taken = t._linked_markup_to_text(simple)
    assert taken is not None  # the tag-by-tag path takes it, as a lower-case link
    assert taken == t._lxml_html_to_text(simple) == t.to_text(simple)
    soup = _as(LXML, host)
    assert t._linked_markup_to_text(soup) is None  # lxml's
    assert t.to_text(soup) == t._lxml_html_to_text(soup)
    # Markup escaped twice (the html_to_text path after unescaping).
    escaped = simple.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    assert t.to_text(escaped) == t.to_text(simple)


@pytest.mark.parametrize("host", HOSTS)
def test_a_description_the_content_goes_on_from(host: str) -> None:
    description = _as(f"<p>First: {_LINK}.</p>", host)
    content = description + "<p>Then PR 201102.</p>"
    both = t.notes_texts(description, content)
    lower = t.notes_texts(_lower(description, host), _lower(content, host))
    assert tuple(_lower(text, host) for text in both) == lower
    assert both == (t.to_text(description, from_xml=True), t.to_text(content, from_xml=True))


def _feed(host: str) -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0" '
        'xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel>'
        "<title>PyTorch</title><link>https://pod.test/</link>"
        "<item><title>PyTorch: Hosts</title><guid>h-1</guid><link>https://pod.test/ep/h-1</link>"
        f"<description><![CDATA[{_as(TAG_BY_TAG, host)}]]></description>"
        f"<content:encoded><![CDATA[{_as(LXML, host)}]]></content:encoded></item>"
        "</channel></rss>\n"
    ).encode()


@pytest.mark.parametrize("host", HOSTS)
def test_on_the_command_line(host: str, tmp_path: Path) -> None:
    out = {}
    for name in (host, "github.com"):
        path = tmp_path / "feed.xml"
        path.write_bytes(_feed(name))
        result = run_cli("parse", str(path), "--json", "--repo", "pytorch/pytorch")
        assert result.returncode == 0, result.stderr
        out[name] = result.stdout
    (episode,) = json.loads(out[host])
    assert [pr["number"] for pr in episode["pull_requests"]] == [201101]
    assert f"(https://{host}/pytorch/pytorch/pull/201101)" in episode["summary"]
    assert _lower(out[host], host) == out["github.com"]


# Hosts that only Unicode's case folding makes github.com (Python's re.I matches "ı" and
# "İ" to "i", "ſ" to "s"): not GitHub. Such a link is a plain link, its href not read.
LOOK_ALIKES = [
    "https://g\u0131thub.com",  # dotless ı
    "https://G\u0130THUB.COM",  # İ, dotted capital I
    "https://www.g\u0131thub.com",
    "http\u017f://github.com",  # long s in the scheme
]
# A real PR link as well, so each path below is taken (markup naming no github.com never
# reaches the PR-link checks: the simple path reads it).
_REAL = '<a href="https://github.com/pytorch/pytorch/pull/201103">real</a>'
_LOOK = '<a href="{url}/pytorch/pytorch/pull/201104">look-alike</a>'
LOOK_TAG_BY_TAG = f"<p>Landed: {_LOOK} and {_REAL}.</p><ul><li>And more</li></ul>"
LOOK_LXML = f"<p>Landed: {_LOOK} and {_REAL}.</p><table><tr><td>a cell</td></tr></table>"
_PLAIN = "https://example.org"  # any host but GitHub's: what a plain link reads as


def _with(markup: str, url: str) -> str:
    return markup.replace("{url}", url)


@pytest.mark.parametrize("url", LOOK_ALIKES)
@pytest.mark.parametrize("markup", [LOOK_TAG_BY_TAG, LOOK_LXML])
@pytest.mark.parametrize("from_xml", [False, True])
def test_a_look_alike_host_is_a_plain_link(url: str, markup: str, from_xml: bool) -> None:
    got = t.to_text(_with(markup, url), from_xml=from_xml)
    assert "pull/201104" not in got and "(https://github.com/pytorch/pytorch/pull/201103)" in got
    assert got == t.to_text(_with(markup, _PLAIN), from_xml=from_xml)


@pytest.mark.parametrize("url", LOOK_ALIKES)
def test_each_path_reads_a_look_alike_as_a_plain_link(url: str) -> None:
    simple = _with(LOOK_TAG_BY_TAG, url)
    taken = t._linked_markup_to_text(simple)
    assert taken is not None  # the tag-by-tag path
    assert taken == t._linked_markup_to_text(_with(LOOK_TAG_BY_TAG, _PLAIN))
    assert taken == t._lxml_html_to_text(simple)
    soup = _with(LOOK_LXML, url)
    assert t._linked_markup_to_text(soup) is None  # lxml's
    assert t._lxml_html_to_text(soup) == t._lxml_html_to_text(_with(LOOK_LXML, _PLAIN))
    assert "201104" not in t._lxml_html_to_text(soup)


@pytest.mark.parametrize("url", LOOK_ALIKES)
def test_a_look_alike_on_the_command_line(url: str, tmp_path: Path) -> None:
    out = {}
    for name in (url, _PLAIN):
        feed = (
            '<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0" '
            'xmlns:content="http://purl.org/rss/1.0/modules/content/"><channel>'
            "<title>PyTorch</title><link>https://pod.test/</link>"
            "<item><title>PyTorch: Hosts</title><guid>h-2</guid>"
            "<link>https://pod.test/ep/h-2</link>"
            f"<description><![CDATA[{_with(LOOK_TAG_BY_TAG, name)}]]></description>"
            f"<content:encoded><![CDATA[{_with(LOOK_LXML, name)}]]></content:encoded>"
            "</item></channel></rss>\n"
        )
        path = tmp_path / "feed.xml"
        path.write_bytes(feed.encode())
        result = run_cli("parse", str(path), "--json", "--repo", "pytorch/pytorch")
        assert result.returncode == 0, result.stderr
        out[name] = result.stdout
    (episode,) = json.loads(out[url])
    assert [pr["number"] for pr in episode["pull_requests"]] == [201103]
    assert "201104" not in out[url]
    assert out[url] == out[_PLAIN]
