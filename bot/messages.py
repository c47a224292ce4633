"""User-visible strings of the Slack side, in one place so wording stays consistent.

Everything here is plain text or mrkdwn written by us; feed text is never interpolated
without going through ``digests.render.escape`` first (callers do that).
"""

from __future__ import annotations

# How a command is typed back (not wording): kept importable from here for callers.
from bot.command_text import command_arg as command_arg
from bot.command_text import subscribe_args as subscribe_args
from bot.command_text import subscribe_keywords as subscribe_keywords

COMMAND = "/episodes"
MAX_TEXT = 500

# -- usage -------------------------------------------------------------------------------

USAGE: dict[str, str] = {
    "recent": f"`{COMMAND} recent [show] [n]` — the n newest episodes (default 5, at most 20)",
    "latest": f"`{COMMAND} latest [show]` — the newest episode's full digest",
    "nearby": f"`{COMMAND} nearby <date | episode link | words of a title | #PR>` — an episode "
    "and its neighbours (a date: 2026-10-05, 5 Oct 2026, Oct 5, yesterday)",
    "pr": f"`{COMMAND} pr <number | PR link>` — every episode that named that pull request "
    "(199720, #199720 or its GitHub link)",
    "search": f"`{COMMAND} search <words>` — full-text search, best 10",
    "week": f"`{COMMAND} week [2026-W41 | w41 | last | date]` — that week's episodes in short; "
    "with no week, this week's, or last week's while this one has none yet. Every query "
    "takes a show name first, e.g. `recent JAX 3`; without one, the channel's shows",
    "subscribe": f"`{COMMAND} subscribe [shows…] [filter…] [recap on|off] [daily [17:00] | "
    'daily off]` — post new episodes here; a filter is words and "phrases" (any of them), '
    "+required, -excluded (a word that is a show's name: quote it, or write `keywords: …`); "
    "`daily 17:00` (or `daily 5pm`; `daily` alone: the configured time, 17:00 by default): "
    "one message a day listing that day's instead, "
    "`daily off`: one per episode",
    "unsubscribe": f"`{COMMAND} unsubscribe [show]` — stop posting them here; name several "
    "to drop them together (`unsubscribe JAX, Triton`)",
    "list": f"`{COMMAND} list` — this channel's subscriptions",
    "status": f"`{COMMAND} status` — each show's last poll, last error and next poll",
    "pause": f"`{COMMAND} pause [show] [for 3d | until mon | until 2026-12-24]` — stop posting "
    "here for a while (until resumed, with neither); what arrives meanwhile is not posted "
    "later. Several shows at once: `pause PyTorch, JAX for 3d`",
    "resume": f"`{COMMAND} resume [show] [--catch-up]` — end a pause; --catch-up also posts the "
    "newest of what arrived meanwhile (at most 10); `resume PyTorch JAX` resumes both",
    "why": f"`{COMMAND} why <episode link | date | words of a title | #PR>` — why an episode "
    "was or was not posted in this channel",
    "preview": f"`{COMMAND} preview [show] [filter…]` — which of the last 20 episodes a filter "
    'would post and why (words, "phrases", +required, -excluded); changes nothing',
    "add-show": f"`{COMMAND} add-show <feed or page URL> [owner/repo]` — add a show from its "
    "feed, after a preview (workspace admins and owners), e.g. "
    f"`{COMMAND} add-show https://feeds.example.com/jax.xml google/jax`",
    "remove-show": f"`{COMMAND} remove-show <name>` — remove a show added here with add-show "
    "(its channels here are unsubscribed)",
    "help": f"`{COMMAND} help` — this message",
}
# The first line of help: how to start.
HELP_START = (
    f"To get a digest of every new episode in a channel, type `{COMMAND} subscribe` there; "
    "the rest answers questions about episodes."
)

USAGE_SHORT = (
    f"`{COMMAND} [recent [show] [n] | latest [show] | nearby [show] <date | link | words | #PR>"
    " | pr [show] <n | link> | search [show] <words> | week [show] [week | date]"
    " | subscribe [show] [filter…] | unsubscribe [show]"
    " | list | status | preview [show] [filter…] | pause [show] [for 3d | until mon]"
    " | resume [show] [--catch-up] | why <episode> | help]`"
)

