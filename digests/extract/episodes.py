"""A parsed feed's entries → episodes: every extraction of one entry, in the feed's order.
"""

from __future__ import annotations

from datetime import datetime

from digests.extract.durations import duration_seconds
from digests.extract.feed_order import feed_order_dates
from digests.extract.headline import legible, show_names, title_headline, untitled_headline
from digests.extract.prs import (
    MAX_PULL_REQUESTS,
    breaks_a_list,
    named_past_cap,
    scan_led_pull_requests,
    scan_pull_requests,
)
from digests.extract.summary import cleaned, lead, nearby, squashed
from digests.models import UNKNOWN_DATE, Episode, ParsedSource, PullRequestRef, RawEntry
from digests.parse.dates import published_at
from digests.parse.text import MAX_TEXT, paragraphs, squash, stable_guid
from digests.types import MENTIONS, PrMode


def _guid(entry: RawEntry) -> str:
    return entry.guid or stable_guid(entry.link, entry.title, entry.published)


def extract_entry(
    entry: RawEntry,
    guid: str,
    show: str,
    repo: str,
    names: list[tuple[str, str]],
    prs: PrMode = MENTIONS,
) -> Episode:
    """One raw entry's episode: the text work (sentences, PR mentions, headline, date)."""
    # A feed reader's text is normalised already: a paragraph of it is squashed too.
    done = entry.normalised
    description, description_lower, flat = squashed(entry.description, done)
    if description and done and _repeats(entry, description, flat):
        # The transcript is the description in paragraphs (many hosts write the same show
        # notes in both): scanning it after the description could name no other PR.
        text = entry.transcript
        both = None  # description + "\n\n" + text, made only when needed (at the cap)
        found = scan_pull_requests(description, repo, description_lower, normalised=True, prs=prs)
    else:
        description, text, both, found = _scan_both(
            entry, description, description_lower, repo, prs, flat
        )
    title = squash(entry.title)
    when = published_at(entry.published)
    return _episode(
        {
            "guid": guid,
            "show": show,
            "title": title,
            "headline": (
                legible(title_headline(title, names)) or untitled_headline(entry.link, when)
            ),
            "summary": description,
            "published_at": when or UNKNOWN_DATE,
            "duration_seconds": duration_seconds(entry.duration),
            "url": entry.link or None,
            "audio_url": entry.audio_url or None,
            "pull_requests": tuple(found),
            "nearby": nearby(entry.nearby) if entry.nearby else (),
            "transcript": text,
            "pr_info": (),
            "transcript_links": entry.transcripts,
            "chapters_url": entry.chapters_url,
            "pull_requests_named": (
                named_past_cap(
                    found, f"{description}\n\n{text}" if both is None else both, repo, prs
                )
                if len(found) >= MAX_PULL_REQUESTS
                else 0
            ),
            "raw_hash": _reusable_hash(entry, when),
            "pr_times": (),
            "chapters": entry.chapters,
        }
    )


# An Episode made from values extraction built, as ``Episode.model_validate`` of them
# would make it (the same __dict__, in field order, and the same fields set), without the
# validation: one pydantic-core call per episode, a twentieth of a cold parse, checked
# only what this module's own code gives (strings it cut, ints, records, a UTC datetime),
# never a value read as it stands. Feed text is still capped and cleaned on its way here;
# tests/test_extract.py compares the two on every episode of the bench feeds.
_EPISODE_FIELDS = tuple(Episode.model_fields)


_GIVEN = frozenset(_EPISODE_FIELDS) - {"pr_info"}


_set_attr = object.__setattr__
_new = object.__new__


def _episode(values: dict[str, object]) -> Episode:
    """``Episode.model_validate(values)`` for ``values`` extract_entry built (every field
    but ``pr_info`` given, ``pr_info`` as its default, keys in field order)."""
    episode: Episode = _new(Episode)
    _set_attr(episode, "__dict__", values)
    _set_attr(episode, "__pydantic_fields_set__", set(_GIVEN))
    _set_attr(episode, "__pydantic_extra__", None)
    _set_attr(episode, "__pydantic_private__", None)
    return episode


def _repeats(entry: RawEntry, description: str, flat: bool) -> bool:
    """Whether ``entry``'s transcript (normalised, as our parsers give it) is the text it
    gave as its description, ``description`` that text squashed: paragraph breaks are then
    its only difference, and a break adds no PR mention but before a count word.
    ``flat``: ``description`` is known to be the description with its breaks as spaces."""
    raw = entry.transcript
    return (
        raw == entry.description
        and len(raw) < MAX_TEXT
        and (flat or description == raw.replace("\n\n", " "))
        and not breaks_a_list(raw)
    )


