"""Timed transcripts → cues (start time and text). Pure: text in, records out.

Of the Podcasting 2.0 transcript forms, three carry timings: WebVTT (read by webvtt-py),
SubRip (read by srt) and the namespace's JSON (``segments`` with ``startTime``, validated
here). HTML and plain text have none we can trust: no cues, and nothing changes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator

import srt
import webvtt
from pydantic import BaseModel, ConfigDict, ValidationError

from digests.models import Cue
from digests.parse.transcripts import TRANSCRIPT_TYPES, sniff_form

__all__ = ["MAX_CUES", "transcript_cues"]

# A three-hour episode cut into one-second cues; a file with more is not a transcript.
MAX_CUES = 20_000
_MAX_CUE_TEXT = 2_000


class _Segment(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    startTime: float | None = None
    body: str = ""


class _JsonTranscript(BaseModel):
    model_config = ConfigDict(extra="ignore")

    segments: list[_Segment] = []


def transcript_cues(body: str, kind: str) -> tuple[Cue, ...]:
    """The cues of a timed transcript ``body`` of ``kind`` (a media type, or "" to sniff),
    in order of time; () when it has no timings or cannot be read."""
    form = TRANSCRIPT_TYPES.get(kind.split(";", 1)[0].strip().lower()) or sniff_form(body)
    body = body.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    try:
        if form == "vtt":
            found = _vtt(body)
        elif form == "srt":
            found = _srt(body)
        elif form == "json":
            found = _json(body)
        else:
            return ()
        cues = [c for c in _bounded(found) if c.text]
    except (ValueError, TypeError, ValidationError, webvtt.errors.MalformedFileError,
            srt.SRTParseError, RecursionError):  # fmt: skip
        return ()
    return tuple(sorted(cues, key=lambda c: c.start))


def _bounded(cues: Iterable[Cue]) -> Iterator[Cue]:
    for i, cue in enumerate(cues):
        if i >= MAX_CUES:
            return
        if math.isfinite(cue.start) and cue.start >= 0:
            yield Cue(cue.start, " ".join(cue.text.split())[:_MAX_CUE_TEXT])


def _vtt(body: str) -> Iterator[Cue]:
    for caption in webvtt.from_string(body).captions:
        yield Cue(float(caption.start_in_seconds), caption.text)


def _srt(body: str) -> Iterator[Cue]:
    for subtitle in srt.parse(body, ignore_errors=True):
        yield Cue(subtitle.start.total_seconds(), subtitle.content)


def _json(body: str) -> Iterator[Cue]:
    data = json.loads(body)
    if isinstance(data, list):
        data = {"segments": data}
    for segment in _JsonTranscript.model_validate(data).segments:
        if segment.startTime is not None:
            yield Cue(segment.startTime, segment.body)
