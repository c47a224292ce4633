"""``Renderer``: episodes → Block Kit messages (and plain text), wording in the templates."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, tzinfo
from pathlib import Path
from typing import Any, Protocol

from jinja2 import TemplateError, TemplateNotFound

from digests.decide.pr_news import PrNewsDay
from digests.errors import ConfigError
from digests.models import Episode, RecapEpisode
from digests.pulls import KEY_PRS, ranked_prs
from digests.render import blocks as b
from digests.render import layout, limits
from digests.render.environment import make_environment
from digests.render.escape import Mrkdwn, mrkdwn, oneline, to_plain
from digests.render.limits import Message
from digests.types import Notice


class _Show(Protocol):
    name: str
    repo: str


class _Settings(Protocol):
    """What ``Renderer.of`` reads of the settings (``config.settings.Settings``)."""

    @property
    def templates_dir(self) -> str | Path | None: ...
    @property
    def tz(self) -> tzinfo: ...
    @property
    def shows(self) -> Sequence[_Show]: ...


class Renderer:
    """Renders with the bundled templates, or with overrides from ``templates_dir``.

    Every message it returns is within Block Kit's limits (``limits.fit``); every value
    from a feed is mrkdwn-escaped by the environment.
    """

    def __init__(
        self,
        templates_dir: str | Path | None = None,
        tz: tzinfo = UTC,
        *,
        max_prs: int = 8,
        max_nearby: int = 5,
        max_lines: int = 20,
        repos: Mapping[str, str] | None = None,
    ) -> None:
        self.tz = tz
        # Each show's repository: a PR of another one is labelled owner/repo#n.
        self.repos = dict(repos or {})
        self.max_prs = max_prs
        self.max_nearby = max_nearby
        self.max_lines = max_lines
        self.env = make_environment(templates_dir, tz, self.repos)

    @classmethod
    def of(cls, settings: _Settings) -> Renderer:
        """The renderer the settings describe: their templates, timezone, shows' repositories."""
        return cls(
            settings.templates_dir,
            tz=settings.tz,
            repos={show.name: show.repo for show in settings.shows},
        )

    # -- generic -----------------------------------------------------------------------
    def script(self, template: str, **context: Any) -> str:
        """The template rendered to its layout script (see ``layout``)."""
        try:
            return self.env.get_template(template).render(**context)
        except TemplateError as exc:
            raise template_error(template, exc) from exc

    def render(self, template: str, *, button_value: str | None = None, **context: Any) -> Message:
        """Any template as one message within limits (the recap and the app use this)."""
        message = layout.build(
            self.script(template, **context), button_value=button_value, template=template
        )
        return limits.fit(message)

    def _macro(self, name: str, *args: Any) -> Mrkdwn:
        try:
            module = self.env.get_template("common.j2").module
            return Mrkdwn(getattr(module, name)(*args))
        except TemplateError as exc:
            raise template_error("common.j2", exc) from exc
        except AttributeError as exc:
            raise ConfigError(f"template common.j2: no macro {name}") from exc

    # -- notices --------------------------------------------------------------------------
    def notice(self, notice: Notice) -> Message:
        """A feed's "is failing" / "has recovered" line: its text carries feed-controlled words
        (an HTTP reason phrase, a Location header, a page's link), so it is escaped in the
        fallback ``text`` as in the block, and cut to the section limit."""
        return self.render("notice.j2", notice=notice)

    # -- episodes -------------------------------------------------------------------------
    def digest(self, episode: Episode, *, buttons: bool = True) -> Message:
        """The channel post: headline, meta line, summary, key PRs, nearby, buttons."""
        return self.render(
            "digest.j2",
            button_value=b.button_value(episode.show, episode.guid),
            episode=episode,
            buttons=buttons,
            max_prs=self.max_prs,
            key_prs=KEY_PRS,
            max_nearby=self.max_nearby,
        )

    def pr_news(self, episode: Episode, days: Sequence[PrNewsDay]) -> list[Message]:
        """One thread reply per day of PR news (``digests.decide.pr_news``)."""
        return [self.render("pr_news.j2", episode=episode, day=day) for day in days]

    def digest_text(self, episode: Episode) -> str:
        """The same digest as readable plain text (the CLI's ``--format text``)."""
        return message_to_text(self.digest(episode, buttons=False))

    def thread_reply(self, episode: Episode) -> list[Message]:
        """What the digest could not show, under it: the PRs past its "and N more", the
        chapters (with the PRs named in each), then the transcript excerpt when it says more
        than the summary. As many messages as it takes,
        each within limits; nothing to add gives ``[]`` (no reply at all)."""
        return self._thread(
            episode,
            # With GitHub details the digest shows the few key PRs: the thread lists all.
            first=0 if episode.pr_info else min(self.max_prs, len(episode.pull_requests)),
            transcript=self.threads_transcript(episode),
            chapters=True,
        )

    def threads_transcript(self, episode: Episode) -> bool:
        """Whether ``thread_reply`` carries the transcript excerpt: when it says more than
        the summary and the PRs' sentences."""
        return says_more(
            episode.transcript, episode.summary, [pr.context for pr in episode.pull_requests]
        )

    def key_prs(self, episode: Episode, *, in_thread: bool = False) -> list[Message]:
        """Every PR with its whole sentence, then the transcript excerpt: the "Key PRs"
        button's answer. ``[]`` when the episode has neither.

        ``in_thread``: the answer goes under a digest posted with its thread reply
        (``thread_replies``); the transcript is there already when ``thread_reply`` put it
        there, and is not posted again."""
        transcript = bool(episode.transcript.strip()) and not (
            in_thread and self.threads_transcript(episode)
        )
        return self._thread(episode, first=0, transcript=transcript)

    def _thread(
        self, episode: Episode, *, first: int, transcript: bool, chapters: bool = False
    ) -> list[Message]:
        script = self.script(
            "thread.j2",
            episode=episode,
            prs=episode.pull_requests[first:],
            first=first,
            transcript=transcript,
            chapters=chapters,
        )
        message = layout.build(script, template="thread.j2")
        if not message["blocks"]:
            return []
        return layout.paginate(message["blocks"], message["text"])

    def episode_list(
        self,
        episodes: Sequence[Episode | RecapEpisode],
        title: str,
        *,
        empty: str | None = None,
        show_names: bool = False,
    ) -> Message:
        """A header and one line per episode (at most ``max_lines``, then "and N more");
        ``show_names``: each line starts with its show (a list that spans several)."""
        return self.render(
            "list.j2",
            episodes=list(episodes),
            title=title,
            empty=empty,
            max_lines=self.max_lines,
            show_names=show_names,
        )

    def pr_lines(self, episode: Episode, limit: int = 3) -> Mrkdwn:
        """The episode's ``limit`` most important PRs as GitHub describes them, one line
        each (the unfurl, App Home); empty when no details are attached."""
        if not episode.pr_info:
            return Mrkdwn("")
        ranked = ranked_prs(episode)[:limit]
        return Mrkdwn(
            "\n".join(
                self._macro("pr_detail_line", pr, info, 0, episode.show) for pr, info in ranked
            )
        )

    def episode_line(self, episode: Episode | RecapEpisode, *, show_name: bool = False) -> Mrkdwn:
        """``date · <url|headline> · 2:31 · 3 PRs`` as mrkdwn, for lists built elsewhere;
        ``show_name`` puts ``*Show* · `` first."""
        line = oneline(self._macro("episode_line", episode))
        return Mrkdwn(f"*{mrkdwn(episode.show)}* · {line}" if show_name else line)


