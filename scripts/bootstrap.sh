# Sourced by start.sh and test.sh: make the virtual environment and the model files ready.
# Each step is skipped when its result is already there, so later runs start straight away.
#   VENV                   where the virtual environment lives (default: .venv in the repository)
#   PILOTLIGHT_NO_SETUP=1  skip everything here (the container image is set up at build time)

pl_say() { printf '[pilotlight] %s\n' "$*" >&2; }

pl_python() {
  local candidate
  for candidate in "${PYTHON:-}" python3.11 python3; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  pl_say "Python 3.11 is required (set PYTHON=/path/to/python3.11)"; return 1
}

# pl_install_requirements FILE [PIP ARGS...]: install FILE into the venv unless it is unchanged.
pl_install_requirements() {
  local file=$1; shift
  local stamp="$VENV/.$(basename "$file").sha256"
  local sum; sum=$(sha256sum "$file" | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then return 0; fi
  pl_say "installing $file into $VENV"
  "$VENV/bin/python" -m pip install --disable-pip-version-check --no-cache-dir -r "$file" "$@"
  echo "$sum" > "$stamp"
}

pl_setup_venv() {
  if [ ! -x "$VENV/bin/python" ]; then
    local py; py=$(pl_python) || return 1
    pl_say "creating virtual environment $VENV"
    "$py" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet --upgrade pip
  fi
  local before; before=$(cat "$VENV/.requirements.txt.sha256" 2>/dev/null || true)
  pl_install_requirements requirements.txt
  # insightface without the dependencies it declares (onnxruntime, opencv-python): see the file.
  pl_install_requirements requirements-nodeps.txt --no-deps
  if [ "$before" != "$(cat "$VENV/.requirements.txt.sha256")" ]; then
    # numba compiles pymatting's kernels on rembg's first import (~30 s) and caches them beside
    # the package: pay that once here, not on the first start of the server.
    pl_say "compiling numba kernels once (first import of rembg)"
    "$VENV/bin/python" -c 'import rembg, rembg.bg' >/dev/null
  fi
}

pl_ensure_models() {
  "$VENV/bin/python" -m app.models ensure "$@"
}

# The upload page's on-device cut-out: u2netp and onnxruntime-web's WebAssembly runtime (from its
# npm package, with npm). Optional: without them the server runs and the page says the on-device
# cut-out is unavailable, so a missing npm only warns.
pl_ensure_ondevice() {
  if ! "$VENV/bin/python" -m app.models ensure u2netp web-runtime; then
    pl_say "the page's on-device cut-out is off: fetching its files failed (it needs npm: apt-get install npm)"
  fi
}
