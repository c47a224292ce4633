"""How many times the recap post is rendered: once for a week that fits, a few
for one that overflows, and always the post the first fitting plan gives."""

from __future__ import annotations

from typing import Any

import pytest
from jinja2 import Environment

import digests.render.recap as recap_module
from digests.recap import aggregate
from digests.render.limits import Message
from digests.render.renderer import Renderer
from tests.test_recap_render import SHOWS, UTC_TZ, big_week, sample_recap


def _count_posts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    script = recap_module._script

    def counting(env: Environment, name: str, **values: Any) -> Message:
        if name == "recap.j2":
            calls.append(len(values["episodes"]))
        return script(env, name, **values)

    monkeypatch.setattr(recap_module, "_script", counting)
    return calls


def test_a_week_that_fits_is_rendered_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_posts(monkeypatch)
    assert recap_module.render_recap(sample_recap(), Renderer()) is not None
    assert len(calls) == 1


@pytest.mark.parametrize("headline_len", [40, 140, 200])
def test_an_overflowing_week_takes_a_few_renders_and_the_first_plan_that_fits(
    monkeypatch: pytest.MonkeyPatch, headline_len: int
) -> None:
    recap = aggregate(
        big_week(headline_len=headline_len), year=2026, week=41, tz=UTC_TZ, shows=SHOWS
    )
    env = Renderer().env
    calls = _count_posts(monkeypatch)
    rendered = recap_module.render_recap(recap, env, thread=False)
    assert rendered is not None
    assert len(calls) <= 6
    # The reference: every plan in order until one fits.
    monkeypatch.setattr(recap_module, "_best_plan", _exhaustive)
    assert recap_module.render_recap(recap, env, thread=False) == rendered


def _exhaustive(plans: Any, post_for: Any) -> tuple[int, Message]:
    for index, plan in enumerate(plans):
        post = post_for(plan)
        if recap_module._fits(post):
            return index, post
    return len(plans) - 1, post_for(plans[-1])
