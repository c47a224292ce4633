"""The digests domain: episodes from feeds and pages, stored, rendered. No Slack in here."""
