"""subscribe, unsubscribe, list and status; what the channel is told; the DM when Slack
refuses a channel."""

from bot.messages.basics import COMMAND

SUBSCRIBED = "This channel now gets new *{show}* episodes{filter}."
SUBSCRIBED_FILTER = " that mention {keywords}"
# A filter with +/- terms read out ({rule}: "mentions “a”, never “b”"); only -terms: {terms}.
SUBSCRIBED_RULE = " that pass its filter: {rule}"
SUBSCRIBED_EXCEPT = " — everything except those that mention {terms}"
SUBSCRIBED_MANY = "This channel now gets new episodes of {shows}{filter}."
# `subscribe … daily`: after "episodes" (or after the filter), in the first line.
SUBSCRIBED_DAILY = " once a day at {at} ({timezone})"
SUBSCRIBED_DAILY_AFTER_FILTER = ", once a day at {at} ({timezone})"
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
# The same in daily mode: what arrived since the last daily time goes in the next daily one.
BACKFILL_DAILY_NONE = (
    "Nothing new matches yet — the next matching episode goes in the daily digest here at {when}."
)
BACKFILL_DAILY_POSTS = "Matching already, and in the daily digest here at {when}: {episodes}."
BACKFILL_MORE = " and {count} more"
UNSUBSCRIBED = "This channel no longer gets *{show}* episodes."
UNSUBSCRIBED_ALL = "This channel no longer gets any episodes ({removed} subscription{s} removed)."
REPLACES_FILTER = "It replaces the earlier filter {keywords}."
REPLACES_RULE = "It replaces the earlier filter ({rule})."
REPLACES_EXCEPT = "It replaces the earlier filter (everything except {terms})."
REPLACES_NO_FILTER = "It replaces the earlier subscription to every *{show}* episode."
SUBSCRIBE_RESUMES = "It had been paused ({reason}) and is active again."
# What else changed in a subscription the channel had (its filter's change is said above).
SUBSCRIBE_RECAP_NOW_ON = "Its weekly recap is now on."
SUBSCRIBE_RECAP_NOW_OFF = "Its weekly recap is now off."
SUBSCRIBE_PR_NEWS_ON = (
    "When a key PR of one of its digests is merged, closed or reverted, a reply in that "
    "digest's thread now says so."
)
SUBSCRIBE_PR_NEWS_OFF = "Its digests' threads no longer get PR news."
SUBSCRIBE_NOW_PER_EPISODE = "It is back to a digest per episode (no more daily digest)."
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
ANNOUNCE_PR_NEWS_ON = "turned PR news in digest threads on for {show}"
ANNOUNCE_PR_NEWS_OFF = "turned PR news in digest threads off for {show}"
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
LIST_PR_NEWS = " — PR news in threads"
LIST_DAILY = " — daily at {at} ({timezone})"
STATUS_DAILY_TITLE = "Daily digest here"
STATUS_DAILY_LINE = "• *{show}* at {at} ({timezone}) · next {next}"
LIST_PAUSED = " — :pause_button: paused since {when}: {reason}"
STATUS_TITLE = "Feed status"
STATUS_SCOPE = (
    f"The shows this channel follows (`{COMMAND} status` in a channel that follows none "
    "lists every show)."
)
STATUS_LINE = (
    "*{show}*\nLast poll: {polled} · last success: {success}\n"
    "Last error: {error} · failures in a row: {failures}\nNext poll: {next}"
)
# A feed that reads, though its XML is not well-formed: {errors} is ``lenient.summary``.
STATUS_LENIENT = "\nIts XML has errors ({errors}); read leniently"
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
