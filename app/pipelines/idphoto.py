"""The ID photo pipeline: models in, print-ready photo and compliance report out.

Shared by the HTTP endpoint and the command line (`python -m app idphoto`). The image math lives in
`app.imaging`; this module calls the models and the pure functions in order and times each stage.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from PIL import Image
from pymatting import estimate_foreground_ml

from ..errors import NoFace, PhotoRejected
from ..imageio import encode
from ..imaging import compliance, quality
from ..imaging.compose import flatten
from ..imaging.sheet import Paper, SheetLayout, plan_sheet, render_sheet
from ..models.faces import Face
from ..models.registry import FaceDetector
from ..models.segmentation import AlphaMatting, Segmenter
from ..imaging.placement import (
    Placement,
    PlacementError,
    check_chin_inside,
    check_inside,
    eye_midpoint,
    lighter,
    measure_head,
    place,
    roll_degrees,
    upright_matte,
    vertical_gradient,
    warp,
)
from ..specs import PhotoSpec
from ..timings import Timings

FaceMode = Literal["single", "largest"]
PEOPLE_MIN_WIDTH = 0.4  # faces narrower than this share of the largest face are not counted as people
REFINE_CONTEXT = 2.2  # the refining crop's side, in face sizes
JPEG_QUALITY_MAX = 95
JPEG_QUALITY_MIN = 25


@dataclass(frozen=True)
class IdPhotoOptions:
    spec: PhotoSpec
    background: tuple[int, int, int]
    gradient: bool = False
    fmt: Literal["jpeg", "png"] = "jpeg"
    dpi: int | None = None  # default: the spec's
    max_kb: int | None = None
    face: FaceMode = "single"
    alpha_matting: AlphaMatting | None = None

    @property
    def output_dpi(self) -> int:
        return self.dpi or self.spec.dpi


@dataclass(frozen=True)
class IdPhoto:
    pixels: np.ndarray  # (H, W, 3) uint8 RGB, exactly the spec's pixel size
    data: bytes  # the encoded file
    face: Face  # the face used, input px
    faces_found: int
    roll_degrees: float
    placement: Placement
    checks: list[compliance.Check]
    jpeg_quality: int | None
    # capture quality of the input face (app.imaging.quality): advice only, never part of `compliant`
    quality: list[dict[str, object]] = field(default_factory=list)

    @property
    def compliant(self) -> bool:
        return all(check.passed for check in self.checks)

    def report(self) -> dict[str, object]:
        return {"compliant": self.compliant, "checks": [check.to_dict() for check in self.checks]}


def people(faces: list[Face]) -> list[Face]:
    """The faces that count as people: not much smaller than the largest (posters, crowds far behind)."""
    if not faces:
        return []
    widest = max(face.width for face in faces)
    return [face for face in faces if face.width >= PEOPLE_MIN_WIDTH * widest]


def choose_face(faces: list[Face], mode: FaceMode) -> Face:
    counted = people(faces)
    if not counted:
        raise NoFace("no_face", "No face was found; use a photo that shows your face clearly, looking at the camera.",
                     details={"faces": 0})
    if mode == "single" and len(counted) != 1:
        raise PhotoRejected(
            "face_count",
            f"We found {len(counted)} faces; choose a photo with just you in it (or send face=largest).",
            details={"faces": len(counted)},
        )
    return max(counted, key=lambda face: face.area)


def refine(detector: FaceDetector, rgb: np.ndarray, face: Face) -> Face:
    """Detect again on a crop around `face`, so the face fills the detector's input and its
    landmarks are several times more precise (the roll estimate needs them to a pixel)."""
    height, width = rgb.shape[:2]
    cx, cy = (face.box[0] + face.box[2]) / 2.0, (face.box[1] + face.box[3]) / 2.0
    half = REFINE_CONTEXT * max(face.width, face.height) / 2.0
    x0, y0 = max(0, int(cx - half)), max(0, int(cy - half))
    x1, y1 = min(width, int(np.ceil(cx + half))), min(height, int(np.ceil(cy + half)))
    if x1 - x0 >= 0.8 * width and y1 - y0 >= 0.8 * height:
        return face  # the face already fills the photo
    candidates = detector.detect(np.ascontiguousarray(rgb[y0:y1, x0:x1]))
    if not candidates:
        return face
    best = min(candidates, key=lambda f: abs((f.box[0] + f.box[2]) / 2 + x0 - cx) + abs((f.box[1] + f.box[3]) / 2 + y0 - cy))
    offset = np.array([x0, y0], dtype=np.float32)
    box = (best.box[0] + x0, best.box[1] + y0, best.box[2] + x0, best.box[3] + y0)
    return Face(box=box, score=best.score, landmarks=best.landmarks + offset)


def clean_foreground(rgb: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Estimate the true person colours under soft edges (pymatting's multilevel foreground
    estimation), so no fringe of the old background survives the new one. (H, W, 3) uint8 RGB."""
    soft = (alpha > 0) & (alpha < 255)
    if not soft.any():
        return rgb
    foreground = estimate_foreground_ml(rgb.astype(np.float64) / 255.0, alpha.astype(np.float64) / 255.0)
    return np.clip(foreground * 255.0 + 0.5, 0, 255).astype(np.uint8)


