"""The command line through ``bot.cli.main(argv, stdout)`` in this process (``run_cli``), and
a few smoke tests of the real thing: ``python -m bot``, the ``digestbot`` script, exit codes.

Feeds come from the loopback feed server, Slack is the loopback fake, the store is the
``db_url`` fixture (SQLite, and PostgreSQL where configured).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from slack_sdk.models.blocks import Block

from bot.service import recap_week
from tests.feedserver import FeedServer
from tests.fixtures.cli import ROOT, one_line_error, run_cli, run_cli_process
from tests.slackfake import SlackFake

DATA = Path(__file__).resolve().parent / "data"
EXAMPLE_FEED = ROOT / "config" / "example-feed.xml"

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
<!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">]>
<rss version="2.0"><channel><title>&lol4;</title></channel></rss>"""

XXE = b"""<?xml version="1.0"?>
<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>
<rss version="2.0"><channel><title>PyTorch</title><item><title>&x;</title>
<guid>x</guid><pubDate>Mon, 05 Oct 2026 13:00:40 GMT</pubDate></item></channel></rss>"""

NEW_ITEM = b"""
    <item>
      <title>PyTorch: Precompile Groundwork</title>
      <guid isPermaLink="false">pytorch-2026-10-06</guid>
      <link>https://example.invalid/pytorch/2026-10-06</link>
      <pubDate>Tue, 06 Oct 2026 13:00:00 GMT</pubDate>
      <itunes:duration>PT3M2S</itunes:duration>
      <description>Ahead-of-time compilation starts; PR 199801 adds the cache.</description>
    </item>"""


def write_config(tmp_path: Path, feeds: dict[str, str], channels: str = "") -> Path:
    shows = "".join(
        f'[[shows]]\nname = "{name}"\nfeed = "{url}"\nrepo = "pytorch/pytorch"\n\n'
        for name, url in feeds.items()
    )
    default_channels = "".join(
        f'[[channels]]\nid = "C0{i}CHANNEL"\nshows = ["{name}"]\n\n' for i, name in enumerate(feeds)
    )
    path = tmp_path / "digestbot.toml"
    path.write_text(f'timezone = "UTC"\n\n{shows}{channels or default_channels}')
    return path


# -- parse ------------------------------------------------------------------------------------


def test_parse_json_from_a_feed_url(feed_server: FeedServer) -> None:
    url = feed_server.route("/feed.xml", EXAMPLE_FEED.read_bytes(), etag='"v1"')
    result = run_cli("parse", url, "--json")
    assert result.returncode == 0, result.stderr
    episodes = json.loads(result.stdout)
    assert [e["guid"] for e in episodes][:2] == ["pytorch-2026-10-05", "pytorch-2026-10-02"]
    first = episodes[0]
    expected_keys = {
        "guid", "show", "title", "headline", "summary", "published_at", "duration_seconds",
        "url", "audio_url", "pull_requests", "nearby",
    }  # fmt: skip
    assert expected_keys <= set(first)
    assert first["show"] == "PyTorch"
    assert first["headline"] == "All-Gather Showdown and Stack-Aware Merges"
    assert first["title"].startswith("PyTorch: ")
    assert first["published_at"] == "2026-10-05T13:00:40Z"
    assert first["duration_seconds"] == 151
    numbers = [pr["number"] for pr in first["pull_requests"]]
    assert numbers == [199720, 199721, 199726, 199714, 199716, 199715, 199687]
    assert first["pull_requests"][0]["url"] == "https://github.com/pytorch/pytorch/pull/199720"
    assert "199720, 199721 and 199726" in first["pull_requests"][0]["context"]
    durations = [e["duration_seconds"] for e in episodes]
    assert durations == [151, 182, 251, 251]


