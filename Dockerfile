# Love Letter Arena: one image for every process of the stack (migrate, api, worker, cron, house
# bots); docker-compose.yml picks the command. Configuration comes only from environment
# variables (docs/operations.md#configuration).
#
# Two stages: `build` installs what running needs into a virtualenv and compiles the rules
# engine with mypyc (a C compiler and Python's headers, only here); the final stage takes the
# virtualenv and the application with its compiled engine, and nothing else. The base image is
# pinned to an exact version; no registry could be reached where this was written to look up
# its digest: pin `python:3.11.11-slim-bookworm@sha256:...` once you can (docs/operations.md#image).
ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build

ENV PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# gcc and libc headers for mypyc's C (Python's own headers come with the python image)
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# What running needs, exactly as locked (every package pinned, with its hashes), in a virtualenv
# the final stage copies whole: a layer of its own, rebuilt only when the lock file changes.
COPY requirements/run.txt requirements/engine.txt requirements/
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --require-hashes -r requirements/run.txt
# mypyc (mypy, pinned with its hashes) for the build stage's own Python only: not in the image
RUN pip install --require-hashes -r requirements/engine.txt

COPY pyproject.toml README.md ./
COPY service/ service/
COPY sdk/ sdk/
COPY examples/ examples/
# docs/rules.md and docs/protocol.md are served as the /rules and /protocol pages
COPY docs/ docs/
COPY tools/build_engine.py tools/build_engine.py

# The engine compiled with mypyc into service/engine/_native (about 15 CPU-seconds). Should it
# fail, the build says why and goes on: the pure engine is the fallback, and GET /v1 reports
# which one runs (`engine`).
RUN python tools/build_engine.py
# The SDK (llsdk: the house bots use it) into the virtualenv, built with the locked setuptools;
# the service itself runs from /app (a .pth file puts it on the path), where its compiled
# engine is.
RUN /opt/venv/bin/pip install --no-deps --no-build-isolation ./sdk \
 && echo /app > /opt/venv/lib/python3.11/site-packages/arena-app.pth

FROM ${PYTHON_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/venv/bin:$PATH

WORKDIR /app
# the compiled engine's manifest names its sources by size and modification time: COPY keeps both
COPY --from=build /opt/venv /opt/venv
COPY --from=build /app/service /app/service
COPY --from=build /app/sdk /app/sdk
COPY --from=build /app/examples /app/examples
COPY --from=build /app/docs /app/docs
COPY --from=build /app/pyproject.toml /app/README.md /app/

# Never run as root. /tmp holds gunicorn's PROMETHEUS_MULTIPROC_DIR; /archive, the match archive
# (ARCHIVE_DIR), is the user's, so a new volume mounted there starts writable. The build log
# says which engine the image runs.
RUN useradd --system --uid 10001 --gid 0 --home-dir /app --shell /usr/sbin/nologin arena \
 && mkdir -p /archive && chown arena:0 /archive \
 && python -c "import service.engine as e; print('engine:', e.BUILD)"
USER arena

ENV HOST=0.0.0.0 \
    PORT=8000 \
    ARCHIVE_DIR=/archive \
    LOG_FORMAT=json \
    PROMETHEUS_MULTIPROC_DIR=/tmp/ll-metrics
EXPOSE 8000

HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-m", "service.ops.healthcheck", "api"]

CMD ["gunicorn", "-c", "service/ops/gunicorn_conf.py", "service.http.wsgi:app"]
