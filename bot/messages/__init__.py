"""User-visible strings of the Slack side, one module a concept, so wording stays consistent.

Everything here is plain text or mrkdwn written by us; feed text is never interpolated
without going through ``digests.render.escape`` first (callers do that).
"""
