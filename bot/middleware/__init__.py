"""What runs between a verified request and its listener: tokens per team, replays, odd payloads."""