HELP_TITLE = "digestbot — developer-briefing podcasts in Slack"
HELP_EXAMPLES = (
    f"`{COMMAND} recent 10`",
    f"`{COMMAND} nearby Oct 5`",
    f"`{COMMAND} nearby #199720`",
    f"`{COMMAND} pr 199687`",
    f"`{COMMAND} search all-gather`",
    f"`{COMMAND} week 2026-W41`",
    f"`{COMMAND} subscribe PyTorch fsdp dtensor`",
    f"`{COMMAND} subscribe PyTorch daily 17:00`",
    f'`{COMMAND} preview PyTorch inductor "flex attention" -rocm`',
    f"`{COMMAND} subscribe PyTorch -rocm`",
    f"`{COMMAND} pause for 3d`",
    f"`{COMMAND} resume --catch-up`",
    f"`{COMMAND} why #199720`",
)
USAGE_LABEL = "Usage: {usage}"
EXAMPLES_LABEL = "Examples: {examples}"
HELP_FOOTER = "Replies are visible only to you; use *Share in channel* to post one for everyone."
UNKNOWN_SUBCOMMAND = "I don't know `{word}`."

# -- argument errors (one line each; usage follows) --------------------------------------

TOO_LONG = "That is {length} characters; {command} takes at most {limit}."
NOT_A_COUNT = "`{value}` is not a number of episodes."
COUNT_RANGE = "Ask for between 1 and {limit} episodes, not {value}."
NOT_A_DATE = "`{value}` is not a date; write it like 2026-10-05, 5 Oct 2026 or Oct 5."
AMBIGUOUS_DATE = "`{value}` could be {first} or {second}; write it like 2026-10-05 or 5 Oct 2026."
NEED_YEAR = "`{value}` needs a year; write it like 2026-10-05."
WRONG_WEEKDAY = "{day} is a {actual}, not a {given}."
NO_SUCH_DATE = "{value} does not exist on the calendar."
DATE_RANGE = "{value} is out of range; pick a year between 2000 and 2100."
NOT_A_WEEK = "`{value}` is not a week; write it like 2026-W41, w41, last or 2026-10-05."
NO_SUCH_WEEK = "{value} is not a week of the calendar (years have 52 or 53 ISO weeks)."
NOT_A_PR = (
    "`{value}` is not a pull-request number; write it like 199720, #199720 or paste its "
    "GitHub link."
)
PR_RANGE = "{value} is too large to be a pull-request number."
PR_START = "PR numbers start at 1, so `{value}` is not one."
NEED_PR = "Which pull request? Give its number."
NEED_WORDS = "Search for what? Give a few words."
NEED_NEARBY = "Nearby what? Give a date, an episode link, words of a title, or #PR."
TOO_MANY_ARGS = "`{command}` takes no arguments."
EXTRA_ARGS = "Unexpected `{value}` after `{command}`."
UNKNOWN_SHOW = "There is no show called `{name}`. Shows: {shows}."
SHOW_TYPO = "There is no show called {name} — did you mean {show}?"
NO_SHOWS = "No shows are configured yet."
NAME_THE_SHOW = "Several shows are configured; name one: {shows}."
TOO_MANY_KEYWORDS = "At most {limit} keywords (filter terms), not {count}."
KEYWORD_TOO_LONG = "Keywords are at most {limit} characters each."
BAD_DAILY_TIME = (
    "{value} is not a time of day: `daily` takes a 24-hour time from 00:00 to 23:59 "
    "(or 5pm, 9:30am), e.g. `daily 17:00`."
)
RECAP_MISPLACED = (
    "`recap` goes at the end, as `recap on` or `recap off`{got}; to filter on the word, "
    'quote it: `"recap"`.'
)
RECAP_GOT = " (not `recap {value}`)"
DAILY_MISPLACED = (
    "`{value}` goes at the end, after the filter: e.g. `subscribe JAX fsdp daily 9:30am`."
)
NO_CHANNEL = "This command needs a channel, and Slack sent none I can use; run it in a channel."
BUTTON_OUT_OF_DATE = "Sorry, this button is out of date; run the command again for a fresh one."

