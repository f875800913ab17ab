# pilotlight CPU image: docker build -t pilotlight . && docker run -p 8000:8000 pilotlight
# Multi-stage: `venv` installs the requirements; `models` fetches the models and the page's
# WebAssembly runtime (sha256 verified);
# `builder` cuts the venv down, compiles numba's kernels once and byte-compiles the app; the
# runtime stage copies only what the server runs. Stage order is what a node pulls: the venv and
# models layers depend only on the requirements files and the fetch code, never on the rest of
# app/, so a code change rebuilds and ships only the last layers (.ci/run checks it).
ARG BASE_IMAGE=python:3.11-slim-bookworm

FROM ${BASE_IMAGE} AS venv
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    MODEL_HOME=/opt/models \
    NUMBA_CPU_NAME=generic
WORKDIR /src
# binutils only for `strip` in slim-venv (the build stages are thrown away). Every apt package is
# pinned by version, every wheel by hash: scripts/lock-image-inputs.sh refreshes both.
RUN apt-get update \
 && apt-get install -y --no-install-recommends binutils=2.40-2 \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/venv
COPY requirements.lock requirements-nodeps.lock ./
# The requirements' locks (each pin with its file's sha256); insightface with --no-deps
# (requirements-nodeps.txt says why); one layer, rebuilt only when a requirements file changes.
RUN /opt/venv/bin/pip install --no-cache-dir --require-hashes -r requirements.lock \
 && /opt/venv/bin/pip install --no-cache-dir --require-hashes --no-deps -r requirements-nodeps.lock \
 && if /opt/venv/bin/pip show -q opencv-python 2>/dev/null; then \
      echo "opencv-python installed next to opencv-python-headless" >&2; exit 1; fi

