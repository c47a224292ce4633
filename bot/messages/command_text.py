"""Arguments of an `/episodes` command written back as text that ``parse_command`` reads
back to the same command (for hints and DMs that say what to type). Pure; no wording."""

from __future__ import annotations

from collections.abc import Sequence


def command_arg(value: str) -> str:
    """One argument of a command as ``parse_command`` reads it back: quoted when it has
    spaces, a filter term's sign before the quotes (``+"flex attention"``)."""
    if len(value.split()) <= 1:
        return value
    sign = value[0] if value[0] in "+-" else ""
    return f'{sign}"{value[len(sign) :]}"'


def subscribe_keywords(keywords: Sequence[str]) -> str:
    """``keywords: …`` as ``parse_command`` reads it: every word after it is a keyword,
    even one that names a show; ``daily`` last is quoted (bare, it would be the mode)."""
    args = [command_arg(k) for k in keywords]
    if args and args[-1].casefold() == "daily":
        args[-1] = f'"{args[-1]}"'
    return f"keywords: {' '.join(args)}" if keywords else ""


# Bare, these words after a show are read as subscribe's own (`daily 9:30`, `recap off`).
_SUBSCRIBE_WORDS = frozenset({"daily", "recap", "keywords:"})


def subscribe_args(show: str, keywords: Sequence[str] = (), shows: Sequence[str] = ()) -> str:
    """The arguments of the ``subscribe`` that makes exactly this subscription (without
    the ``subscribe``): ``parse_command`` reads them back to the same show and keywords.

    A keyword that is a word of one of ``shows`` or one of subscribe's own words would be
    read as a show or a mode: then every keyword goes after ``keywords:``."""
    reserved = _SUBSCRIBE_WORDS | {w.casefold() for name in shows for w in name.split()}
    if any(k.casefold() in reserved for k in keywords):
        return f"{command_arg(show)} {subscribe_keywords(keywords)}"
    return " ".join(command_arg(arg) for arg in (show, *keywords))
