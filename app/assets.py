"""The page's files, as data: where each lies on disk, the URL it is served at, how long a browser
may keep it, and the security headers every response of the page carries. Pure (no Flask): the
page's blueprint (app/web) serves them when the service runs alone, and nginx's configuration
(app/serving/front.py) serves the same files straight from disk, with the same headers, when
nginx is in front.

The on-device cut-out (web/static/ondevice.js) needs three files that are not in this package: the
WebAssembly runtime (`app.models.manifest.WEB_RUNTIME`, from onnxruntime-web's npm package) and
u2netp's model, both fetched into MODEL_HOME by `python -m app.models fetch u2netp web-runtime`.
They are served under `/ui/ondevice/<sha256 prefix>/<file>`, cached for a year as immutable (a new
file is a new URL), and the page checks each one's sha256 again before using it.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

from .models.manifest import WEB_RUNTIME, get_spec

STATIC = Path(__file__).resolve().parent / "web" / "static"
STATIC_URL = "/ui"
ASSETS = {"app.css": "text/css"}
# The page's code: ES modules by concern (app.js the entry), served at MODULE_URL/<version>/<name>, so
# each module's relative imports ("./results.js") name the version too and all are immutable.
MODULES = ("app.js", "common.js", "form.js", "upload.js", "results.js", "verdict.js", "local.js", "camera.js",
           "guidance.js", "ondevice.js")
MODULE_URL = f"{STATIC_URL}/v"
ONE_YEAR = 365 * 24 * 3600
IMMUTABLE = f"public, max-age={ONE_YEAR}, immutable"

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self' 'wasm-unsafe-eval'",
        "style-src 'self'",
        "img-src 'self' blob: data:",
        "connect-src 'self' blob:",
        "form-action 'self'",
        "base-uri 'none'",
        "object-src 'none'",
        "frame-ancestors 'none'",
    )
)
# Every response of the page and its files: scripts, styles and connections only from this origin,
# images also from blob: and data: URLs, no framing; WebAssembly may be compiled ('wasm-unsafe-eval',
# nothing else of eval). Cross-origin isolated (COOP same-origin, COEP require-corp): the page loads
# nothing from elsewhere anyway, and isolation lets the on-device cut-out run WebAssembly threads.
SECURITY_HEADERS = (
    ("Content-Security-Policy", CONTENT_SECURITY_POLICY),
    ("Cross-Origin-Opener-Policy", "same-origin"),
    ("Cross-Origin-Embedder-Policy", "require-corp"),
    ("Cross-Origin-Resource-Policy", "same-origin"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
)

ONDEVICE_MODEL = "u2netp"
ONDEVICE_TYPES = {".mjs": "text/javascript", ".wasm": "application/wasm", ".onnx": "application/octet-stream"}


@functools.cache
def asset_version() -> str:
    """12 hex digits of the assets' sha256: their URLs carry it (?v=), so a new file is a new URL."""
    digest = hashlib.sha256()
    for name in (*ASSETS, *MODULES):
        digest.update(name.encode() + b"\0" + (STATIC / name).read_bytes())
    return digest.hexdigest()[:12]


def module_url(name: str) -> str:
    """Where the page's module `name` is served: a URL that names the assets' version (immutable)."""
    return f"{MODULE_URL}/{asset_version()}/{name}"


@dataclass(frozen=True)
class OnDeviceFile:
    """A file the on-device cut-out downloads: where it is, and the sha256 and size it must have."""

    path: Path
    sha256: str
    size: int

    @property
    def url(self) -> str:
        return f"{STATIC_URL}/ondevice/{self.sha256[:16]}/{self.path.name}"

    @property
    def content_type(self) -> str:
        return ONDEVICE_TYPES[self.path.suffix]

    def describe(self) -> dict[str, object]:
        """What the page needs: the versioned URL, the sha256 (hex, for WebCrypto) and the SRI form."""
        return {
            "url": self.url,
            "sha256": self.sha256,
            "integrity": "sha256-" + base64.b64encode(bytes.fromhex(self.sha256)).decode(),
            "size": self.size,
        }


def ondevice_files(model_home: Path) -> dict[str, OnDeviceFile] | None:
    """{"runtime", "wasm", "model"}: the on-device cut-out's files, or None when one is missing or
    has the wrong size (checked with a stat per page view, so files fetched later are picked up)."""
    files = ondevice_places(model_home)
    if files is None:
        return None
    for item in files.values():
        try:
            if item.path.stat().st_size != item.size:
                return None
        except OSError:
            return None
    return files


def ondevice_places(model_home: Path) -> dict[str, OnDeviceFile] | None:
    """The on-device cut-out's files where `python -m app.models fetch` puts them, installed or not
    (None: the model has no pinned checksum, so the page never offers it)."""
    folder = model_home / WEB_RUNTIME.folder
    by_suffix = {
        Path(member).suffix: OnDeviceFile(folder / Path(member).name, checksum.sha256, checksum.size)
        for member, checksum in WEB_RUNTIME.files.items()
    }
    model = get_spec(ONDEVICE_MODEL)
    if model.pinned is None:  # the page checks the model's sha256: only a pinned one will do
        return None
    return {
        "runtime": by_suffix[".mjs"],
        "wasm": by_suffix[".wasm"],
        "model": OnDeviceFile(model_home / model.filename, model.pinned.sha256, model.pinned.size),
    }


@dataclass(frozen=True)
class ServedFile:
    """A file served as it lies on disk: at `url`, from `path`, as `content_type`; `immutable`: its
    URL names its content (cached for a year), else cached for a year only when the request's `?v=`
    is the current `asset_version()` and revalidated otherwise."""

    url: str
    path: Path
    content_type: str
    immutable: bool


def served_files(model_home: Path) -> list[ServedFile]:
    """Every file of the page that is served from disk: the assets, and the on-device cut-out's files
    whether installed yet or not (nginx serves one from the moment it appears: the fetch renames each
    into place whole, and a file's URL names its checksum)."""
    files = [ServedFile(f"{STATIC_URL}/{name}", STATIC / name, kind, False) for name, kind in ASSETS.items()]
    files += [ServedFile(module_url(name), STATIC / name, "text/javascript", True) for name in MODULES]
    ondevice = ondevice_places(model_home) or {}
    files += [ServedFile(item.url, item.path, item.content_type, True) for item in ondevice.values()]
    return files
