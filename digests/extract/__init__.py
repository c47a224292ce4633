"""Extraction, the third stage: parsed text → an episode's fields, one concept a module. Pure."""
