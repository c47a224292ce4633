"""The Slack side of digestbot: app, commands, delivery, scheduler, CLI."""
