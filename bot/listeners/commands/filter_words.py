"""A channel's filter in the words of subscribe, list and the announcement (mrkdwn). Pure.

Words and phrases only: ``“fsdp”, “dtensor”``. A filter of only ``-`` terms posts
everything else, and says so. Any other: the filter read out (``mentions “inductor”, must
mention “cuda”, never “rocm”``), so a sign is never shown as a word to mention.
"""

from __future__ import annotations

from collections.abc import Sequence

from digests.filters import Filter
from digests.render import escape


def quoted(term: str) -> str:
    return f"“{escape.mrkdwn(term)}”"


def _joined(terms: Sequence[str], last: str) -> str:
    shown = [quoted(t) for t in terms]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + last + shown[-1]


def rule(chosen: Filter) -> str:
    """``mentions “a” or “b”, must mention “c”, never “d”``."""
    parts: list[str] = []
    if chosen.any_of:
        parts.append("mentions " + _joined(chosen.any_of, " or "))
    if chosen.all_of:
        parts.append("must mention " + _joined(chosen.all_of, " and "))
    if chosen.none_of:
        parts.append("never " + _joined(chosen.none_of, " or "))
    return ", ".join(parts)


def filter_text(terms: Sequence[str], *, plain: str, rule_of: str, only_excludes: str) -> str:
    """``terms`` in the template that fits them: ``plain`` ({keywords}) for words and
    phrases, ``only_excludes`` ({terms}) for ``-`` terms only, else ``rule_of`` ({rule});
    no terms, nothing."""
    chosen = Filter.from_terms(terms, strict=False)
    if chosen.empty:
        return ""
    if not (chosen.all_of or chosen.none_of):
        return plain.format(keywords=", ".join(quoted(t) for t in chosen.any_of))
    if not (chosen.any_of or chosen.all_of):
        return only_excludes.format(terms=_joined(chosen.none_of, " or "))
    return rule_of.format(rule=rule(chosen))
