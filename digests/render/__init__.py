"""Rendering: Jinja2 templates → Block Kit messages that Slack accepts, feed text escaped.

CONTRACT (implemented by the render work):

- ``Message`` — ``{"text": str, "blocks": list[dict]}``; ``text`` is always set (fallback).
- ``Renderer(templates_dir: str | None = None, tz: tzinfo = UTC)`` with
  ``digest(episode, *, buttons=True) -> Message``   the channel post
  ``digest_text(episode) -> str``                   plain text (CLI ``--format text``)
  ``thread_reply(episode) -> Message``              full PR list + transcript excerpt
  ``episode_list(episodes, title) -> Message``      one line each: date · headline · dur · PRs
- ``escape.mrkdwn(text)``, ``escape.link(url, label)``, ``escape.truncate(text, limit)``.
- ``limits`` — Block Kit limits and ``fit(message)`` that enforces them.
"""
