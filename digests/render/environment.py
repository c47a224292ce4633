"""The Jinja2 environment for Slack templates: every ``{{ value }}`` is mrkdwn-escaped.

HTML autoescaping is wrong for Slack (``"`` would show as ``&#34;``), so ``finalize`` escapes
each value for mrkdwn and hands Jinja a ``Mrkdwn`` (a ``Markup``), which Jinja's own
autoescape then leaves alone. Values that are already ``Mrkdwn`` — ``link()``, the
``pr_link`` and ``truncate_words`` filters, a macro's output — pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from importlib import resources
from pathlib import Path
from types import CodeType
from typing import Any

from jinja2 import (
    BaseLoader,
    BytecodeCache,
    ChoiceLoader,
    Environment,
    FileSystemLoader,
    PackageLoader,
    StrictUndefined,
    nodes,
)
from jinja2.bccache import Bucket
from jinja2.compiler import CodeGenerator, Frame

from digests.extract.timings import format_offset
from digests.pulls import ranked_prs, with_info
from digests.render.escape import Mrkdwn, link, mrkdwn, oneline, safe_url, truncate
from digests.render.prs import pr_label, pr_repo

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def format_duration(seconds: int | float | None) -> str:
    """151 → ``2:31``, 3723 → ``1:02:03``; unknown or negative → ``""``."""
    if seconds is None or seconds < 0:
        return ""
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


def format_date(value: datetime | None, tz: tzinfo = UTC) -> str:
    """``Mon 5 Oct 2026`` in ``tz``; English whatever the process locale is."""
    if value is None:
        return ""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    local = value.astimezone(tz)
    return f"{_DAYS[local.weekday()]} {local.day} {_MONTHS[local.month - 1]} {local.year}"


def _finalize(value: Any) -> Any:
    if value is None:
        return Mrkdwn("")
    return mrkdwn(value)


def _truncate_words(value: Any, limit: int = 200) -> Mrkdwn:
    """Escape, then cut at a word: the limit holds for the escaped text Slack counts."""
    return Mrkdwn(truncate(mrkdwn(value), limit))


def _pr_filters(repos: Mapping[str, str]) -> dict[str, Callable[..., Any]]:
    """``pr_link`` (``<https://github.com/o/r/pull/123|#123>``) and ``pr_label`` (``#123``,
    plain) for a ``PullRequestRef`` (or anything with ``number`` and ``url``) of an episode
    of ``show``: ``owner/repo#123`` when the PR is another repository's than the show's."""

    def label(pr: Any, show: str | None = None, full: bool = False) -> str:
        url = getattr(pr, "url", None)
        if full and (repo := pr_repo(url)) is not None:  # the number alone is ambiguous
            return f"{repo}#{pr.number}"
        return pr_label(pr.number, url, repos.get(show or ""))

    def pr_link(pr: Any, show: str | None = None, full: bool = False) -> Mrkdwn:
        return link(getattr(pr, "url", None), label(pr, show, full))

    return {"pr_link": pr_link, "pr_label": label}


def pr_time(pr: Any, episode: Any) -> Mrkdwn:
    """`` · ▶ 1:23`` for a PR the episode's timed transcript names, linked to the audio at
    that time (``#t=83``); empty when the episode has no timings for it."""
    url = getattr(pr, "url", None)
    at = next((t.at for t in getattr(episode, "pr_times", ()) if t.url == url), None)
    if at is None:
        return Mrkdwn("")
    return Mrkdwn(" · " + str(time_link(episode, at)))


def time_link(episode: Any, at: int) -> Mrkdwn:
    """``▶ 1:23`` linked to the episode's audio at that time (plain without audio)."""
    audio = safe_url(getattr(episode, "audio_url", None))
    target = f"{audio.partition('#')[0]}#t={at}" if audio else None
    return link(target, "▶ " + format_offset(at))


def chapters_with_prs(episode: Any) -> list[tuple[Any, list[Any]]]:
    """Each chapter with the PRs first named inside it (by the timed transcript)."""
    chapters = list(getattr(episode, "chapters", ()))
    times = {t.url: t.at for t in getattr(episode, "pr_times", ())}
    out: list[tuple[Any, list[Any]]] = []
    for i, chapter in enumerate(chapters):
        end = chapters[i + 1].start if i + 1 < len(chapters) else None
        prs = [
            pr
            for pr in episode.pull_requests
            if (at := times.get(pr.url)) is not None
            and at >= chapter.start
            and (end is None or at < end)
        ]
        out.append((chapter, prs))
    return out


@dataclass(frozen=True)
class PrGroup:
    """PRs named side by side in one sentence, shown on one line with that sentence once.
    ``continued``: a further line of the same sentence (past ``most``), which a digest or
    thread shows without the sentence it just quoted."""

    prs: tuple[Any, ...]
    context: str
    continued: bool = False


def pr_groups(
    prs: Iterable[Any], most: int = 5, *, key: Callable[[Any], Hashable] | None = None
) -> list[PrGroup]:
    """Consecutive PRs with the same context, grouped (order of first mention kept).

    At most ``most`` to a line, so a line never grows long enough to be cut short and lose
    a link. ``key``: what else must be equal to share a line (the recap: the same episodes).
    """
    groups: list[PrGroup] = []
    last: Hashable = None
    for pr in prs:
        context = getattr(pr, "context", "") or ""
        same = key(pr) if key is not None else context
        joins = bool(groups) and bool(context) and groups[-1].context == context and same == last
        if joins and len(groups[-1].prs) < most:
            groups[-1] = PrGroup((*groups[-1].prs, pr), context, groups[-1].continued)
        else:
            groups.append(PrGroup((pr,), context, joins))
        last = same
    return groups


