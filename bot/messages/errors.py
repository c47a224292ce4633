"""One-line refusals of what was typed (the usage follows), and failures on our side."""

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
    "`{value}` is not a pull-request number; write it like 199720, #199720, "
    "pytorch/pytorch#199720 or paste its GitHub link."
)
PR_RANGE = "{value} is too large to be a pull-request number."
PR_START = "PR numbers start at 1, so `{value}` is not one."
NEED_PR = "Which pull request? Give its number."
NEED_WORDS = "Search for what? Give a few words."
NEED_NEARBY = "Nearby what? Give a date, an episode link, words of a title, or #PR."
TOO_MANY_ARGS = "`{command}` takes no arguments."
ONLY_A_SHOW = "`{command}` takes no arguments but a show name, and `{value}` is not one."
ONE_SHOW_ONLY = (
    "`{command}` takes one show at a time, and {show} is a second: ask for each on its own."
)
EXTRA_ARGS = "Unexpected `{value}` after `{command}`."
UNKNOWN_SHOW = "There is no show called `{name}`. Shows: {shows}."
SHOW_TYPO = "There is no show called {name} — did you mean {show}?"
NO_SHOWS = "No shows are configured yet."
NAME_THE_SHOW = "Several shows are configured; name one: {shows}."
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

# -- failures on our side --------------------------------------------------------------

INTERNAL_ERROR = "Sorry, that failed on our side ({reason}). Try again in a moment."
REASON_STORE = "the episode archive is unreachable"
REASON_STORE_SLOW = "the database is not answering"
NOT_SAVED = "Nothing was saved."
REASON_UNEXPECTED = "an unexpected error; it has been logged"
UNREADABLE_REQUEST = "Sorry, I could not read that request. Try the command again."
