"""Bolt listeners, registered by the app factory: the slash command, buttons, App Home, unfurls."""