# -- answers ----------------------------------------------------------------------------

RECENT_TITLE = "Latest {n} episodes"
RECENT_TITLE_ONE = "Latest episode"
NO_EPISODES = "No episodes yet: the first poll may not have run. Try again in a few minutes."
NOTHING_NEAR = "No episode near {what}."
NOTHING_WITHIN = "No episode within 2 weeks of {day}; the nearest is:"
NEAREST_TO = "No episode on {day}; this is the nearest one."
NOTHING_AT = "No episode has the link {url}."
NO_TITLE_MATCH = (
    f"No episode title has all of “{{words}}”. For the full text, try `{COMMAND} search`."
)
NEAR_PR = "PR #{number}"
NOTHING_FOR_PR = "No episode mentions PR #{number} yet."
NOTHING_FOR_REPO_PR = "No episode names {repo}#{number}."
PR_TITLE_REPO = "Episodes naming {repo}#{number}"
SOME_WORDS = "No episode has all of “{words}”; these have some."
# A query's scope, when the answer is about some shows, not all of them.
SCOPE_SHOWS = "From {shows}."
WEEK_FILTERED = "As this channel's recap: {filters}."
WEEK_BEFORE_ARCHIVE = "Week {week} is before the archive starts ({first})."
WEEK_NOT_YET = "Week {week} has not happened yet."
PR_TITLE = "Episodes naming PR #{number}"
PR_TEXT = "{title}: {count} episode{s}"
# What GitHub says of the PR, first in `/episodes pr N` (each part escaped by the caller).
PR_DETAILS = "*{title}* · {state}"
PR_DETAILS_AUTHOR = " · by {author}"
PR_DETAILS_AREA = " · {area}"
PR_NOT_ON_GITHUB = "GitHub has no pull request #{number} in {repo}."
NOTHING_FOUND = "Nothing matches `{words}`."
SEARCH_TITLE = "Episodes matching “{words}”"
NEARBY_TITLE = "Around “{headline}”"
NEARBY_BEFORE = "Before"
NEARBY_THIS = "This episode"
NEARBY_AFTER = "After"
NEARBY_FROM_PAGE = "The episode page's own nearby list"
WEEK_FELL_BACK = "No episodes yet in week {week}, so here is last week."

