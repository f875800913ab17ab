"""The peer: rembg's own server, `rembg s --no-ui` (rembg 2.0.86), in its own virtual environment.

    .venv/bin/python -m bench.peer            # create or check BENCH_VENV (default /tmp/pilotlight-bench-venv)

The environment gets the project's requirements.txt (so the same rembg, onnxruntime and numpy) and
requirements-bench.txt and requirements-nodeps.txt (rembg's `cli` extra without gradio, and
insightface, installed with --no-deps: every version pinned). It is rebuilt when any of them changes. rembg's first import compiles numba kernels
(~30-60 s); that is paid here, once, not by the first measured start.

rembg s is started as its README says, on loopback, with the same model file as pilotlight:
U2NET_HOME points at MODEL_HOME, where rembg 2.0.86 finds u2net.onnx (same sha256 as its own
release) and downloads nothing. BROWSER=true keeps its start-up `webbrowser.open()` from opening
anything. It has no health endpoint and loads a model on the first request that names it.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from tests.support.harness import Call
from tests.support.photos import BENCH_VENV

from .common import MODEL, ROOT, model_home, say

REQUIREMENTS = (ROOT / "requirements.txt", ROOT / "requirements-bench.txt", ROOT / "requirements-nodeps.txt")


def _stamp() -> str:
    digest = hashlib.sha256()
    for path in REQUIREMENTS:
        digest.update(path.read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def ensure_venv(venv: Path = BENCH_VENV) -> Path:
    """Create (or reuse) the peer's virtual environment; returns its `rembg` executable."""
    rembg = venv / "bin" / "rembg"
    marker = venv / ".pilotlight-bench-stamp"
    if rembg.is_file() and marker.is_file() and marker.read_text() == _stamp():
        return rembg
    say(f"[peer] building {venv} (requirements.txt + requirements-bench.txt, a few minutes the first time)")
    python = venv / "bin" / "python"
    if not python.is_file():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)  # noqa: S603
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "-r", str(REQUIREMENTS[0])], check=True)  # noqa: S603
    for no_deps in REQUIREMENTS[1:]:
        subprocess.run([*pip, "--no-deps", "-r", str(no_deps)], check=True)  # noqa: S603
    say("[peer] first import of rembg (numba compiles pymatting's kernels once)")
    subprocess.run([str(python), "-c", "import rembg"], check=True)  # noqa: S603
    if not rembg.is_file():
        raise RuntimeError(f"{rembg} missing after installing rembg into {venv}")
    marker.write_text(_stamp())
    return rembg


def command(rembg: Path) -> list[str]:
    return [str(rembg), "s", "--host", "127.0.0.1", "--port", "{port}", "--no-ui"]


def env() -> dict[str, str]:
    return {"U2NET_HOME": str(model_home()), "BROWSER": "true"}


def call(photo: bytes) -> Call:
    """rembg s's upload endpoint: multipart `file`, form field `model` (its default is bria-rmbg)."""
    return Call("rembg s /api/remove", "/api/remove", "file", photo, {"model": MODEL})


def main() -> None:
    rembg = ensure_venv()
    print(f"{rembg} ready: {' '.join(command(rembg))}  env {env()}")  # noqa: T201


if __name__ == "__main__":
    main()
