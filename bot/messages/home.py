"""Sharing a reply in the channel, and the App Home tab."""

from bot.messages.basics import COMMAND

SHARED_BY = "Shared by <@{user}>"
SHARE_BUTTON = "Share in channel"
SHARE_GONE = "That reply cannot be shared any more; run the command again."

HOME_TITLE = "digestbot"
HOME_LATEST = "Latest episodes"
HOME_SUBSCRIPTIONS = "Subscriptions in this workspace"
HOME_FOLLOWING = "Following (a direct message to you when a new episode names one)"
HOME_NO_SUBSCRIPTIONS = f"No channel follows a show yet. Type `{COMMAND} subscribe` in one."
HOME_MORE = "…and {count} more."
HOME_HINT = (
    f"To get digests in a channel, type `{COMMAND} subscribe` there (or `{COMMAND} subscribe"
    f" <show> <keywords…>` for some episodes only); `{COMMAND} help` lists everything else."
)
