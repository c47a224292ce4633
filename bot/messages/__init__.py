"""User-visible strings of the Slack side, in one place so wording stays consistent.

Everything here is plain text or mrkdwn written by us; feed text is never interpolated
without going through ``digests.render.escape`` first (callers do that).

One module a concept; every name is re-exported here, so callers keep writing
``from bot import messages as msg`` and ``msg.X`` whichever module ``X`` lives in.
"""

# How a command is typed back (not wording): kept importable from here for callers.
from bot.command_text import command_arg as command_arg
from bot.command_text import subscribe_args as subscribe_args
from bot.command_text import subscribe_keywords as subscribe_keywords

# Star imports on purpose: the modules hold nothing but wording, and listing several
# hundred names twice would only let the two lists drift apart.
from bot.messages.answers import *  # noqa: F403
from bot.messages.basics import *  # noqa: F403
from bot.messages.control import *  # noqa: F403
from bot.messages.errors import *  # noqa: F403
from bot.messages.follows import *  # noqa: F403
from bot.messages.home import *  # noqa: F403
from bot.messages.shows import *  # noqa: F403
from bot.messages.subscriptions import *  # noqa: F403
from bot.messages.usage import *  # noqa: F403