def _join(values: Iterable[Any], separator: str = "") -> Mrkdwn:
    # Jinja's own join HTML-escapes plain items next to Markup ones; ours escapes for Slack.
    return Mrkdwn(separator).join(values)


class _MrkdwnCodeGenerator(CodeGenerator):
    """``a ~ b`` joins with Slack escaping: Jinja's own ``markup_join`` HTML-escapes the plain
    side whenever the other is safe (a link), turning ``"`` into ``&#34;``."""

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        if frame.eval_ctx.volatile or not frame.eval_ctx.autoescape:
            super().visit_Concat(node, frame)
            return
        self.write("environment.mrkdwn_join((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")

    # ``{{ value }}`` is ``escape(finalize(value))``; our finalize already returns escaped
    # ``Mrkdwn``, so Jinja's ``escape`` only copied each value into a new ``Markup`` (a week's
    # recap outputs over a thousand): the finalized value is output as it is.
    def _output_child_pre(self, node: nodes.Expr, frame: Frame, finalize: Any) -> None:
        if self._finalize_escapes(frame, finalize):
            self.write(finalize.src)
            return
        super()._output_child_pre(node, frame, finalize)

    def _output_child_post(self, node: nodes.Expr, frame: Frame, finalize: Any) -> None:
        if self._finalize_escapes(frame, finalize):
            self.write(")")
            return
        super()._output_child_post(node, frame, finalize)

    def _finalize_escapes(self, frame: Frame, finalize: Any) -> bool:
        return bool(
            frame.eval_ctx.autoescape
            and not frame.eval_ctx.volatile
            and self.environment.finalize is _finalize
            and finalize.src == "environment.finalize("
        )


class MrkdwnEnvironment(Environment):
    """An ``Environment`` whose every output path escapes for Slack mrkdwn, not HTML."""

    code_generator_class = _MrkdwnCodeGenerator

    @staticmethod
    def mrkdwn_join(values: Iterable[Any]) -> Mrkdwn:
        return Mrkdwn("").join(values)


class CompiledTemplates(BytecodeCache):
    """Templates compiled once and shared by every environment ``make_environment`` makes.

    Each new environment compiled each template it used again (every one of them), and
    environments are made per poll cycle, per one-shot command and per app. Jinja's
    own bytecode cache hook, holding the code objects in memory: a bucket is keyed by the
    template's name and file and carries the source's checksum, so an override edited on
    disk is compiled anew. Every environment it serves has the same settings (this
    module's), which Jinja's key does not include."""

    def __init__(self, size: int = 256) -> None:
        self._code: dict[str, tuple[str, CodeType]] = {}
        self._size = size

    def load_bytecode(self, bucket: Bucket) -> None:
        found = self._code.get(bucket.key)
        if found is not None and found[0] == bucket.checksum:
            bucket.code = found[1]  # code objects are immutable: shared as they are

    def dump_bytecode(self, bucket: Bucket) -> None:
        if bucket.code is None:
            return
        if len(self._code) >= self._size and bucket.key not in self._code:
            self._code.pop(next(iter(self._code)))  # the oldest: templates seldom change
        self._code[bucket.key] = (bucket.checksum, bucket.code)


_COMPILED = CompiledTemplates()


def default_templates_dir() -> Path:
    return Path(str(resources.files("digests.render").joinpath("templates")))


def make_environment(
    templates_dir: str | Path | None = None,
    tz: tzinfo = UTC,
    repos: Mapping[str, str] | None = None,
) -> Environment:
    """A fresh environment: templates from ``templates_dir`` first (overrides), then the
    bundled ``digests/render/templates``. ``repos``: each show's repository (show name →
    owner/repo),
    so PRs of other repositories are labelled with theirs."""
    loaders: list[BaseLoader] = []
    if templates_dir is not None:
        loaders.append(FileSystemLoader(str(templates_dir)))
    bundled = default_templates_dir()
    loaders.append(FileSystemLoader(str(bundled)) if bundled.is_dir() else PackageLoader("digests"))
    env = MrkdwnEnvironment(
        loader=ChoiceLoader(loaders),
        autoescape=True,
        finalize=_finalize,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        bytecode_cache=_COMPILED,
    )
    env.filters.update(
        mrkdwn=mrkdwn,
        duration=format_duration,
        date=lambda value: format_date(value, tz),
        truncate_words=_truncate_words,
        # Not copied: a Renderer's ``repos`` learns the shows added from Slack as they come.
        **_pr_filters(repos if repos is not None else {}),
        pr_groups=pr_groups,
        pr_time=pr_time,
        chapters_with_prs=chapters_with_prs,
        time_link=time_link,
        ranked_prs=ranked_prs,
        with_info=with_info,
        oneline=oneline,
        join=_join,
        e=mrkdwn,
        escape=mrkdwn,
        forceescape=lambda value: mrkdwn(str(value)),
    )
    # These build HTML, which Slack would show as text or, worse, read as its own markup.
    for name in ("urlize", "xmlattr"):
        env.filters.pop(name, None)
    env.tests["linkable"] = lambda value: safe_url(value) is not None
    env.globals.update(link=link)
    return env
