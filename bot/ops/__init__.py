"""One process's operating parts: metrics, logs, readiness."""
