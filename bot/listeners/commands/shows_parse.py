"""`/episodes add-show <feed or page URL> [owner/repo]` and `remove-show <name>`. Pure.

Slack sends a typed link as ``<https://…>`` (or ``<https://…|label>``); both forms, and a
plain URL, are read. Whether the URL may be fetched at all is ``digests.sources.added_feeds``'s
business; here it must only look like one http(s) link.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.listeners.commands.model import CommandError, quote_value
from bot.listeners.commands.names import QUOTES, fold
from bot.messages.basics import COMMAND, MAX_TEXT
from bot.messages.errors import EXTRA_ARGS, TOO_LONG
from bot.messages.shows import (
    ADD_SHOW_NEED_URL,
    ADD_SHOW_NOT_REPO,
    ADD_SHOW_NOT_URL,
    ADD_SHOW_URL_LONG,
    REMOVE_SHOW_NEED_NAME,
)
from digests.render.escape import unescape
from digests.sources.added_feeds import MAX_URL

SHOW_WORDS = frozenset({"add-show", "remove-show"})
_REPO_RE = re.compile(r"^[\w.-]+/[\w.-]+$")
_LINK_RE = re.compile(r"^https?://\S+$", re.IGNORECASE)
_MAX_REPO = 200


@dataclass(frozen=True)
class AddShow:
    url: str
    repo: str | None = None  # None: the config file's default repository


@dataclass(frozen=True)
class RemoveShow:
    name: str


ShowCommand = AddShow | RemoveShow


def head_word(text: str) -> str | None:
    """``add-show`` or ``remove-show`` when the text is one of them, else None."""
    words = text.split()
    if not words:
        return None
    head = fold(words[0]).replace("_", "-")
    return head if head in SHOW_WORDS else None


def _link(word: str) -> str | None:
    if word.startswith("<") and word.endswith(">"):
        word = word[1:-1].split("|", 1)[0].strip()
    return word if _LINK_RE.match(word) else None


def parse_show_command(text: str) -> ShowCommand:
    """The command, or a one-line ``CommandError`` with the subcommand's usage."""
    limit = MAX_TEXT + MAX_URL  # a feed URL may be long: room for one, and the rest
    if len(text) > limit:
        raise CommandError(
            TOO_LONG.format(length=f"{len(text):,}", command=COMMAND, limit=limit)
        )
    head = head_word(text)
    args = text.split()[1:]
    if head == "remove-show":
        return RemoveShow(_parse_name(args))
    return _parse_add(args)


def _parse_add(args: Sequence[str]) -> AddShow:
    if not args:
        raise CommandError(ADD_SHOW_NEED_URL, "add-show")
    url = _link(args[0])
    if url is None:
        raise CommandError(ADD_SHOW_NOT_URL.format(value=quote_value(args[0])), "add-show")
    url = unescape(url)
    if len(url) > MAX_URL:
        raise CommandError(ADD_SHOW_URL_LONG.format(limit=MAX_URL), "add-show")
    if len(args) > 2:
        raise CommandError(
            EXTRA_ARGS.format(value=quote_value(args[2]), command="add-show"), "add-show"
        )
    repo = None
    if len(args) == 2:
        repo = (_link(args[1]) or args[1]).removeprefix("https://github.com/").strip("/")
        if not _REPO_RE.match(repo) or len(repo) > _MAX_REPO:
            raise CommandError(ADD_SHOW_NOT_REPO.format(value=quote_value(args[1])), "add-show")
    return AddShow(url, repo)


def _parse_name(args: Sequence[str]) -> str:
    name = " ".join(args).strip(QUOTES).strip()
    if not name:
        raise CommandError(REMOVE_SHOW_NEED_NAME, "remove-show")
    return unescape(name)


__all__ = ["SHOW_WORDS", "AddShow", "RemoveShow", "ShowCommand", "head_word", "parse_show_command"]