SUBSCRIBED = "This channel now gets new *{show}* episodes{filter}."
SUBSCRIBED_FILTER = " that mention {keywords}"
# A filter with +/- terms read out ({rule}: "mentions “a”, never “b”"); only -terms: {terms}.
SUBSCRIBED_RULE = " that pass its filter: {rule}"
SUBSCRIBED_EXCEPT = " — everything except those that mention {terms}"
SUBSCRIBED_MANY = "This channel now gets new episodes of {shows}{filter}."
# A subscribe that changed nothing (no channel message then).
SUBSCRIBED_SAME = "Nothing changed: this channel already gets new *{show}* episodes{filter}."
SUBSCRIBED_SAME_MANY = "Nothing changed: this channel already gets new episodes of {shows}{filter}."
SUBSCRIBED_SAME_ONE = "Nothing changed for it."
# The resulting subscription, in one line, after every subscribe.
SUBSCRIPTION_NOW = "Now: {shows} · {keywords} · weekly recap {recap}{mode}"
# Appended for daily mode (per episode, the default, says nothing). {at}: "17:00";
# {timezone}: the configured zone's name.
MODE_DAILY = " · daily at {at} ({timezone})"
MODE_MIXED = " · daily at {at} ({timezone}) for {shows}, the others per episode"
DAILY_TIME_MOVED = "This channel's other daily subscriptions move to {at} too (one message a day)."
SUBSCRIPTION_EVERY = "every episode"
SUBSCRIPTION_KEYWORDS = "keywords {keywords}"
SUBSCRIPTION_RULE = "filter: {rule}"
SUBSCRIPTION_EXCEPT = "every episode except those that mention {terms}"
RECAP_ON = "on"
RECAP_OFF = "off"
# What a new keyword subscription's backfill does (at the next poll).
BACKFILL_NONE = "Nothing yet matches — the next matching episode will be posted here."
BACKFILL_POSTS = "Matching already, and posted here at the next poll: {episodes}."
UNSUBSCRIBED = "This channel no longer gets *{show}* episodes."
UNSUBSCRIBED_ALL = "This channel no longer gets any episodes ({removed} subscription{s} removed)."
REPLACES_FILTER = "It replaces the earlier filter {keywords}."
REPLACES_RULE = "It replaces the earlier filter ({rule})."
REPLACES_EXCEPT = "It replaces the earlier filter (everything except {terms})."
REPLACES_NO_FILTER = "It replaces the earlier subscription to every *{show}* episode."
SUBSCRIBE_RESUMES = "It had been paused ({reason}) and is active again."
FROM_CONFIG_REMOVE = (
    "It was set in the config file: it stays off after restarts, but remove the channel "
    "from the config file to drop it for good."
)
NOT_SUBSCRIBED = "This channel was not subscribed to {what}."
# Posted for everyone in the channel after a change, so nobody is surprised by new digests
# (or by their absence); {who} is a user mention.
ANNOUNCE_SUBSCRIBED = "{who} subscribed this channel to new *{show}* episodes{filter}{mode}."
ANNOUNCE_NEW_DAILY = ", in one daily digest at {at} ({timezone})"
# What changed in a subscription the channel had: clauses after "{who} ", joined by "and".
ANNOUNCE_FILTER = "changed {show}'s filter to {filter}"
ANNOUNCE_FILTER_WORDS = "episodes that mention {keywords}"
ANNOUNCE_FILTER_RULE = "episodes that pass this rule: {rule}"
ANNOUNCE_FILTER_EXCEPT = "every episode except those that mention {terms}"
ANNOUNCE_FILTER_DROPPED = "dropped {show}'s filter (every episode is posted)"
ANNOUNCE_DAILY = "switched {show} to a daily digest at {at} ({timezone})"
ANNOUNCE_DAILY_MOVED = "moved {show}'s daily digest to {at} ({timezone})"
ANNOUNCE_PER_EPISODE = "switched {show} back to a digest per episode"
ANNOUNCE_RECAP_ON = "turned the weekly recap on for {show}"
ANNOUNCE_RECAP_OFF = "turned the weekly recap off for {show}"
ANNOUNCE_REACTIVATED = "made {show} active again (it had been paused)"
ANNOUNCE_AND = " and "
ANNOUNCE_UNSUBSCRIBED = "{who} unsubscribed this channel from *{show}* episodes."
ANNOUNCE_PAUSED_UNTIL = "{who} paused posting of {what} here until {until}."
ANNOUNCE_PAUSED_OPEN = "{who} paused posting of {what} here until someone resumes it."
ANNOUNCE_EVERY_SHOW = "every show"
ANNOUNCE_RESUMED = "{who} resumed posting of {what} here."
ANNOUNCE_UNSUBSCRIBED_ALL = "{who} unsubscribed this channel from every show."
SOMEONE = "Someone"
ANY_SHOW = "any show"
LIST_TITLE = "Subscriptions of this channel"
LIST_EMPTY = f"This channel follows no show yet. Try `{COMMAND} subscribe`."
LIST_LINE = "*{show}*{filter}{daily}{recap}{source}{paused}"
LIST_FROM_CONFIG = " — set in the config file"
LIST_FILTER = " — only episodes mentioning {keywords}"
LIST_RULE = " — only episodes that pass its filter: {rule}"
LIST_EXCEPT = " — every episode except those mentioning {terms}"
LIST_NO_RECAP = " — no weekly recap"
LIST_DAILY = " — daily at {at} ({timezone})"
STATUS_DAILY_TITLE = "Daily digest here"
STATUS_DAILY_LINE = "• *{show}* at {at} ({timezone}) · next {next}"
LIST_PAUSED = " — :pause_button: paused since {when}: {reason}"
STATUS_TITLE = "Feed status"
STATUS_LINE = (
    "*{show}*\nLast poll: {polled} · last success: {success}\n"
    "Last error: {error} · failures in a row: {failures}\nNext poll: {next}"
)
STATUS_NEVER = "never"
STATUS_NONE = "none"
STATUS_NOT_SCHEDULED = "not scheduled yet"
STATUS_PAUSED_TITLE = "Paused subscriptions in this channel"