def _scan_both(
    entry: RawEntry,
    description: str,
    description_lower: str,
    repo: str,
    prs: PrMode,
    flat: bool,
) -> tuple[str, str, str | None, list[PullRequestRef]]:
    """The summary, the transcript, both together (None: the summary, a paragraph break
    and the transcript, not made yet), and the PRs they name."""
    text, lower = cleaned(entry.transcript, paragraphs, entry.normalised)
    rest = _repeated_lead(entry, text, lower, flat)
    if description and rest:
        # The transcript goes on from the description in paragraphs: that part is not
        # scanned again (it could name no other PR, nor be cited first).
        found_led = scan_led_pull_requests(
            f"{description}\n\n{text[rest:]}",
            repo,
            f"{description_lower}\n\n{lower[rest:]}",
            len(description),
            prs,
        )
        if found_led is not None:
            return description, text, None, found_led
    if description:
        # One scan of both, a paragraph break between them: the summary's PRs first,
        # then the transcript's not named yet, each with its own sentence.
        text_lower = description_lower + "\n\n" + lower if text else description_lower
        both = description + "\n\n" + text if text else description
        found = scan_pull_requests(both, repo, text_lower, normalised=True, prs=prs)
        return description, text, both, found
    found = scan_pull_requests(text, repo, lower, normalised=True, prs=prs)
    # No description (an item with only content:encoded, an Atom entry with only
    # <content>): the transcript's opening says what the episode covers. Its PRs
    # are the transcript's, scanned above once.
    description = lead(text)
    return description, text, (description + "\n\n" + text if text else description), found


def _repeated_lead(entry: RawEntry, text: str, lower: str, flat: bool) -> int:
    """Where the transcript ``text`` (``lower`` in lower case) goes on after a paragraph
    break from the description in paragraphs, when its summary is that description with
    its breaks as spaces (``flat``) and a break adds no PR mention to it; else 0."""
    first = entry.description
    if (
        not flat
        or not entry.normalised
        or text is not entry.transcript
        or len(lower) != len(text)
        or not first
        or not text.startswith(first)
        or not text.startswith("\n\n", len(first))
        or breaks_a_list(first)
    ):
        return 0
    return len(first) + 2


def _reusable_hash(entry: RawEntry, when: datetime | None) -> str | None:
    """The item's hash, when reading it again could only give this episode again.

    Not for an undated item (the store dates it from what else it holds) nor one linking
    a transcript (fetched on a later poll, a few per poll, and retried): each poll reads
    those afresh, as it always did.
    """
    if entry.raw_hash is None or when is None or entry.transcripts:
        return None
    return entry.raw_hash


def build_episodes(
    parsed: ParsedSource, show: str, repo: str, prs: PrMode = MENTIONS
) -> list[Episode]:
    """Episodes of a parsed source, newest first, one per guid (first occurrence wins).

    An item the parse skipped (``parsed.skipped``: its bytes hash as a stored episode's)
    makes no episode, but still counts as its guid's occurrence in its place.
    """
    episodes: list[Episode] = []
    seen: set[str] = set()
    names = show_names(show, parsed.show_title)
    skipped = iter(parsed.skipped)
    pending = next(skipped, None)
    for position, entry in enumerate(parsed.entries):
        while pending is not None and pending[0] <= position:
            seen.add(pending[1])
            pending = next(skipped, None)
        guid = _guid(entry)
        if guid in seen:
            continue
        seen.add(guid)
        here = names if entry.show is None else show_names(show, parsed.show_title, entry.show)
        episodes.append(extract_entry(entry, guid, show, repo, here, prs))
    # Newest first; an undated item keeps its place among its dated neighbours.
    placed = feed_order_dates(episodes)
    order = {id(e): placed.get(i, e.published_at) for i, e in enumerate(episodes)}
    episodes.sort(key=lambda e: order[id(e)], reverse=True)
    return episodes


def with_transcript(
    episode: Episode, full_text: str, repo: str, prs: PrMode = MENTIONS
) -> Episode:
    """``episode`` with a transcript fetched from its ``<podcast:transcript>`` link: that
    text becomes its transcript, and its PRs are found there first — the full sentence,
    where the feed's excerpt is cut with "…" at the PR — then in the summary and the feed's
    own text for any the transcript does not name. Nothing usable: ``episode`` as it is.
    """
    text, lower = cleaned(paragraphs(full_text), paragraphs)
    if not text:
        return episode
    found = scan_pull_requests(text, repo, lower, normalised=True, prs=prs)
    named = {ref.number for ref in found}
    rest = "\n\n".join(part for part in (episode.summary, episode.transcript) if part)
    found += [ref for ref in scan_pull_requests(rest, repo, prs=prs) if ref.number not in named]
    summary_text = episode.summary or lead(text)
    count = named_past_cap(found, text + "\n\n" + rest if rest else text, repo, prs)
    return episode.model_copy(
        update={
            "transcript": text,
            "pull_requests": tuple(found),
            "summary": summary_text,
            "pull_requests_named": count,
        }
    )
