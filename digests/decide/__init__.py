"""Decisions, pure: what an update changes, which channel wants what, what is due, and why."""
