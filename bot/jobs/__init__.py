"""The jobs that run the pipeline: poll (fetch → … → deliver), daily, recap, enrichment, the sweep,
the clock."""
