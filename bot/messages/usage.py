"""How each subcommand is typed: `help`, and the usage line after an error."""

from bot.messages.basics import COMMAND

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
    'daily off] [pr-updates on|off]` — post new episodes here; a filter is words and '
    '"phrases" (any of them), '
    "+required, -excluded (a word that is a show's name: quote it, or write `keywords: …`); "
    "`daily 17:00` (or `daily 5pm`; `daily` alone: the configured time, 17:00 by default): "
    "one message a day listing that day's instead, "
    "`daily off`: one per episode; `pr-updates on`: a reply in a digest's thread when one of "
    "its key PRs is merged, closed or reverted",
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
    "follow": f"`{COMMAND} follow <PR | words>` — a direct message to you when a new episode "
    "names that PR (`199720`, `pytorch/pytorch#199720` or its link; also when it is merged, "
    'closed or reverted) or those words (`fsdp`, `"flex attention"`: the filter syntax); '
    f"`{COMMAND} following` lists them, `{COMMAND} unfollow <PR | words>` stops one",
    "unfollow": f"`{COMMAND} unfollow <PR | words>` — stop a follow (as `following` lists it)",
    "following": f"`{COMMAND} following` — what you follow",
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
    " | resume [show] [--catch-up] | why <episode> | follow <PR | words> | following"
    " | unfollow <PR | words> | help]`"
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
    f"`{COMMAND} follow 199720`",
)
USAGE_LABEL = "Usage: {usage}"
EXAMPLES_LABEL = "Examples: {examples}"
HELP_FOOTER = "Replies are visible only to you; use *Share in channel* to post one for everyone."
UNKNOWN_SUBCOMMAND = "I don't know `{word}`."