# The fetch command and only what it imports (it needs pip for its fallback source, so it runs on
# the full venv; npm fetches onnxruntime-web's files for the page's on-device cut-out, and trusts the
# system CA bundle through NODE_EXTRA_CA_CERTS, as pip does, behind a TLS-inspecting proxy). The
# pre-optimised models depend on the CPU that runs them: each container writes its own at start
# (OPTIMISED_HOME, below), so the image carries only the original files. U2NET_VARIANTS: which u2net
# files the image ships. `fp32` (default: int8 is opt-in until it passes the quality gate,
# app/models/precision.py); `int8` alone (derived here from the verified fp32 file, calibrated on
# photos the venv's packages ship, app/models/quantised.py, ~35 s and ~2.3 GB of memory;
# MODEL_PRECISION=auto runs it and the gzip pull is ~126 MB smaller); `both` (MODEL_PRECISION chooses). The files get one fixed mtime: a
# rebuild of this stage then yields the same layer.
FROM venv AS models
ARG MODELS_TO_FETCH="u2net u2netp modnet centerface landmarks68"
ARG U2NET_VARIANTS=fp32
RUN apt-get update \
 && apt-get install -y --no-install-recommends npm=9.2.0~ds1-1 \
 && rm -rf /var/lib/apt/lists/*
COPY app/__init__.py app/native_threads.py app/config.py app/front_budget.py app/
COPY app/models/__init__.py app/models/__main__.py app/models/fetch.py app/models/checksums.py app/models/manifest.py \
     app/models/optimised.py app/models/quantised.py app/models/faceapi_onnx.py app/models/
# hadolint ignore=SC2086
RUN NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
    /opt/venv/bin/python -m app.models fetch --quiet --no-optimise \
      "$(case "$U2NET_VARIANTS" in int8) echo --int8-only;; both) echo --int8;; *) echo --no-int8;; esac)" \
      ${MODELS_TO_FETCH} web-runtime \
 && find /opt/models -exec touch -h -d @0 {} +

FROM venv AS builder
COPY docker/slim-venv.sh /usr/local/bin/slim-venv
RUN slim-venv /opt/venv
# rembg's first import compiles pymatting's numba kernels (~30 s) and caches them beside the
# package; NUMBA_CPU_NAME=generic makes that cache valid on any x86-64 CPU. numba only uses a
# cache folder it can write to, so start.sh copies it to /tmp (NUMBA_CACHE_SEED) at start: no
# container start pays the compilation again. Importing the libraries the app uses here also
# leaves their .pyc files (the root filesystem is read-only at run time), before app/ is copied:
# nothing below writes into /opt/venv.
ENV PYTHONDONTWRITEBYTECODE= \
    NUMBA_CACHE_DIR=/opt/numba-cache
RUN /opt/venv/bin/python -c "import flask, werkzeug, jinja2, gunicorn.app.wsgiapp, gunicorn.arbiter, gunicorn.workers.gthread, prometheus_client, prometheus_client.multiprocess, numpy, PIL.Image, PIL.ImageCms, PIL.ImageOps, onnx, onnxruntime, scipy.ndimage, scipy.optimize, skimage.data, skimage.transform, rembg, rembg.bg, pymatting, cv2, insightface, pi_heif, tqdm"
COPY app/ app/
RUN /opt/venv/bin/python -m compileall -q app

FROM ${BASE_IMAGE}
ARG BASE_IMAGE
LABEL org.opencontainers.image.title="pilotlight" \
      org.opencontainers.image.description="An always-warm AI portrait server: ID photos and cut-outs" \
      org.opencontainers.image.base.name="${BASE_IMAGE}"
# The base it was built on, in the build's log and the image's label. Pin it by digest:
# --build-arg BASE_IMAGE=python:3.11-slim-bookworm@sha256:... (scripts/lock-image-inputs.sh says how).
RUN echo "pilotlight: built on BASE_IMAGE=${BASE_IMAGE}"
ENV PATH=/opt/venv/bin:$PATH \
    VENV=/opt/venv \
    PILOTLIGHT_NO_SETUP=1 \
    HOST=0.0.0.0 \
    PORT=8000 \
    FRONT=nginx \
    MODEL_HOME=/opt/models \
    OPTIMISED_HOME=/tmp/pilotlight-optimised \
    NUMBA_CPU_NAME=generic \
    NUMBA_CACHE_DIR=/tmp/numba-cache \
    NUMBA_CACHE_SEED=/opt/numba-cache \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
# nginx in front of gunicorn (app/serving/launch.py renders its configuration into /tmp at start),
# tini as PID 1: it reaps orphans and hands SIGTERM to the launcher, which stops nginx first, then
# gunicorn. policy-rc.d keeps the package from starting nginx inside the build; apt's caches go
# (its package caches alone were most of a 40 MB layer). fonts-droid-fallback: the CJK font of
# /watermark (app/imaging/watermark.py; Apache-2.0, no dependencies). docker/dpkg-slim.cfg keeps
# out of the layer what these packages ship and nothing here runs: the package's second, smaller
# copy of the font, manuals, changelogs (the copyright files stay), translations, tini's static
# twin, and iproute2's tools (nginx's package depends on iproute2 for the init scripts a container
# never runs): 4 MB of the gzip pull, which the 500 MB bound (docs/deploy.md) needed for the font.
COPY docker/dpkg-slim.cfg /etc/dpkg/dpkg.cfg.d/pilotlight-slim
RUN printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d \
 && apt-get update \
 && apt-get install -y --no-install-recommends nginx=1.22.1-9+deb12u9 nginx-common=1.22.1-9+deb12u9 tini=0.19.0-1+b3 fonts-droid-fallback=1:6.0.1r16-1.1 \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb /var/log/apt /var/log/dpkg.log \
      /var/cache/debconf/*-old /usr/sbin/policy-rc.d /etc/nginx/sites-enabled/* \
 && useradd --system --uid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin pilotlight
COPY --from=builder /opt/venv /opt/venv
COPY --from=models /opt/models /opt/models
COPY --from=builder /opt/numba-cache /opt/numba-cache
WORKDIR /srv/pilotlight
COPY --from=builder /src/app app/
COPY gunicorn.conf.py start.sh ./
COPY scripts/bootstrap.sh scripts/
USER 10001
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=120s --retries=3 \
  CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2).status != 200)"]
ENTRYPOINT ["/usr/bin/tini", "--", "./start.sh"]
