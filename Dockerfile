# digestbot's image: `docker build -t digestbot .`, then `digestbot serve` (the default) or
# `digestbot clock` (docker run … digestbot clock). Untested here: the machines this was
# written on have no Docker engine (docs/operating.md, "Image"); tests/test_deploy.py
# checks that the install below is the README's.
# Built in the full image, which has the C compiler setup.py's mypyc build needs (the
# show-notes hot path compiled, docs/benchmarks.md); run in the slim one, the same /app.
FROM python:3.12 AS build
WORKDIR /app
COPY pyproject.toml setup.py README.md ./
COPY bot ./bot
COPY digests ./digests
COPY config ./config
# The README's install, with the PostgreSQL driver.
RUN python3 -m venv .venv && .venv/bin/pip install -e '.[postgres]'

FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1

RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin digestbot
WORKDIR /app
COPY --from=build /app /app

ENV PATH=/app/.venv/bin:$PATH \
    PORT=3000 \
    LOG_FORMAT=json
USER digestbot
EXPOSE 3000

# Liveness on METRICS_PORT when set (a clock has no other port), else on PORT.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; port = os.environ.get('METRICS_PORT') or os.environ.get('PORT', '3000'); urllib.request.urlopen(f'http://127.0.0.1:{port}/healthz', timeout=4)"]

ENTRYPOINT ["digestbot"]
CMD ["serve"]
