"""Rendering: Jinja2 templates → Block Kit messages that Slack accepts, feed text escaped.

- ``Message`` — ``{"text": str, "blocks": list[dict]}``; ``text`` is always set (fallback).
- ``Renderer(templates_dir: str | None = None, tz: tzinfo = UTC)`` with
  ``digest(episode, *, buttons=True) -> Message``   the channel post
  ``digest_text(episode) -> str``                   plain text (CLI ``--format text``)
  ``thread_reply(episode) -> list[Message]``        what the digest cut + a new transcript;
                                                    ``[]``: nothing to add, no reply
  ``key_prs(episode) -> list[Message]``             every PR + transcript (the button)
  ``episode_list(episodes, title, *, empty=None) -> Message``  one line each
  ``episode_line(episode) -> Mrkdwn``               date · <url|headline> · 2:31 · 3 PRs
  ``notice(notice) -> Message``                     a feed's failing / recovered line
  ``render(template, **context) -> Message``         any template, within limits
- ``escape.mrkdwn(text)``, ``escape.link(url, label)``, ``escape.truncate(text, limit)``,
  ``escape.plain(text)``, ``escape.to_plain(mrkdwn)``; ``blocks`` — small builders
  (header, section, context, …).
- ``prs.pr_label(number, url, repo)`` — ``#n``, or ``owner/repo#n`` for a PR of another
  repository than the show's ``repo`` (``Renderer(repos={show: repo})`` does it everywhere).
- ``limits`` — Block Kit limits and ``fit(message)`` that enforces them."""