def encode_photo(pixels: np.ndarray, options: IdPhotoOptions) -> tuple[bytes, int | None]:
    """Encode at the output dpi; with `max_kb`, the highest JPEG quality that fits (binary search)."""
    dpi = options.output_dpi
    if options.fmt == "png":
        data = encode(pixels, "png", dpi=dpi)
        if options.max_kb is not None and len(data) > options.max_kb * 1024:
            raise PhotoRejected("max_kb_unreachable", f"A PNG of this photo is {len(data) / 1024:.0f} KB, over "
                                f"max_kb={options.max_kb}; ask for format=jpeg.", details={"smallest_kb": round(len(data) / 1024, 1)})
        return data, None
    limit = None if options.max_kb is None else options.max_kb * 1024
    data = encode(pixels, "jpeg", dpi=dpi, jpeg_quality=JPEG_QUALITY_MAX)
    if limit is None or len(data) <= limit:
        return data, JPEG_QUALITY_MAX
    smallest = encode(pixels, "jpeg", dpi=dpi, jpeg_quality=JPEG_QUALITY_MIN)
    if len(smallest) > limit:
        raise PhotoRejected(
            "max_kb_unreachable",
            f"The smallest JPEG of this photo is {len(smallest) / 1024:.1f} KB, over max_kb={options.max_kb}.",
            details={"smallest_kb": round(len(smallest) / 1024, 1)},
        )
    low, high, best = JPEG_QUALITY_MIN, JPEG_QUALITY_MAX - 1, (smallest, JPEG_QUALITY_MIN)
    while low <= high:
        quality = (low + high) // 2
        candidate = encode(pixels, "jpeg", dpi=dpi, jpeg_quality=quality)
        if len(candidate) <= limit:
            best, low = (candidate, quality), quality + 1
        else:
            high = quality - 1
    return best


def make_id_photo(
    rgb: np.ndarray,
    *,
    detector: FaceDetector,
    segmenter: Segmenter,
    options: IdPhotoOptions,
    max_side: int,
    timings: Timings,
) -> IdPhoto:
    """From an upright (H, W, 3) uint8 RGB portrait to a compliant photo.

    Raises PhotoRejected (or NoFace) for photos that cannot make one (face count, cut off, max_kb).
    """
    spec = options.spec
    with timings.stage("detect"):
        faces = detector.detect(rgb)
        face = choose_face(faces, options.face)
    with timings.stage("align"):
        face = refine(detector, rgb, face)
        roll = roll_degrees(face.landmarks)
        pivot = eye_midpoint(face.landmarks)
    with timings.stage("quality"):
        capture = quality.assess(rgb, box=face.box, landmarks=face.landmarks)
    with timings.stage("segment"):
        matte = segmenter.matte(rgb, max_side=max_side, alpha_matting=options.alpha_matting)
    with timings.stage("place"):
        try:
            head = measure_head(face.landmarks, face.box, upright_matte(matte.alpha, roll_deg=roll, pivot=pivot))
            check_chin_inside(head, image_height=rgb.shape[0])
            placement = place(
                head,
                roll_deg=roll,
                pivot=pivot,
                size=(spec.width_px, spec.height_px),
                head_band=spec.head_height,
                eye_band=spec.eye_line,
            )
            check_inside(placement, matte.alpha)
        except PlacementError as exc:
            raise PhotoRejected("photo_cut_off" if exc.edge else "placement", exc.message, details={"edge": exc.edge}) from None
    with timings.stage("composite"):
        alpha_out = warp(matte.alpha, placement, fill=0)
        rgb_out = clean_foreground(warp(matte.foreground, placement, fill=0), alpha_out)
        if options.gradient:
            backdrop = vertical_gradient(placement.size, lighter(options.background), options.background)
            pixels = flatten(rgb_out, alpha_out, backdrop)
        else:
            pixels = flatten(rgb_out, alpha_out, options.background)
    with timings.stage("encode"):
        data, jpeg_quality = encode_photo(pixels, options)
    with timings.stage("check"):
        written = Image.open(io.BytesIO(data))
        seen = np.asarray(written.convert("RGB"))
        found = [(f.box, f.landmarks) for f in people(detector.detect(seen))]
        checks = compliance.report(
            rgb=seen,
            alpha=alpha_out,
            faces=found,
            size=(spec.width_px, spec.height_px),
            dpi=written.info.get("dpi"),
            expected_dpi=options.output_dpi,
            head_band=spec.head_height,
            eye_band=spec.eye_line,
            background=options.background,
            gradient=options.gradient,
        )
    return IdPhoto(
        pixels=pixels,
        data=data,
        face=face,
        faces_found=len(people(faces)),
        roll_degrees=roll,
        placement=placement,
        checks=checks,
        jpeg_quality=jpeg_quality,
        quality=capture,
    )



def print_sheet(photo: IdPhoto, spec: PhotoSpec, paper: Paper, *, copies: int | None, dpi: int) -> tuple[SheetLayout, np.ndarray]:
    """Copies of the photo at its true physical size on `paper` at `dpi`, with cut marks.

    ValueError (with the capacity) when the copies do not fit."""
    layout = plan_sheet(paper=paper, photo_mm=(spec.width_mm, spec.height_mm), dpi=dpi, copies=copies)
    return layout, render_sheet(np.ascontiguousarray(photo.pixels), layout)
