"""Channel controls: preview, pause and resume, why."""

from bot.messages.basics import COMMAND

# -- preview -------------------------------------------------------------------------------

FILTER_TOO_MANY = "A filter takes at most {limit} terms, not {count}."
FILTER_TERM_TOO_LONG = "Filter terms are at most {limit} characters each."
FILTER_OPEN_QUOTE = "A quote in the filter is never closed; put phrases in pairs of quotes."
FILTER_LONE_SIGN = "`{term}` needs a word right after the {sign} (like +cuda or -rocm)."
FILTER_EMPTY_QUOTES = (
    '`""` is an empty phrase; put words between the quotes, like "flex attention".'
)
PREVIEW_NO_EPISODES = "*{show}* has no episodes yet, so there is nothing to preview."
PREVIEW_TITLE = "Preview of *{show}*: {filter}"
PREVIEW_SUMMARY = (
    "Of its last {total} episodes, this filter lets {posted} through and skips {skipped}."
)
# A show with one episode so far.
PREVIEW_SUMMARY_ONE_POSTED = "This filter lets its only episode through."
PREVIEW_SUMMARY_ONE_SKIPPED = "This filter skips its only episode."
# The notification text: the title and the summary as one line.
PREVIEW_TEXT = "{title}. {summary}"
PREVIEW_ONLY_EXCLUDES = (
    "This filter only excludes: it lets through every episode that mentions none of those."
)
PREVIEW_POST = ":white_check_mark: {day} {headline} — let through"
PREVIEW_POST_TERM = ":white_check_mark: {day} {headline} — let through: mentions {term}"
PREVIEW_SKIP_EXCLUDED = ":no_entry_sign: {day} {headline} — skipped: mentions {term}, excluded"
PREVIEW_SKIP_REQUIRED = (
    ":no_entry_sign: {day} {headline} — skipped: does not mention {term}, required"
)
PREVIEW_SKIP_NONE = ":no_entry_sign: {day} {headline} — skipped: mentions none of {terms}"
# What `subscribe` with the filter would post here, as its reply would say it (and do).
PREVIEW_FOOTER = (
    "Nothing changed. `{command} subscribe {args}` here would post each new episode this "
    "filter lets through, and at the next poll already: {episodes}."
)
PREVIEW_FOOTER_NONE = (
    "Nothing changed. `{command} subscribe {args}` here would post none of these: the next "
    "episode this filter lets through is the first posted here."
)
PREVIEW_FOOTER_EVERY = (
    "Nothing changed. `{command} subscribe {args}` here would post {newest} at the next "
    "poll, then every new one."
)
PREVIEW_FOOTER_EVERY_NEW = (
    "Nothing changed. `{command} subscribe {args}` here would post every new episode from "
    "the next poll on."
)
PREVIEW_NEWEST_ONE = "its newest episode"
PREVIEW_NEWEST_MANY = "its newest {count} episodes"
PREVIEW_FOOTER_FOLLOWED = (
    "Nothing changed. This channel follows *{show}* already: `{command} subscribe {args}` "
    "would filter the episodes that come next this way, and post none of these."
)
PREVIEW_HINT = "Which recent episodes this lets through: `{command} preview {args}`"
PREVIEW_HINT_MANY = "Which recent episodes this lets through: {commands}"
PREVIEW_HINT_ONE = "`{command} preview {args}`"

# -- pause / resume ------------------------------------------------------------------------

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
RESUME_NOT_SUBSCRIBED = "This channel does not follow {what}, so there is nothing to resume."
RESUME_NOTHING_PAUSED = "Nothing is paused in this channel."
RESUMED = "Resumed {shows}: new episodes are posted here again."
# {episodes}: "1 episode that arrived while paused stays", "3 episodes that … stay".
RESUMED_MISSED = (
    "{episodes} unposted (`{command} resume --catch-up` would have posted up to {limit})."
)
MISSED_ONE = "1 episode that arrived while paused stays"
MISSED_MANY = "{count} episodes that arrived while paused stay"
RESUMED_NONE_MISSED = "Nothing matching arrived while paused."
# {which}: CAUGHT_UP_ONE / _ALL / _NEWEST, by how many arrived and how many are posted.
RESUMED_CATCH_UP = "{which} posted shortly."
RESUMED_CATCH_UP_DAILY = (
    "{which} posted shortly, in one message (this channel gets a daily digest; the next one "
    "lists only what comes after)."
)
CAUGHT_UP_ONE = "The episode that arrived while paused is"
CAUGHT_UP_ALL = "The {count} episodes that arrived while paused are"
CAUGHT_UP_NEWEST = "The newest {posted} of the {count} episodes that arrived while paused are"
LIST_HELD_UNTIL = " — :double_vertical_bar: paused until {until}"
LIST_HELD_OPEN = " — :double_vertical_bar: paused until resumed"

# -- why -----------------------------------------------------------------------------------

NEED_WHY = "Why what? Give an episode link, a date, words of its title, or #PR."
WHY_NOTHING = "No episode matches that; try an episode link, a date, words of its title or #PR."
WHY_TITLE = "*{headline}* ({day}, {show})"
WHY_POSTED = "Posted here."
WHY_CAUGHT_UP = "Posted here after the pause, in one message with the rest of what came meanwhile."
WHY_POSTED_LINK = "<{link}|See it in the channel.>"
WHY_UPDATED = "Posted here, and updated {when} because the episode changed."
WHY_ON_ITS_WAY = "Planned for this channel and being posted; it should appear within minutes."
WHY_RETRYING = (
    "Not posted yet: Slack answered `{error}` when it was tried ({tried}); the next poll "
    "tries again ({when})."
)
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
    "Not posted: it came before the episodes this channel got (a channel's first poll posts "
    "only the show's newest, never its archive), or was one of more than 10 that arrived at "
    "once (the newest were posted)."
)
WHY_NOT_SUBSCRIBED = (
    "This channel does not follow *{show}*; `{command} subscribe {arg}` would post its new "
    "episodes here, not this one."
)
WHY_NOT_POLLED = "*{show}* has not been polled yet (next poll: {when}); it is looked for then."
WHY_FEED_FAILING = (
    "Not in the archive: the feed of *{show}* is failing (`{error}`); next try {when}."
)
WHY_NOT_IN_FEED = "No episode has that link, and the feeds read fine: it is not in the feed."
WHY_LENIENT = " The feed of *{show}* reads, though its XML has errors ({errors}); read leniently."
WHY_FOOTER = f"`{COMMAND} why` reads this channel's delivery record; replies are private."