PAUSED_DM = "I stopped posting {shows} digests to <#{channel}>: {why}. {resume}"
# {commands}: one `/episodes subscribe …` per paused subscription, its show and keywords,
# since a bare `subscribe` would drop a keyword filter (or ask which show).
PAUSED_DM_RESUME = "To resume, fix that and run {commands} in the channel."
PAUSED_DM_AND = " and "
PAUSE_REASONS = {
    "channel_not_found": "Slack cannot find the channel (deleted, or private without me in it)",
    "is_archived": "the channel is archived",
    "not_in_channel": "I am not a member and cannot join it (invite me with `/invite`)",
}
PAUSE_REASON_OTHER = "Slack refused my posts there (`{error}`)"
PAUSED_DM_SHOW = "*{show}*"
PAUSED_DM_SHOWS_SEP = ", "
# Inside backticks, escaped as Slack itself sends typed text: copied and run, it parses
# back to the same show and keywords.
PAUSED_DM_COMMAND = "`{command} subscribe {args}`"


SHARED_BY = "Shared by <@{user}>"
SHARE_BUTTON = "Share in channel"
SHARE_GONE = "That reply cannot be shared any more; run the command again."
INTERNAL_ERROR = "Sorry, that failed on our side ({reason}). Try again in a moment."
REASON_STORE = "the episode archive is unreachable"
REASON_STORE_SLOW = "the database is not answering"
NOT_SAVED = "Nothing was saved."
REASON_UNEXPECTED = "an unexpected error; it has been logged"
UNREADABLE_REQUEST = "Sorry, I could not read that request. Try the command again."

KEY_PRS_NONE = "This episode names no pull requests."
EPISODE_GONE = "That episode is no longer in the archive."

HOME_TITLE = "digestbot"
HOME_LATEST = "Latest episodes"
HOME_SUBSCRIPTIONS = "Subscriptions in this workspace"
HOME_NO_SUBSCRIPTIONS = f"No channel follows a show yet. Type `{COMMAND} subscribe` in one."
HOME_MORE = "…and {count} more."
HOME_HINT = (
    f"To get digests in a channel, type `{COMMAND} subscribe` there (or `{COMMAND} subscribe"
    f" <show> <keywords…>` for some episodes only); `{COMMAND} help` lists everything else."
)

# -- preview (issue 14) ------------------------------------------------------------------

FILTER_TOO_MANY = "A filter takes at most {limit} terms, not {count}."
FILTER_TERM_TOO_LONG = "Filter terms are at most {limit} characters each."
FILTER_OPEN_QUOTE = "A quote in the filter is never closed; put phrases in pairs of quotes."
FILTER_LONE_SIGN = "`{term}` needs a word right after the {sign} (like +cuda or -rocm)."
FILTER_EMPTY_QUOTES = (
    '`""` is an empty phrase; put words between the quotes, like "flex attention".'
)
PREVIEW_NO_EPISODES = "*{show}* has no episodes yet, so there is nothing to preview."
PREVIEW_TITLE = "Preview of *{show}*: {filter}"
PREVIEW_SUMMARY = "Of its last {total} episodes, {posted} would be posted and {skipped} skipped."
PREVIEW_ONLY_EXCLUDES = (
    "This filter only excludes: every episode that mentions none of those is posted."
)
PREVIEW_POST = ":white_check_mark: {day} {headline} — would be posted"
PREVIEW_POST_TERM = ":white_check_mark: {day} {headline} — would be posted: mentions {term}"
PREVIEW_SKIP_EXCLUDED = ":no_entry_sign: {day} {headline} — skipped: mentions {term}, excluded"
PREVIEW_SKIP_REQUIRED = (
    ":no_entry_sign: {day} {headline} — skipped: does not mention {term}, required"
)
PREVIEW_SKIP_NONE = ":no_entry_sign: {day} {headline} — skipped: mentions none of {terms}"
PREVIEW_FOOTER = "Nothing changed. To get these here: `{command} subscribe {args}`"
PREVIEW_HINT = "Which recent episodes this lets through: `{command} preview {args}`"
PREVIEW_HINT_MANY = "Which recent episodes this lets through: {commands}"
PREVIEW_HINT_ONE = "`{command} preview {args}`"