# Where a sentence ends: . ! ? … (and closing quotes or brackets) before a space.
_SENTENCE_END_RE = re.compile(r"(?<=[.!?…])[\"')\]’”]*\s+")
_QUOTES = "\"'“”‘’()[] "


def says_more(text: str, than: str, contexts: Sequence[str] = ()) -> bool:
    """Whether ``text`` adds anything to ``than`` and the PRs' ``contexts``: feeds often
    repeat the description as their show notes, or a transcript is only the sentences the
    digest already quotes for its PRs, and a copy of those under the digest is noise.

    It adds nothing when it is found whole in one of them, or when every sentence of it is
    (case and spacing aside, and the sentence's final stop, which a quote may drop)."""
    words = oneline(text).casefold()
    if not words:
        return False
    known = [oneline(t).casefold() for t in (than, *contexts) if t.strip()]
    if any(words in k for k in known):
        return False
    sentences = (
        s.strip(_QUOTES).rstrip(".!?…").strip(_QUOTES) for s in _SENTENCE_END_RE.split(words)
    )
    return any(s and not any(s in k for k in known) for s in sentences)


def template_error(template: str, exc: TemplateError) -> ConfigError:
    """One line naming the file (an imported one, when the fault is there) and the line."""
    if isinstance(exc, TemplateNotFound):
        return ConfigError(f"template {template}: {exc.name} not found")
    where = getattr(exc, "name", None) or template
    line = getattr(exc, "lineno", None)
    place = f"{where}, line {line}" if line else where
    return ConfigError(f"template {place}: {exc.message or type(exc).__name__}")


def message_to_text(message: Message) -> str:
    """A message's blocks as plain text: header, sections, context lines; links spelled out."""
    out: list[str] = []
    for block in message["blocks"]:
        kind = block.get("type")
        if kind == "header":
            out.append(block["text"]["text"])
            out.append("")
        elif kind == "section":
            if "text" in block:
                out.append(to_plain(block["text"]["text"]))
            for field in block.get("fields", []):
                out.append(to_plain(field["text"]))
            out.append("")
        elif kind == "context":
            out.append(" · ".join(to_plain(e.get("text", "")) for e in block["elements"]))
            out.append("")
        elif kind == "divider":
            out.append("")
    return "\n".join(out).strip() + "\n"
