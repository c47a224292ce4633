"""Adding a show from Slack (`add-show`) and removing it (`remove-show`)."""

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
