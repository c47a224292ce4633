"""Answers to the questions about episodes: recent, latest, nearby, pr, search, week."""

from bot.messages.basics import COMMAND

# -- answers ----------------------------------------------------------------------------

RECENT_TITLE = "Latest {n} episodes"
RECENT_TITLE_ONE = "Latest episode"
NO_EPISODES = "No episodes yet: the first poll may not have run. Try again in a few minutes."
# No episodes from the shows asked about: what the polls found, one show, or one line each.
NO_EPISODES_OF = "No episodes yet: {news}"
NO_EPISODES_MANY = "No episodes yet:"
FEED_HAD_NONE = "*{show}*'s feed had no episodes at its last poll, {when}."
FEED_NOT_READ = (
    f"*{{show}}*'s feed could not be read at its last poll, {{when}} (`{COMMAND} status` says why)."
)
FEED_NOT_POLLED = "*{show}* has not been polled yet. Try again in a few minutes."
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
WEEK_FELL_BACK_FILTERED = (
    "None of week {week}'s episodes so far match this channel's filter, so here is last week."
)
WEEK_NONE_MATCH = "None of week {week}'s episodes match this channel's filter."

# Buttons under a digest.
KEY_PRS_NONE = "This episode names no pull requests."
EPISODE_GONE = "That episode is no longer in the archive."
