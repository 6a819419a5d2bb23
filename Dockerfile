# Love Letter Arena: one image for every process of the stack (api, worker, cron, house bots);
# docker-compose.yml picks the command. Configuration comes only from environment variables
# (docs/operations.md#configuration).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# What running needs, exactly as locked (every package pinned, with its hashes): a layer of its own
# that is rebuilt only when the lock file changes. Then the service (with its CLI tools: gunicorn,
# rq) and the SDK (llsdk: the house bots use it), built with the locked setuptools.
COPY requirements/run.txt requirements/run.txt
RUN pip install --require-hashes -r requirements/run.txt
COPY pyproject.toml README.md ./
COPY service/ service/
COPY sdk/ sdk/
COPY examples/ examples/
# docs/rules.md and docs/protocol.md are served as the /rules and /protocol pages
COPY docs/ docs/
RUN pip install --no-deps --no-build-isolation . ./sdk \
 && useradd --system --uid 10001 --gid 0 --home-dir /app --shell /usr/sbin/nologin arena

# Never run as root. /tmp holds gunicorn's PROMETHEUS_MULTIPROC_DIR.
USER arena

ENV HOST=0.0.0.0 \
    PORT=8000 \
    PROMETHEUS_MULTIPROC_DIR=/tmp/ll-metrics
EXPOSE 8000

HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-m", "service.ops.healthcheck", "api"]

CMD ["gunicorn", "-c", "service/ops/gunicorn_conf.py", "service.http.wsgi:app"]
