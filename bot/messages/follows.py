"""Follows: the direct messages a person gets for what they follow, and the replies to
``follow``, ``unfollow`` and ``following``."""

from bot.messages.basics import COMMAND

FOLLOW_DM_PR = "{pr}, which you follow, is named in a new *{show}* episode: {episode}"
FOLLOW_DM_WORDS = "A new *{show}* episode mentions {words}, which you follow: {episode}"
FOLLOW_DM_STATE = "{pr}, which you follow, was *{state}*{title}."
FOLLOW_DM_WHY = "You get this because you follow {what} — `" + COMMAND + " unfollow {arg}` to stop."