@pytest.mark.parametrize("page", ["page-bullets.txt", "page-dashes.txt", "page-jsonld.html"])
def test_parse_json_from_episode_pages(page: str) -> None:
    result = run_cli("parse", str(DATA / page), "--json")
    assert result.returncode == 0, result.stderr
    (episode,) = json.loads(result.stdout)
    assert episode["show"] == "PyTorch"
    assert episode["duration_seconds"] and episode["duration_seconds"] > 0
    assert episode["published_at"].endswith("Z") or episode["published_at"].endswith("+00:00")
    assert episode["headline"] and not episode["headline"].startswith("PyTorch:")


def test_parse_text_says_undated_for_an_episode_without_a_date(tmp_path: Path) -> None:
    feed = tmp_path / "feed.xml"
    feed.write_text(
        '<?xml version="1.0"?><rss version="2.0"><channel><title>PyTorch</title>'
        "<item><title>PyTorch: Dated</title><guid>a</guid>"
        "<pubDate>Mon, 05 Oct 2026 13:00:00 GMT</pubDate><description>PR 1.</description></item>"
        "<item><title>PyTorch: No Date</title><guid>b</guid><description>PR 2.</description>"
        "</item></channel></rss>"
    )
    text = run_cli("parse", str(feed))
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines() == [
        "2026-10-05  Dated  (1 PR)",
        "undated     No Date  (1 PR)",
    ]
    # The JSON says null rather than inventing 1970 (documented in the README).
    undated = json.loads(run_cli("parse", str(feed), "--json").stdout)[1]
    assert undated["published_at"] is None


def jax_page(tmp_path: Path, extra: str = "") -> Path:
    """An episode page of JAX, a show the embedded config does not have (it has PyTorch)."""
    text = (DATA / "page-bullets.txt").read_text().replace("PyTorch", "JAX")
    page = tmp_path / "jax-page.txt"
    page.write_text(text.replace("Then…", f"{extra}\n\nThen…"))
    return page


def test_parse_a_page_of_a_show_not_configured_keeps_its_show_and_invents_no_repo(
    tmp_path: Path,
) -> None:
    # It was the first configured show (PyTorch) and its repository.
    result = run_cli("parse", str(jax_page(tmp_path)), "--json")
    assert result.returncode == 0, result.stderr
    (episode,) = json.loads(result.stdout)
    assert episode["show"] == "JAX"
    prs = episode["pull_requests"]
    assert [pr["number"] for pr in prs] == [176201, 176188, 176190]
    # No repository is known: the PRs link nowhere rather than somewhere wrong.
    assert [pr["url"] for pr in prs] == ["", "", ""]
    assert "pytorch/pytorch" not in result.stdout

    rendered = run_cli("render", str(jax_page(tmp_path)), "--no-github")
    assert rendered.returncode == 0, rendered.stderr
    assert "pytorch/pytorch" not in rendered.stdout and "github.com" not in rendered.stdout
    assert "#176201" in rendered.stdout
    assert json.loads(rendered.stdout)["text"].startswith("JAX: ")


def test_a_page_of_a_show_not_configured_points_prs_where_its_own_links_do(
    tmp_path: Path,
) -> None:
    page = jax_page(tmp_path, "The follow-up is https://github.com/jax-ml/jax/pull/176300 there.")
    (episode,) = json.loads(run_cli("parse", str(page), "--json").stdout)
    urls = {pr["number"]: pr["url"] for pr in episode["pull_requests"]}
    assert urls[176201] == "https://github.com/jax-ml/jax/pull/176201"
    assert urls[176300] == "https://github.com/jax-ml/jax/pull/176300"
    # Two repositories linked: which one "PR 176201" means is not known.
    two = jax_page(
        tmp_path,
        "See https://github.com/jax-ml/jax/pull/176300 and "
        "https://github.com/openxla/xla/pull/9 too.",
    )
    (episode,) = json.loads(run_cli("parse", str(two), "--json").stdout)
    urls = {pr["number"]: pr["url"] for pr in episode["pull_requests"]}
    assert urls[176201] == "" and urls[9] == "https://github.com/openxla/xla/pull/9"


