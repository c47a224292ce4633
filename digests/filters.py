"""Channel filters: which episodes a subscription wants, and why one was skipped. Pure.

A filter is what people type after the show names: words and ``"quoted phrases"`` (any of
them is enough), ``+word`` (must be there) and ``-word`` (must not). Terms match at the
start of a word, case-insensitively, in the episode's headline, summary and transcript,
plus any other text the caller knows (PR titles and labels): ``kernel`` finds "kernels",
``mps`` does not find "jumps". No terms at all: every episode.

``Filter.check`` says why as well as whether, so ``preview`` and ``why`` can tell people
which term decided; ``describe`` shows the filter back in words.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

from digests.models import Episode

# A term matches at the start of a word, as keyword filters always have.
_WORD_START = r"(?<!\w)"


class Verdict(StrEnum):
    MATCHED = "matched"
    EXCLUDED = "excluded"  # a -term was there
    MISSING_REQUIRED = "missing_required"  # a +term was not
    NO_TERM = "no_term"  # none of the any-of terms was there


@dataclass(frozen=True)
class Check:
    """A filter's answer for one episode: whether, and the term that decided it."""

    verdict: Verdict
    term: str | None = None

    @property
    def matched(self) -> bool:
        return self.verdict is Verdict.MATCHED


class FilterSyntaxError(ValueError):
    """Unbalanced quotes or an empty ``+``/``-`` term; the message says which."""


@dataclass(frozen=True)
class Filter:
    any_of: tuple[str, ...] = ()
    all_of: tuple[str, ...] = ()
    none_of: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Filter:
        """``inductor "flex attention" +cuda -rocm`` → a Filter; commas separate too."""
        try:
            tokens = shlex.split(text.replace(",", " "), posix=True)
        except ValueError as exc:
            raise FilterSyntaxError(f"unbalanced quotes in {text!r}") from exc
        return cls.from_terms(tokens)

    @classmethod
    def from_terms(cls, terms: Iterable[str], *, strict: bool = True) -> Filter:
        """Terms as typed one by one (or as ``terms()`` writes them): ``+x`` required,
        ``-x`` excluded, anything else one of the any-of words or phrases.

        ``strict=False`` reads terms from before they were checked (the config file's
        keywords, rows migrated from the old keyword list): a sign on nothing is dropped
        instead of refused, since it asks for nothing.
        """
        buckets: dict[str, list[str]] = {"": [], "+": [], "-": []}
        for raw in terms:
            term = " ".join(raw.split())
            sign = term[:1] if term[:1] in ("+", "-") else ""
            word = _strip_punctuation(term[len(sign) :])
            if not sign and word[:1] in ("+", "-"):  # "(-rocm)": the sign inside brackets
                sign, word = word[0], _strip_punctuation(word[1:])
            if not word and sign and strict:
                raise FilterSyntaxError(f"{term!r} needs a word after {sign}")
            _add(buckets[sign], word)
        return cls(tuple(buckets[""]), tuple(buckets["+"]), tuple(buckets["-"]))

    @classmethod
    def from_keywords(cls, keywords: Sequence[str]) -> Filter:
        """Today's keyword lists: any of them, each as it was stored (no +/- reading)."""
        words: list[str] = []
        for keyword in keywords:
            _add(words, " ".join(keyword.split()))
        return cls(any_of=tuple(w for w in words if w))

    @property
    def empty(self) -> bool:
        return not (self.any_of or self.all_of or self.none_of)

    def terms(self) -> tuple[str, ...]:
        """The filter as terms that ``from_terms`` reads back to the same filter (an
        any-of term never starts with a sign: ``from_terms`` reads one as its kind)."""
        return (
            *self.any_of,
            *(f"+{t}" for t in self.all_of),
            *(f"-{t}" for t in self.none_of),
        )

    def unparse(self) -> str:
        """As people type it: quoted where a term has a space."""
        return " ".join(_quoted(t) for t in self.terms())

    def check(self, episode: Episode, extra: Iterable[str] = ()) -> Check:
        haystack = "\n".join(
            (episode.headline, episode.summary, episode.transcript, *extra)
        ).casefold()
        for term in self.none_of:
            if self._pattern(term).search(haystack):
                return Check(Verdict.EXCLUDED, term)
        for term in self.all_of:
            if not self._pattern(term).search(haystack):
                return Check(Verdict.MISSING_REQUIRED, term)
        if self.any_of and not any(self._pattern(t).search(haystack) for t in self.any_of):
            return Check(Verdict.NO_TERM)
        found = next((t for t in self.any_of if self._pattern(t).search(haystack)), None)
        return Check(Verdict.MATCHED, found)

    def matches(self, episode: Episode, extra: Iterable[str] = ()) -> bool:
        return self.check(episode, extra).matched

    def describe(self) -> str:
        """The filter in words, for replies: "mentions inductor or “flex attention”, …"."""
        if self.empty:
            return "every episode"
        parts: list[str] = []
        if self.any_of:
            parts.append("mentions " + _either(self.any_of))
        if self.all_of:
            parts.append("must mention " + _both(self.all_of))
        if self.none_of:
            parts.append("never " + _either(self.none_of))
        return ", ".join(parts)

    def _pattern(self, term: str) -> re.Pattern[str]:
        return self._patterns[term]

    @cached_property
    def _patterns(self) -> dict[str, re.Pattern[str]]:
        return {
            term: re.compile(_WORD_START + r"\s+".join(map(re.escape, term.casefold().split())))
            for term in {*self.any_of, *self.all_of, *self.none_of}
        }


def _add(bucket: list[str], term: str) -> None:
    if term and term.casefold() not in {t.casefold() for t in bucket}:
        bucket.append(term)


def _strip_punctuation(term: str) -> str:
    # "fsdp," and "(dtensor)" are the words people meant; inner joiners stay (all-gather).
    return term.strip(" \t\"'“”‘’.,;:!?()[]{}")


def _quoted(term: str) -> str:
    sign = term[0] if term[0] in "+-" else ""
    body = term[len(sign) :]
    return f'{sign}"{body}"' if " " in body else term


def _show(term: str) -> str:
    return f"“{term}”" if " " in term else term


def _either(terms: Sequence[str]) -> str:
    shown = [_show(t) for t in terms]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]


def _both(terms: Sequence[str]) -> str:
    shown = [_show(t) for t in terms]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
