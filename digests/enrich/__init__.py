"""GitHub: pull-request details for the digests. ``client`` is the edge (HTTP);
``wire`` (query building, answer parsing) is pure, so importing it loads no HTTP library."""
