"""Transcript and chapter converters: each Podcasting 2.0 form → what was said."""

from __future__ import annotations

import pytest

from digests.parse.text import MAX_TEXT
from digests.parse.transcripts import chapter_titles, transcript_text

SAID = "Paired with PR 199734, which posts the autotune results.\n\nGreat, thanks."

VTT = """WEBVTT
Kind: captions
Language: en

NOTE recorded live

STYLE
::cue { color: lime }

intro
00:00:01.000 --> 00:00:04.000 align:start position:10%
<v Alice Smith>Paired with PR 199734,</v>

00:00:04.000 --> 00:00:06.500
<v Alice Smith><c.loud>which</c> posts <00:00:05.000>the <i>autotune</i> results.

00:00:06.500 --> 00:00:08.000
<v.host Bob>Great, thanks.
"""

SRT = """1
00:00:01,000 --> 00:00:04,000
ALICE: Paired with PR 199734,

2
00:00:04,000 --> 00:00:06,500
{\\an8}which posts the <i>autotune</i>
results.

3
00:00:06,500 --> 00:00:08,000
Bob: Great, thanks.
"""

JSON = """{"version": "1.0.0", "segments": [
 {"speaker": "Alice", "startTime": 1.0, "endTime": 2.0, "body": "Paired with PR 199734,"},
 {"speaker": "Alice", "startTime": 2.0, "endTime": 3.0, "body": "which posts the"},
 {"speaker": "Alice", "startTime": 3.0, "endTime": 4.0, "body": "autotune results."},
 {"speaker": "Bob", "startTime": 5.0, "body": "Great, thanks."}]}"""

HTML = """<!DOCTYPE html><html><head><title>Transcript</title></head><body>
<cite>Alice:</cite> <time>00:00:01</time>
<p>Paired with PR 199734, which posts the autotune results.</p>
<cite>Bob:</cite> <time>00:00:06</time>
<p>Great, thanks.</p></body></html>"""

PLAIN = """[00:00:01] Alice: Paired with PR 199734,
which posts the autotune results.

00:00:06 Bob: Great, thanks.
"""


@pytest.mark.parametrize(
    ("kind", "body"),
    [
        ("text/vtt", VTT),
        ("application/x-subrip", SRT),
        ("application/srt", SRT),
        ("application/json", JSON),
        ("text/html", HTML),
        ("text/html; charset=utf-8", HTML),
        ("text/plain", PLAIN),
        ("", VTT),
        ("", SRT),
        ("", JSON),
        ("", HTML),
        ("application/octet-stream", PLAIN),
        ("TEXT/VTT", VTT.replace("\n", "\r\n")),
    ],
)
def test_each_form_gives_what_was_said(kind: str, body: str) -> None:
    assert transcript_text(body, kind) == SAID


@pytest.mark.parametrize(
    ("kind", "body", "expected"),
    [
        ("text/vtt", "", ""),
        ("text/vtt", "WEBVTT\n", ""),
        ("text/vtt", "no timings at all\njust words", "no timings at all just words"),
        ("application/json", "{bad", ""),
        ("application/json", '{"segments": {"x": 1}}', ""),
        ("application/json", '[{"body": "a"}, {"body": 5}, "x", {"body": "b"}]', "a b"),
        ("application/json", "[" * 50_000, ""),
        ("text/html", "   ", ""),
        ("text/plain", "Note: one.\nTwo &amp; three.", "one. Two & three."),
        ("application/x-subrip", "1\n00:00:01,000 --> 00:00:02,000\n<b>a &lt; b</b>\n", "a < b"),
    ],
)
def test_edge_cases(kind: str, body: str, expected: str) -> None:
    assert transcript_text(body, kind) == expected


def test_output_is_capped() -> None:
    cue = "00:00:01.000 --> 00:00:02.000\n" + "word " * 50 + "\n\n"
    assert len(transcript_text("WEBVTT\n\n" + cue * 5_000, "text/vtt")) <= MAX_TEXT + 1


def test_hostile_lines_are_linear() -> None:
    # No timing assertion: a catastrophic pattern would hang here.
    body = "<" * 200_000 + "\n" + "A" * 200_000 + ":" + "[" * 100_000 + "\n"
    for kind in ("text/vtt", "text/plain", "text/html", "application/x-subrip"):
        assert isinstance(transcript_text(body, kind), str)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            '{"version": "1.2.0", "chapters": [{"startTime": 0, "title": "Intro"},'
            ' {"startTime": 5, "title": "Ad", "toc": false},'
            ' {"startTime": 9, "title": "  PR 199734  lands "}, {"startTime": 20}]}',
            ("Intro", "PR 199734 lands"),
        ),
        ("{bad", ()),
        ('{"chapters": "no"}', ()),
        ("[1, 2]", ()),
        ("{" * 50_000, ()),
    ],
)
def test_chapter_titles(body: str, expected: tuple[str, ...]) -> None:
    assert chapter_titles(body) == expected