def test_repo_and_show_options_still_set_them(tmp_path: Path) -> None:
    page = str(jax_page(tmp_path))
    (episode,) = json.loads(run_cli("parse", page, "--json", "--repo", "jax-ml/jax").stdout)
    assert episode["show"] == "JAX"
    assert episode["pull_requests"][0]["url"] == "https://github.com/jax-ml/jax/pull/176201"
    (named,) = json.loads(run_cli("parse", page, "--json", "--show", "PyTorch").stdout)
    assert named["show"] == "PyTorch"
    assert named["pull_requests"][0]["url"] == "https://github.com/pytorch/pytorch/pull/176201"
    rendered = run_cli("render", page, "--repo", "jax-ml/jax", "--no-github")
    assert "<https://github.com/jax-ml/jax/pull/176201|#176201>" in rendered.stdout


def test_parse_text_dates_are_in_the_configured_timezone(tmp_path: Path) -> None:
    feed = tmp_path / "feed.xml"
    feed.write_text(
        '<?xml version="1.0"?><rss version="2.0"><channel><title>PyTorch</title>'
        "<item><title>PyTorch: Late</title><guid>a</guid>"
        "<pubDate>Tue, 06 Oct 2026 03:00:00 GMT</pubDate><description>PR 1.</description>"
        "</item></channel></rss>"
    )
    config = tmp_path / "digestbot.toml"
    config.write_text(
        f'timezone = "America/Los_Angeles"\n\n[[shows]]\nname = "PyTorch"\nfeed = "{feed}"\n'
    )
    text = run_cli("--config", str(config), "parse", str(feed))
    assert text.returncode == 0, text.stderr
    # 03:00 UTC on the 6th is the evening of the 5th in California.
    assert text.stdout.splitlines() == ["2026-10-05  Late  (1 PR)"]
    (episode,) = json.loads(run_cli("--config", str(config), "parse", str(feed), "--json").stdout)
    assert episode["published_at"] == "2026-10-06T03:00:00Z"


def test_parse_the_real_samples_when_present() -> None:
    samples = ROOT.parent / "shared" / "samples"
    if not samples.is_dir():
        pytest.skip("shared/samples is not beside this checkout")
    result = run_cli("parse", str(samples / "episode-page-2026-10-05.txt"), "--json")
    assert result.returncode == 0, result.stderr
    (episode,) = json.loads(result.stdout)
    assert episode["duration_seconds"] == 151
    assert [pr["number"] for pr in episode["pull_requests"]][:3] == [199720, 199721, 199726]
    assert len(episode["nearby"]) == 8


