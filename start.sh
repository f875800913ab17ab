#!/usr/bin/env bash
# Run pilotlight on http://${HOST:-127.0.0.1}:${PORT:-8000} with the models in MODELS: nginx in front of
# gunicorn where nginx is installed (app/serving/launch.py), gunicorn alone on loopback otherwise.
# On a new machine this first creates .venv, installs requirements.txt and fetches the models
# (with progress); later runs start straight away. The container image's entry point too.
set -euo pipefail
cd "$(dirname "$0")"
export VENV=${VENV:-$PWD/.venv}
# shellcheck source=scripts/bootstrap.sh
. scripts/bootstrap.sh

# The container image compiles numba's kernels at build time into a read-only folder; numba only
# reads a cache it could also write, so seed a writable copy (a few MB) before the server starts.
if [ -n "${NUMBA_CACHE_SEED:-}" ] && [ -n "${NUMBA_CACHE_DIR:-}" ] && [ ! -e "$NUMBA_CACHE_DIR" ]; then
  cp -R "$NUMBA_CACHE_SEED" "$NUMBA_CACHE_DIR"
fi
if [ "${PILOTLIGHT_NO_SETUP:-0}" != "1" ]; then
  pl_setup_venv
  pl_ensure_models
  pl_ensure_ondevice
fi
exec "$VENV/bin/python" -m app.serving.launch