# -- pause / resume (issue 14) -----------------------------------------------------------

PAUSE_NEED_WHEN = "Pause {word} what? Write it like `for 3d`, `until mon` or `until 2026-12-24`."
PAUSE_NOT_A_DURATION = "`{value}` is not a length of time; write it like 12h, 3d or 2w."
PAUSE_ZERO = "A pause of `{value}` is no pause; give at least 1h."
PAUSE_TOO_LONG = "Pauses last at most {limit} days; `{value}` is longer."
PAUSE_UNTIL_PAST = "{day} is not in the future; write a later day, with its year."
RESUME_EXTRA = "Unexpected `{value}`; `resume` takes a show and `--catch-up`."
PAUSE_NOT_SUBSCRIBED = "This channel is not subscribed to {what}, so there is nothing to pause."
PAUSED_UNTIL = (
    "Paused {shows} here until {until}: episodes that arrive meanwhile are not posted, "
    "then or later."
)
PAUSED_OPEN = (
    "Paused {shows} here until you resume: episodes that arrive meanwhile are not posted, "
    "then or later."
)
PAUSED_HOW_TO_RESUME = (
    "`{command} resume{args}` ends it early; add `--catch-up` for the newest {limit} of them."
)
RESUME_NOT_PAUSED = "{what} was not paused here."
RESUME_NOTHING_PAUSED = "Nothing is paused in this channel."
RESUMED = "Resumed {shows}: new episodes are posted here again."
RESUMED_MISSED = (
    "{count} that arrived while paused stay unposted (`{command} resume --catch-up` would "
    "have posted up to {limit})."
)
RESUMED_NONE_MISSED = "Nothing matching arrived while paused."
RESUMED_CATCH_UP = (
    "The newest {posted} of the {count} that arrived while paused are posted shortly."
)
RESUMED_CATCH_UP_DAILY = (
    "The newest {posted} of the {count} that arrived while paused are posted shortly, in one "
    "message (this channel gets a daily digest; the next one lists only what comes after)."
)
LIST_HELD_UNTIL = " — :double_vertical_bar: paused until {until}"
LIST_HELD_OPEN = " — :double_vertical_bar: paused until resumed"

# -- why (issue 14) ----------------------------------------------------------------------

