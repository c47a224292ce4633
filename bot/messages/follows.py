"""Follows: the direct messages a person gets for what they follow, and the replies to
``follow``, ``unfollow`` and ``following``."""

from bot.messages.basics import COMMAND

FOLLOW_DM_EPISODE = "A new *{show}* episode names {what}, which you follow: {episode}"
FOLLOW_DM_STATE = "{pr}, which you follow, was *{state}*{title}."
FOLLOW_DM_WHY_MANY = (
    "You get this because you follow {what} — `" + COMMAND + " following` lists them, `"
    + COMMAND + " unfollow …` stops one."
)
FOLLOW_DM_WHY = "You get this because you follow {what} — `" + COMMAND + " unfollow {arg}` to stop."

FOLLOWING_ADDED = (
    "Following {what}. You will get a direct message when a new episode of a show this "
    "workspace follows names it{pr_too}. `" + COMMAND + " unfollow {arg}` stops it; `"
    + COMMAND + " following` lists what you follow."
)
FOLLOWING_PR_TOO = ", and when it is merged, closed or reverted"
FOLLOWING_ALREADY = "You already follow {what}."
FOLLOWING_FULL = "You follow {limit} things already, the most there can be: unfollow one first."
UNFOLLOWED = "You no longer follow {what}."
NOT_FOLLOWING = "You do not follow {what}."
FOLLOWING_NONE = (
    "You follow nothing yet. `" + COMMAND + " follow 199720` (a PR) or `" + COMMAND
    + ' follow "flex attention"` (words) gets you a direct message when an episode names it.'
)
FOLLOWING_TITLE = "*You follow* (a direct message when a new episode names one):"
FOLLOW_ONLY_EXCLUDED = (
    "A follow needs a word to look for (`follow fsdp -rocm`): excluded words alone would match "
    "nearly every episode."
)
FOLLOW_NEED = "Follow what? A PR (`199720`, `owner/repo#199720` or its link) or words."
FOLLOW_WHICH_REPO = (
    "Which repository's #{number}? This channel's shows point to several: name it, e.g. "
    "`" + COMMAND + " follow {example}#{number}`."
)
FOLLOW_IS_A_SHOW = (
    "{show} is a show: to get its episodes in this channel, `" + COMMAND + " subscribe "
    "{show}`; to follow the word by direct message, quote it: `" + COMMAND + ' follow "{word}"`.'
)
