#!/usr/bin/env bash
# Run the whole test suite, set-up included: .venv, requirements, test requirements, models.
# Extra arguments go to pytest (for example: ./test.sh -k readyz).
set -euo pipefail
cd "$(dirname "$0")"
export VENV=${VENV:-$PWD/.venv}
# shellcheck source=scripts/bootstrap.sh
. scripts/bootstrap.sh

pl_setup_venv
pl_install_requirements requirements-dev.txt
MODELS=u2net,u2netp,modnet,centerface,landmarks68 pl_ensure_models
# onnxruntime-web's files for the page's on-device cut-out (its browser test needs them): npm fetches them
if ! command -v npm >/dev/null 2>&1; then
  pl_say "installing Debian's npm to fetch onnxruntime-web for the on-device cut-out"
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q npm
fi
pl_ensure_models web-runtime axe-core
# Debian's nginx, so the server tests run the real front (app/serving/launch.py), Debian's
# chromium for the browser test: Playwright drives it by path (it cannot download browsers here),
# and Debian's fonts-droid-fallback, the CJK font of /watermark (as the Dockerfiles install it)
missing=""
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$missing nginx"
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
[ -f /usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf ] || missing="$missing fonts-droid-fallback"
if [ -n "$missing" ]; then
  pl_say "installing Debian's$missing for the server and browser tests"
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
  # shellcheck disable=SC2086
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing
fi
export PATH="$PATH:/usr/sbin"  # nginx lives in /usr/sbin, outside an unprivileged user's PATH
# One test process per core, at most 4 (pytest-xdist), each taking whole files (--dist loadfile): a
# file's module-scoped server is started once. The files go out in the order collected, the long ones
# first (tests/conftest.py); xdist's own order, by number of tests, would leave the few long server
# tests for last. `./test.sh -n 0` runs in one process.
exec "$VENV/bin/python" -m pytest -n auto --maxprocesses 4 --dist loadfile --no-loadscope-reorder "$@"
