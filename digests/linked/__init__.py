"""Linked documents: the transcripts and chapters an episode's feed item links to, fetched once and
used."""