NEED_WHY = "Why what? Give an episode link, a date, words of its title, or #PR."
WHY_NOTHING = "No episode matches that; try an episode link, a date, words of its title or #PR."
WHY_TITLE = "*{headline}* ({day}, {show})"
WHY_POSTED = "Posted here."
WHY_CAUGHT_UP = "Posted here after the pause, in one message with the rest of what came meanwhile."
WHY_POSTED_LINK = "<{link}|See it in the channel.>"
WHY_UPDATED = "Posted here, and updated {when} because the episode changed."
WHY_ON_ITS_WAY = "Planned for this channel and being posted; it should appear within minutes."
WHY_FAILED = (
    "Slack refused to post it here (`{error}`, last tried {when}); it is tried again only "
    "if the episode changes."
)
WHY_CHANNEL_PAUSED = "Not posted: posting here is paused because {reason}."
WHY_HELD = "Not posted: it arrived while *{show}* was paused here (until {until})."
WHY_HELD_OPEN = "resumed"
WHY_DAILY = (
    "This channel gets *{show}* in one message a day at {at} ({timezone}): it was in the "
    "daily digest of {when}."
)
WHY_DAILY_DUE = (
    "This channel gets *{show}* in one message a day at {at} ({timezone}): it goes in the "
    "daily digest due {when}."
)
WHY_DAILY_ARCHIVE = (
    "Not posted: this channel gets *{show}* in one message a day at {at} ({timezone}), and "
    "the digest covering it (from {start}) leaves out episodes dated more than a day before "
    "that: the archive, not news."
)
WHY_BEFORE = "Not posted: it came out before this channel subscribed ({when})."
WHY_EXCLUDED = "Skipped by this channel's filter: it mentions {term}, which is excluded."
WHY_REQUIRED = "Skipped by this channel's filter: it does not mention {term}, which is required."
WHY_NO_TERM = "Skipped by this channel's filter: it mentions none of {terms}."
WHY_PASSED_OVER = (
    "Not posted: it is older than what this channel already had, or one of more than 10 "
    "that arrived at once (the newest were posted)."
)
WHY_NOT_SUBSCRIBED = "This channel does not follow *{show}*; `{command} subscribe` posts it here."
WHY_NOT_POLLED = "*{show}* has not been polled yet (next poll: {when}); it is looked for then."
WHY_FEED_FAILING = (
    "Not in the archive: the feed of *{show}* is failing (`{error}`); next try {when}."
)
WHY_NOT_IN_FEED = "No episode has that link, and the feeds read fine: it is not in the feed."
WHY_FOOTER = f"`{COMMAND} why` reads this channel's delivery record; replies are private."


# -- adding a show from Slack (`add-show`, `remove-show`) --------------------------------

ADD_SHOW_NEED_URL = "Which feed? Give its URL."
ADD_SHOW_NOT_URL = "`{value}` is not an http(s) link."
ADD_SHOW_URL_LONG = "That URL is longer than {limit} characters."
ADD_SHOW_NOT_REPO = "`{value}` is not a GitHub repository (owner/repo)."
REMOVE_SHOW_NEED_NAME = "Which show? Give its name."
SHOW_ADMINS_ONLY = "Only workspace admins and owners can add or remove shows."
ADD_SHOW_READING = "Reading {url} … the preview follows."
ADD_SHOW_REFUSED = "That feed cannot be added: {reason}."
ADD_SHOW_FETCH_FAILED = "Could not read that feed: {reason}."
ADD_SHOW_NOT_FEED = "That is not a feed or an episode page: {reason}."
ADD_SHOW_NO_EPISODES = "That feed has no episodes."
ADD_SHOW_DUPLICATE = "That feed is already a show: *{show}*."
ADD_SHOW_LIMIT = "This workspace has added as many shows as it may ({limit}); remove one first."
ADD_SHOW_NAME_TAKEN = "The name *{show}* was taken meanwhile; run add-show again."
ADD_SHOW_PREVIEW = "Add *{show}*?"
ADD_SHOW_NEWEST = "Newest episode: {episode}"
ADD_SHOW_COUNTS = "{episodes} in the feed · {prs} found · PR numbers point to {repo}"
ADD_SHOW_BUTTON = "Add"
CANCEL_BUTTON = "Cancel"
ADD_SHOW_ADDED = (
    "Added *{show}*, polled from now on with the others. "
    "`/episodes subscribe {arg}` posts its episodes here."
)
ADD_SHOW_CANCELLED = "Cancelled: no show was added."
REMOVE_SHOW_UNKNOWN = "There is no show called `{value}` added in this workspace."
REMOVE_SHOW_CONFIG = (
    "*{show}* is in the config file: remove it there (add-show and remove-show only "
    "change shows added from Slack)."
)
REMOVE_SHOW_OTHER_TEAM = "*{show}* was added by another workspace; only it can remove it."
REMOVE_SHOW_DONE = "Removed *{show}* and its episodes."
REMOVE_SHOW_UNSUBSCRIBED = "Unsubscribed {channels} from it."
REMOVE_SHOW_NO_CHANNELS = "No channel here followed it."


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