@pytest.mark.parametrize(
    ("name", "body", "needle"),
    [
        ("broken.xml", b"<rss><channel><item><title>x", "malformed"),
        ("image.png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, "cannot parse"),
        ("empty.xml", b"", "cannot parse"),
    ],
)
def test_bad_sources_are_one_line_and_exit_2(
    tmp_path: Path, name: str, body: bytes, needle: str
) -> None:
    path = tmp_path / name
    path.write_bytes(body)
    line = one_line_error(run_cli("parse", str(path), "--json"))
    assert needle in line
    assert name in line


@pytest.mark.parametrize(
    ("name", "body", "leak"), [("xxe.xml", XXE, "root:"), ("bomb.xml", BILLION_LAUGHS, "lollol")]
)
def test_entities_never_expand(tmp_path: Path, name: str, body: bytes, leak: str) -> None:
    path = tmp_path / name
    path.write_bytes(body)
    result = run_cli("parse", str(path), "--json")
    # Refusing the document or parsing it without the entity are both safe; expanding is not.
    assert leak not in result.stdout + result.stderr
    if result.returncode != 0:
        one_line_error(result)


def test_missing_file_and_unreachable_url(feed_server: FeedServer) -> None:
    assert "no such file" in one_line_error(run_cli("parse", "/nonexistent/feed.xml"))
    line = one_line_error(run_cli("parse", feed_server.url("/missing.xml")))
    assert "404" in line and "/missing.xml" in line


# -- render -----------------------------------------------------------------------------------


def test_render_blocks_is_valid_block_kit() -> None:
    result = run_cli("render", str(EXAMPLE_FEED))
    assert result.returncode == 0, result.stderr
    message = json.loads(result.stdout)
    assert "All-Gather Showdown" in message["text"]
    assert 0 < len(message["blocks"]) <= 50
    for block in message["blocks"]:
        Block.parse(block).validate_json()  # type: ignore[union-attr]
    assert "<https://github.com/pytorch/pytorch/pull/199720|#199720>" in result.stdout


def test_render_a_chosen_episode_as_text() -> None:
    result = run_cli(
        "render", str(EXAMPLE_FEED), "--episode", "pytorch-2026-10-02", "--format", "text"
    )
    assert result.returncode == 0, result.stderr
    assert "Compiler Parity Push" in result.stdout
    assert "3:02" in result.stdout
    assert "#199601" in result.stdout and "#199610" in result.stdout
    assert "All-Gather" not in result.stdout
    assert "unknown-guid" in one_line_error(
        run_cli("render", str(EXAMPLE_FEED), "--episode", "unknown-guid")
    )


def test_render_escapes_hostile_titles(tmp_path: Path) -> None:
    feed = EXAMPLE_FEED.read_text().replace(
        "PyTorch: All-Gather Showdown", "PyTorch: &lt;!channel&gt; &amp; &lt;https://evil|win&gt;"
    )
    path = tmp_path / "hostile.xml"
    path.write_text(feed)
    result = run_cli("render", str(path))
    assert result.returncode == 0, result.stderr
    message = json.loads(result.stdout)
    # plain_text is shown literally by Slack; everything parsed as mrkdwn must be escaped.
    mrkdwn = [message["text"]] + [
        json.dumps(block) for block in message["blocks"] if block["type"] != "header"
    ]
    assert all("<!channel>" not in part and "<https://evil" not in part for part in mrkdwn)
    assert "&lt;!channel&gt;" in message["text"]


# -- run --once -------------------------------------------------------------------------------


def test_run_once_on_embedded_defaults_prints_what_it_would_post(tmp_path: Path) -> None:
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    env.pop("DIGESTBOT_CONFIG", None)
    first = run_cli("run", "--once", env={**env, "DIGESTBOT_CONFIG": ""}, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "would post to #C0EXAMPLE01" in first.stdout
    assert "All-Gather Showdown" in first.stdout
    # Backfill 1: only the newest episode, never the archive.
    assert "Compiler Parity Push" not in first.stdout
    second = run_cli("run", "--once", env={**env, "DIGESTBOT_CONFIG": ""}, cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert "would post" not in second.stdout


def test_run_once_posts_new_episodes_once_and_survives_a_broken_feed(
    tmp_path: Path, feed_server: FeedServer, slack_fake: SlackFake, db_url: str
) -> None:
    good = feed_server.route("/pytorch.xml", EXAMPLE_FEED.read_bytes(), etag='"v1"')
    broken = feed_server.route("/broken.xml", b"<rss><channel><item>", etag='"b1"')
    config = write_config(tmp_path, {"PyTorch": good, "Broken": broken})
    env = {
        "DIGESTBOT_CONFIG": str(config),
        "DATABASE_URL": db_url,
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_API_URL": slack_fake.api_url,
    }
    first = run_cli("run", "--once", env=env)
    assert first.returncode == 0, first.stderr
    posts = [m for m in slack_fake.messages("C00CHANNEL") if not m.get("thread_ts")]
    assert [p["text"] for p in posts] == [posts[0]["text"]]
    assert "All-Gather Showdown" in posts[0]["text"]
    assert slack_fake.messages("C01CHANNEL") == []  # the broken show's channel got nothing yet

    rss = EXAMPLE_FEED.read_bytes().replace(b"<channel>", b"<channel>" + NEW_ITEM, 1)
    feed_server.route("/pytorch.xml", rss, etag='"v2"')
    second = run_cli("run", "--once", env=env)
    assert second.returncode == 0, second.stderr
    third = run_cli("run", "--once", env=env)
    assert third.returncode == 0, third.stderr
    posts = [m for m in slack_fake.messages("C00CHANNEL") if not m.get("thread_ts")]
    texts = [p["text"] for p in posts]
    assert len(texts) == 2, texts
    assert sum("Precompile Groundwork" in t for t in texts) == 1
    assert feed_server.requests_to("/pytorch.xml")[-1].header("If-None-Match") == '"v2"'


def test_run_once_with_a_bad_config_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[schedule]\nrecap = "whenever"\n')
    line = one_line_error(run_cli("run", "--once", env={"DIGESTBOT_CONFIG": str(path)}))
    assert "schedule.recap" in line and str(path) in line


# -- recap ------------------------------------------------------------------------------------


def test_recap_of_a_week_as_text_and_blocks(tmp_path: Path) -> None:
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "DIGESTBOT_CONFIG": ""}
    assert run_cli("run", "--once", env=env, cwd=tmp_path).returncode == 0
    text = run_cli("recap", "--week", "2026-W40", "--format", "text", env=env, cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "week 40" in text.stdout
    for headline in ("Compiler Parity Push", "Distributed Hang Fixes", "Memory Optimization"):
        assert headline in text.stdout
    blocks = run_cli("recap", "--week", "2026-W40", env=env, cwd=tmp_path)
    assert blocks.returncode == 0, blocks.stderr
    message = json.loads(blocks.stdout)
    assert len(message["blocks"]) <= 50
    for block in message["blocks"]:
        Block.parse(block).validate_json()  # type: ignore[union-attr]
    assert "2026-W99" in one_line_error(
        run_cli("recap", "--week", "2026-W99", env=env, cwd=tmp_path)
    )
    assert "--channel" in one_line_error(run_cli("recap", "--post", env=env, cwd=tmp_path))
    # The slash command's week forms work here too.
    short = run_cli("recap", "--week", "w40", "--format", "text", env=env, cwd=tmp_path)
    assert short.returncode == 0, short.stderr
    assert "week 40" in short.stdout
    assert "w60" in one_line_error(run_cli("recap", "--week", "w60", env=env, cwd=tmp_path))


@pytest.mark.parametrize(
    ("now", "value", "week"),
    [
        # Monday before the 09:00 recap: still the week that just ended, not the one before.
        (datetime(2026, 11, 30, 7, 0, tzinfo=UTC), None, (2026, 48)),
        (datetime(2026, 11, 30, 12, 0, tzinfo=UTC), None, (2026, 48)),
        (datetime(2026, 11, 29, 22, 0, tzinfo=UTC), None, (2026, 47)),  # Sunday 23:00
        # Sunday 23:30 UTC is Monday in Berlin: week 48 is complete there.
        (datetime(2026, 11, 29, 23, 30, tzinfo=UTC), None, (2026, 48)),
        (datetime(2026, 11, 30, 7, 0, tzinfo=UTC), "w48", (2026, 48)),
        (datetime(2026, 11, 30, 7, 0, tzinfo=UTC), "W41", (2026, 41)),
        (datetime(2026, 11, 30, 7, 0, tzinfo=UTC), "2025-W41", (2025, 41)),
        (datetime(2026, 11, 30, 7, 0, tzinfo=UTC), "this", (2026, 49)),
        (datetime(2026, 11, 30, 7, 0, tzinfo=UTC), "last", (2026, 48)),
        (datetime(2026, 11, 30, 7, 0, tzinfo=UTC), "2026-10-05", (2026, 41)),
    ],
)
def test_recap_week_default_and_forms(
    now: datetime, value: str | None, week: tuple[int, int]
) -> None:
    assert recap_week(value, now, ZoneInfo("Europe/Berlin")) == week


def _bundled_with_slack(db_url: str, slack_fake: SlackFake) -> dict[str, str]:
    """The bundled config and example feed, posting to the Slack fake."""
    return {
        "DATABASE_URL": db_url,
        "DIGESTBOT_CONFIG": "",
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_API_URL": slack_fake.api_url,
    }


def test_recap_post_lands_once(tmp_path: Path, slack_fake: SlackFake, db_url: str) -> None:
    env = _bundled_with_slack(db_url, slack_fake)
    assert run_cli("run", "--once", env=env, cwd=tmp_path).returncode == 0
    args = ("recap", "--week", "2026-W40", "--post", "--channel", "C0RECAP01")
    first = run_cli(*args, env=env, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "recap 2026-W40 posted to C0RECAP01" in first.stdout
    again = run_cli(*args, env=env, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "already posted" in again.stdout
    posts = [m for m in slack_fake.messages("C0RECAP01") if not m.get("thread_ts")]
    assert len(posts) == 1
    assert "week 40" in posts[0]["text"]
    slack_fake.channel_error("C0GONE0001", "is_archived")
    gone = run_cli("recap", "--week", "2026-W40", "--post", "--channel", "C0GONE0001", env=env)
    assert "is_archived" in one_line_error(gone)


def test_recap_post_to_several_channels_posts_to_each(
    tmp_path: Path, slack_fake: SlackFake, db_url: str
) -> None:
    # `--channel A --channel B` used to post to B only: the first channel was dropped.
    env = _bundled_with_slack(db_url, slack_fake)
    assert run_cli("run", "--once", env=env, cwd=tmp_path).returncode == 0
    args = ("recap", "--week", "2026-W40", "--post", "--channel", "C0RECAPA1")
    result = run_cli(*args, "--channel", "C0RECAPB1", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "recap 2026-W40 posted to C0RECAPA1" in result.stdout
    assert "recap 2026-W40 posted to C0RECAPB1" in result.stdout
    for channel in ("C0RECAPA1", "C0RECAPB1"):
        posts = [m for m in slack_fake.messages(channel) if not m.get("thread_ts")]
        assert len(posts) == 1 and "week 40" in posts[0]["text"]
    # One channel Slack refuses: the others are still posted, and the error names it.
    slack_fake.channel_error("C0GONE0002", "is_archived")
    mixed = run_cli(*args, "--channel", "C0GONE0002", "--channel", "C0RECAPC1", env=env)
    assert "already posted to C0RECAPA1" in mixed.stdout
    assert "posted to C0RECAPC1" in mixed.stdout
    line = one_line_error(mixed)
    assert "C0GONE0002" in line and "is_archived" in line
    assert len([m for m in slack_fake.messages("C0RECAPC1") if not m.get("thread_ts")]) == 1


# -- the real process (everything above runs main() in this process) ------------------------


def test_python_m_bot_renders_in_a_subprocess() -> None:
    result = run_cli_process("render", str(EXAMPLE_FEED))
    assert result.returncode == 0, result.stderr
    message = json.loads(result.stdout)
    assert "All-Gather Showdown" in message["text"]
    assert result.stderr == ""


def test_the_digestbot_script_parses_in_a_subprocess() -> None:
    script = Path(sys.executable).with_name("digestbot")
    if not script.exists():
        pytest.skip("the digestbot console script is not installed beside this Python")
    result = run_cli_process("parse", str(DATA / "page-bullets.txt"), entry=str(script))
    assert result.returncode == 0, result.stderr
    assert "(" in result.stdout and "PR" in result.stdout


def test_a_failure_in_a_subprocess_is_exit_2_and_one_line_on_stderr() -> None:
    line = one_line_error(run_cli_process("parse", "/nonexistent/feed.xml", "--json"))
    assert "no such file" in line
