"""Pull requests a text names ("PRs 199720, 199721 and 199726", owner/repo#n, links), each with
the sentence that names it.

Patterns are compiled once and written so they cannot backtrack badly on hostile text:
every repetition is bounded or anchored on a literal.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from digests.extract.sentences import MAX_CONTEXT, SentenceList, clip, is_plain, near_sentence
from digests.models import PullRequestRef
from digests.parse.text import squash
from digests.types import MENTIONS, PrMode

MAX_PULL_REQUESTS = 200


# Scanned on the lower-cased text so the pattern starts with the literal "p" (the regex
# engine then skips ahead with a fast search instead of trying every position); the
# "not after a word character" test comes after that "p" so it keeps the fast search.
# "pr 1", "pr #1", "pr#1", "prs: 1", "pull request 1", "pull requests #1", "pr number 1",
# "pr-1", and "pr123" glued (three digits at least: "PR2" is as often a product name). In
# those two a date ("pr-2026-10-05") is no PR; "apr-2026" and "spr-5" fail the look-behind.
_PR_HEAD = re.compile(
    r"p(?<!\wp)(?:(rs)|r|(ull[ \t-]+requests)|ull[ \t-]+request)"
    r"(?:\b(?:-(?!\d{1,9}[-/]\d)|[^\S\n]*+:?[^\S\n]*+(?:(?:number|no\.|num\.)[^\S\n]*+)?)#?"
    r"|(?<=r)(?=\d{3,9}\b(?![-/]\d)))"
    r"(\d{1,9})\b(?!\.\d)"
)


# After any head, "#1/#2/#3": a slash list, "#" on every number (without it, "10/11" is as
# likely a date).
_SLASH_NEXT = r"[^\S\n]*+/[^\S\n]*+#\d{1,9}\b(?!\.\d)"


_PR_SLASHES = re.compile(rf"(?:{_SLASH_NEXT})*+")


# Numbers that are counts, not PRs: "PRs 3, 4 and 17 commits" stops before 17.
_COUNT_WORD = (
    r"(?i:commits?|times|files?|tests?|lines?|days?|hours?|minutes?|seconds?|weeks?|months?|"
    r"years?|percent|%|people|contributors?|authors?|issues?|more|other)\b"
)


# The rest of a list after a plural head, as one match on the original text: ", 2",
# " and 3", ", and #4", or "1 for merging, 2 for rebasing" (a few lower-case words before
# each separator; a capital, a full stop or a line break ends the list). Words hold no
# digits, so the numbers in the match are exactly the list's. Possessive: a list that
# stops is never re-read.
_PR_LIST = re.compile(
    r"(?:" + _SLASH_NEXT + r"|(?:[^\S\n]++[a-z][a-z'-]{0,20}+){0,4}?"
    r"(?:[^\S\n]*+,[^\S\n]*+(?:(?:and|or|&)[^\S\n]++)?|[^\S\n]++(?:and|or|&)[^\S\n]++)"
    r"#?\d{1,9}\b(?!\.\d)(?![^\S\n]*+" + _COUNT_WORD + r"))*+"
)


_LIST_NUMBER = re.compile(r"\d{1,9}")


# A paragraph opening with a count word: the one place where a list read in paragraphs
# ("PRs 3, 4" ending one) keeps a number the same text on one line drops as a count.
# The first characters of the count words: as a look-ahead it adds nothing to what
# matches, and lets the regex engine pass most paragraph starts without trying each word.
_COUNT_FIRST = r"(?i:[ctfldhmswyp%aio])"
_COUNT_OPENS_PARAGRAPH = re.compile(r"\n\n(?=" + _COUNT_FIRST + ")" + _COUNT_WORD)


def breaks_a_list(text: str) -> bool:
    """Whether normalised ``text`` may name a PR that the same text with its paragraph
    breaks as spaces does not (every other mention it names, that text names too)."""
    return "\n\n" in text and _COUNT_OPENS_PARAGRAPH.search(text) is not None


# The same heads with their lists, as two patterns each led by a longer literal ("pr",
# "pull"): the regex engine then stops at a few places per text instead of at every "p"
# (a dozen words in a sentence hold one). Each is scanned on the lower-cased text, the
# list included (group 1: a plural head, whose list is ``_PR_LIST``'s, else a slash
# list); a list holding a character lower-casing changed is read again on the text as
# written. No head can start inside a list (its words are followed by a separator, a
# head's by its number), so the two scans find exactly the single scan's mentions.
_HEAD_REST = (
    r"(?:\b(?:-(?!\d{1,9}[-/]\d)|[^\S\n]*+:?[^\S\n]*+(?:(?:number|no\.|num\.)[^\S\n]*+)?)#?"
    r"|(?<=r)(?=\d{3,9}\b(?![-/]\d)))"
    r"(\d{1,9})\b(?!\.\d)"
    r"(?(1)" + _PR_LIST.pattern + "|" + _PR_SLASHES.pattern + ")"
)


_PR_MENTIONS = (
    re.compile(r"pr(?<!\wpr)(s)?" + _HEAD_REST),
    re.compile(r"pull(?<!\wpull)[ \t-]+request(s)?" + _HEAD_REST),
)


_PR_LINK = re.compile(r"github\.com/([a-z0-9_.-]{1,100})/([a-z0-9_.-]{1,100})/pull/(\d{1,9})\b")


def pull_requests(text: str, repo: str, prs: PrMode = MENTIONS) -> tuple[PullRequestRef, ...]:
    """Every PR the text names, in order of first mention, no repeats, with its sentence."""
    return tuple(scan_pull_requests(text, repo, prs=prs))


def scan_pull_requests(
    text: str,
    repo: str,
    lower: str | None = None,
    normalised: bool = False,
    prs: PrMode = MENTIONS,
) -> list[PullRequestRef]:
    """Each PR ``text`` names.

    ``lower`` is ``text.lower()`` when the caller has it. ``normalised`` says ``text`` is
    the output of ``summary`` or ``transcript`` (single spaces, paragraphs split by exactly
    one blank line, nothing around), so sentences need only be found in the paragraphs
    from the first mention's to the last one's. ``prs``: which mentions count (``PrMode``).
    """
    if not text or prs == "off":
        return []
    if lower is None:
        lower = text.lower()
    if len(lower) != len(text):
        # A few characters lower-case to two; keep offsets valid by scanning the original.
        lower = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    found = _mentions(text, lower, MAX_PULL_REQUESTS, heads=prs == MENTIONS)
    return _references(text, repo, found, normalised)


def scan_led_pull_requests(
    text: str, repo: str, lower: str, lead: int, prs: PrMode = MENTIONS
) -> list[PullRequestRef] | None:
    """``scan_pull_requests(whole, repo, normalised=True)`` of normalised text ``whole``
    that is ``text`` with, after its first ``lead`` characters (a paragraph), more that
    names no PR they do not (the same paragraph in paragraphs, say) and no more mentions;
    ``lower`` is ``text.lower()``, as long. None when the mentions of both could reach the
    cap on mentions, where those of the repeat would count."""
    if not text or prs == "off":
        return []
    found = _mentions(text, lower, None, heads=prs == MENTIONS)
    if len(found) + sum(1 for mention in found if mention[0] < lead) > MAX_PULL_REQUESTS:
        return None
    return _references(text, repo, found, True)


def _references(
    text: str, repo: str, found: list[tuple[int, int, str]], normalised: bool
) -> list[PullRequestRef]:
    """``scan_pull_requests`` of the mentions ``found`` in ``text``."""
    if not found:
        return []
    if len(found) > 1:
        found.sort()  # by position: positions are distinct, so nothing else is compared
    plain = is_plain(text) if normalised else False
    scan = None if normalised else SentenceList(text)
    base = f"https://github.com/{repo}/pull/"
    seen: set[str] = set()
    refs: list[PullRequestRef] = []
    append = refs.append
    start = end = -1
    whole = ""
    for pos, number, url in found:
        if not url:
            url = base + str(number)
        if url in seen:
            continue
        seen.add(url)
        if pos >= end:
            # Mentions come in text order: a sentence is looked up once, when the first
            # mention past the last one's sentence arrives.
            if scan is None:
                start, end = near_sentence(text, pos, plain)
                # Inside a normalised paragraph every space is single already.
                whole = text[start:end].rstrip()
            else:
                start, end = scan(text, pos)
                whole = squash(text[start:end].rstrip())
        context = whole if len(whole) <= MAX_CONTEXT else clip(whole, pos - start)
        append(PullRequestRef(number, url, context))
        if len(refs) >= MAX_PULL_REQUESTS:
            break
    return refs


def mention_positions(text: str, repo: str) -> list[tuple[int, str]]:
    """(position, PR URL) of every PR mention in ``text``, in text order, repeats kept."""
    lower = text.lower()
    if len(lower) != len(text):
        lower = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    base = f"https://github.com/{repo}/pull/"
    found = sorted(_mentions(text, lower, None))
    return [(pos, url or base + str(number)) for pos, number, url in found]


def _mentions(
    text: str, lower: str, cap: int | None, heads: bool = True
) -> list[tuple[int, int, str]]:
    """Each PR mention: (position, number, url or "" for a bare number), unsorted; a list
    stops growing at ``cap`` (None: never). ``heads=False``: links only, no "PR 12"."""
    found: list[tuple[int, int, str]] = []  # (position, number, url or "")
    append = found.append
    if heads and "pr" in lower:
        _head_mentions(_PR_MENTIONS[0], text, lower, append)
    if heads and "request" in lower:  # a cheaper test than "pull": links hold "/pull/"
        _head_mentions(_PR_MENTIONS[1], text, lower, append)
    if cap is not None and len(found) > cap:
        # Which list numbers the cap drops depends on the order heads are met in: the
        # single scan in text order decides, as it always did.
        found = _capped_mentions(text, lower, cap)
        append = found.append
    if "github.com/" in lower:
        for m in _PR_LINK.finditer(lower):
            at = m.start()
            if at and (lower[at - 1].isalnum() or lower[at - 1] == "-"):
                continue  # "notgithub.com/…" is another host
            number = m.group(3)
            # Owner and name as written, with the "/" between them.
            repo_path = text[m.start(1) : m.end(2)]
            append((at, int(number), "https://github.com/" + repo_path + "/pull/" + number))
    return found


def _head_mentions(
    pattern: re.Pattern[str],
    text: str,
    lower: str,
    append: Callable[[tuple[int, int, str]], None],
) -> None:
    """Append each mention by a head of ``pattern`` and the list after it."""
    for m in pattern.finditer(lower):
        head_end = m.end(2)
        append((m.start(2), int(m.group(2)), ""))
        end = m.end()
        if end > head_end:
            if text[head_end:end] != lower[head_end:end]:
                # A capital ends a list: read it again on the text as written.
                rest = (_PR_LIST if m.group(1) else _PR_SLASHES).match(text, head_end)
                end = rest.end() if rest is not None else head_end
            for more in _LIST_NUMBER.finditer(lower, head_end, end):
                append((more.start(), int(more.group()), ""))


def _capped_mentions(text: str, lower: str, cap: int) -> list[tuple[int, int, str]]:
    """Head and list mentions as one scan in text order finds them, a list stopping at
    ``cap`` mentions found so far."""
    found: list[tuple[int, int, str]] = []
    append = found.append
    slashes = "/" in text
    for m in _PR_HEAD.finditer(lower):
        append((m.start(3), int(m.group(3)), ""))
        # A plural head starts a list; any head may start a "#1/#2" one.
        plural = m.group(1) or m.group(2)
        if plural or slashes:
            rest = (_PR_LIST if plural else _PR_SLASHES).match(text, m.end())
            for more in _LIST_NUMBER.finditer(text, m.end(), rest.end() if rest else 0):
                if len(found) >= cap:
                    break
                append((more.start(), int(more.group()), ""))
    return found


def named_count(text: str, repo: str, prs: PrMode = MENTIONS) -> int:
    """How many distinct PRs ``text`` names, past the cap on what an episode keeps (so a
    thread can say "the first 200 of 250")."""
    if not text or prs == "off":
        return 0
    lower = text.lower()
    if len(lower) != len(text):
        lower = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    base = f"https://github.com/{repo}/pull/"
    found = _mentions(text, lower, None, heads=prs == MENTIONS)
    return len({url or base + str(number) for _, number, url in found})


def named_past_cap(
    found: Sequence[PullRequestRef], text: str, repo: str, prs: PrMode = MENTIONS
) -> int:
    """``named_count`` when it is more than ``found`` (only at the cap can it be); else 0."""
    if len(found) < MAX_PULL_REQUESTS:
        return 0
    count = named_count(text, repo, prs)
    return count if count > len(found) else 0
