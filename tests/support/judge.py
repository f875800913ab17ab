"""The judges of what the service makes, shared by the tests and the benchmarks: an ID photo judged
twice (by the service's own compliance report and by the independent inspector, which shares no code
with the service), the pose estimate's uncertainty from photos and their mirror images, and the
quality gate of int8 u2net against fp32 (issue 24) on the real-portrait corpus.

tests/test_corpus.py and tests/test_int8_quality.py assert on these; `python -m bench.idphoto` and
`python -m bench.int8` print them. The app is imported inside the functions that run it.
"""

from __future__ import annotations

import io
import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from . import degrade
from .corpus import PORTRAITS, default_dir, load_manifest
from .inspector import inspect_id_photo

# -- ID photos ------------------------------------------------------------------------------------


def inspector_bands(spec_id: str, background: str) -> dict[str, object]:
    """The keyword arguments `inspector.inspect_id_photo` needs for a spec, as plain numbers:
    `inspect_id_photo(rgb, **inspector_bands("icao", "white"))`."""
    from app.specs import get_spec, parse_colour

    spec = get_spec(spec_id)
    rules = spec.rules
    bands: dict[str, object] = {"width_mm": spec.width_mm, "height_mm": spec.height_mm, "head_band": spec.head_height,
                                "eye_band": spec.eye_line, "background": parse_colour(background),
                                "crown": "skull" if rules.crown == "skull" else "hair"}
    if rules.crown_margin is not None:
        bands["min_crown_margin_mm"] = rules.crown_margin.low or 0.0
        bands["max_crown_margin_mm"] = rules.crown_margin.high
    if rules.chin_margin is not None:
        bands["min_chin_margin_mm"] = rules.chin_margin.low or 0.0
        bands["max_chin_margin_mm"] = rules.chin_margin.high
    return bands


def run_pair(
    rgb: np.ndarray,
    spec_id: str,
    *,
    background: str,
    face: str,
    detector: object,
    segmenter: object,
    settings: object,
    landmarker: object | None = None,
    fallback: object | None = None,
) -> dict:
    """One portrait through one spec: the service's verdict and the inspector's. `background`: a
    colour, "keep", or "spec" (the spec's default). The inspector finds the head against a plain
    colour, so a kept background is judged by the service alone (`inspector` None). Failed lines of
    kind "edit" (an edit the authority forbids) are counted apart from the rest (`edit_failed`)."""
    from app.errors import ApiError, DomainError
    from app.pipelines.idphoto import IdPhotoOptions, make_id_photo
    from app.specs import get_spec, parse_background
    from app.timings import Timings

    spec = get_spec(spec_id)
    colour = parse_background(spec.default_background if background == "spec" else background)
    options = IdPhotoOptions(spec=spec, background=colour, face=face)
    started = time.perf_counter()
    try:
        photo = make_id_photo(rgb, detector=detector, segmenter=segmenter, options=options,
                              max_side=settings.working_max_side, timings=Timings(), landmarker=landmarker,
                              fallback=fallback)
    except (ApiError, DomainError) as exc:
        details = dict(exc.details or {}) if hasattr(exc, "details") else {}
        return {"status": "refused", "code": exc.code, "edge": details.get("edge"), "message": exc.message,
                "seconds": round(time.perf_counter() - started, 3)}
    seconds = time.perf_counter() - started
    # None: not judged; edit lines apart
    service_failed = [check.name for check in photo.checks if check.passed is False and check.kind != "edit"]
    edit_failed = [check.name for check in photo.checks if check.passed is False and check.kind == "edit"]
    to_check = [check.name for check in photo.checks if check.passed is None and check.kind == "pose"]
    # judged lines the measure cannot decide (a pose, or a rule within its reading's uncertainty):
    # the report does not call such a photo compliant
    undecided = [check.name for check in photo.checks if check.passed is None and check.judged]
    seen = np.asarray(Image.open(io.BytesIO(photo.data)).convert("RGB"))
    verdict = None if colour is None else inspect_id_photo(seen, **inspector_bands(spec_id, "#%02x%02x%02x" % colour))
    extension = None
    if photo.extended_mm and "bottom" in photo.extended_mm:
        # where the original's bottom edge lands in the output, and the body's columns there
        height_in = rgb.shape[0]
        centre_x = float(np.mean(photo.face.landmarks[[0, 1, 3, 4], 0]))
        u, v = photo.placement.input_to_output(np.array([[centre_x, float(height_in)]]))[0]
        half = 0.6 * float(photo.face.width) * photo.placement.scale
        extension = extension_metrics(seen, int(math.ceil(v)), (max(0, int(u - half)), min(seen.shape[1], int(u + half))))
    inspector_failed = [] if verdict is None else [name for name, rule in verdict["rules"].items() if not rule["pass"]]
    return {
        "status": "made",
        "service_failed": service_failed,
        "edit_failed": edit_failed,
        "edits": photo.edits,
        "unphotographed_share": photo.unphotographed_share,
        "service_to_check": to_check,
        "service_undecided": undecided,
        "service_checks": [check.to_dict() for check in photo.checks],
        "inspector_failed": inspector_failed,
        "inspector": verdict,
        "extension": extension,
        "seconds": round(seconds, 3),
        "data": photo.data,
    }


def extension_metrics(pixels: np.ndarray, seam_row: int, columns: tuple[int, int]) -> dict[str, float] | None:
    """How the clothing added below the original looks against the clothing above it, on the output
    (H, W, 3) uint8: `seam_row` is the first output row past the original's bottom edge, `columns`
    the body's columns there. seam_contrast: the mean step across the seam over the mean step between
    the ten rows above (1: no more visible than any other row boundary). streak_ratio: the
    directional streak energy (mean squared step across columns over that down rows) of the new
    part over the same of the clothing above (1: the same grain; streaks drawn down the new part make
    it large). None where either part is under 8 rows."""
    height = pixels.shape[0]
    x0, x1 = columns
    if seam_row < 12 or height - seam_row < 8 or x1 - x0 < 8:
        return None
    grey = pixels[:, x0:x1].astype(np.float64).mean(axis=2)
    steps = np.abs(np.diff(grey[seam_row - 11 : seam_row + 1], axis=0)).mean(axis=1)

    def energy(block: np.ndarray) -> float:
        return float((np.diff(block, axis=1) ** 2).mean() / max((np.diff(block, axis=0) ** 2).mean(), 1e-6))

    above = grey[max(0, seam_row - 24) : seam_row]
    below = grey[seam_row : min(height, seam_row + 48)]
    return {"seam_contrast": round(float(steps[-1] / max(steps[:-1].mean(), 1e-6)), 3),
            "streak_ratio": round(energy(below) / max(energy(above), 1e-6), 3)}


NEUTRAL_BACKGROUNDS = frozenset({"white", "off-white", "cream", "light-grey"})


def background_judged_right(label: str, checks: Sequence[dict], allowed: Sequence[str]) -> bool:
    """Whether the report's lines on a kept background agree with the portrait's label read by eye
    (corpus.Portrait.background): a busy one fails some background line; a shadow fails the shadow
    line; a plain one passes the plain and the clear lines, and a coloured or dark one is not
    called white or grey where the spec allows only neutral colours (a plain light one is, where
    it allows one)."""
    failed = {c["name"] for c in checks if c["name"].startswith("background") and c["pass"] is False}
    if label == "busy":
        return bool(failed)
    if label == "shadow":
        return "background_shadow" in failed
    plain = not {"background_uniformity", "background_clear"} & failed
    neutral_only = set(allowed) <= NEUTRAL_BACKGROUNDS
    if label == "plain-light":
        return plain and ("background_colour" in failed) is not bool(NEUTRAL_BACKGROUNDS & set(allowed))
    return plain and ("background_colour" in failed if neutral_only else True)


class MatteOnce:
    """The segmenter, remembering the last portrait's matte: every spec of one portrait uses the
    same matte, as eight requests for one photo would get (the segmentation does not depend on
    the spec), so the corpus run segments each portrait once."""

    def __init__(self, segmenter) -> None:  # noqa: ANN001
        self.segmenter = segmenter
        self.name = segmenter.name
        self.key: tuple | None = None
        self.value = None

    def matte(self, rgb: np.ndarray, **kwargs):  # noqa: ANN003, ANN201
        key = (id(rgb), rgb.shape, tuple(sorted((k, repr(v)) for k, v in kwargs.items())))
        if key != self.key:
            self.key, self.value = key, self.segmenter.matte(rgb, **kwargs)
        return self.value


def pose_consistency(detector, photos: dict[str, np.ndarray]) -> dict[str, object]:
    """How far the pose estimate can be trusted, with no ground truth needed: each photo and its
    mirror image go through the pipeline's detection and refinement; a perfect estimate reads
    opposite yaws and rolls and equal pitches. Per axis: the standard deviation of the mismatch
    (yaw + mirrored yaw, ...), one reading's (that / sqrt 2), and twice that (about 95 %), which
    app.imaging.pose.UNCERTAINTY_DEG must cover."""
    from app.imaging.pose import estimate_pose
    from app.pipelines.face_reading import refine

    def pose(rgb: np.ndarray):
        faces = detector.detect(np.ascontiguousarray(rgb))
        if len(faces) != 1:
            return None
        return estimate_pose(refine(detector, rgb, faces[0]).landmarks)

    mismatch: dict[str, list[float]] = {"yaw": [], "pitch": [], "roll": []}
    per_photo = {}
    for name, rgb in photos.items():
        a, b = pose(rgb), pose(rgb[:, ::-1])
        if a is None or b is None:
            continue
        per_photo[name] = {"yaw": (round(a.yaw, 1), round(-b.yaw, 1)), "pitch": (round(a.pitch, 1), round(b.pitch, 1)),
                           "roll": (round(a.roll, 1), round(-b.roll, 1))}
        mismatch["yaw"].append(a.yaw + b.yaw)
        mismatch["pitch"].append(a.pitch - b.pitch)
        mismatch["roll"].append(a.roll + b.roll)
    axes = {}
    for axis, values in mismatch.items():
        spread = float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")
        one = spread / np.sqrt(2.0)
        axes[axis] = {"mismatch_sd": spread, "one_reading_sd": one, "uncertainty_95": 2.0 * one}
    # What the mirror cannot see: a bias that the photo and its mirror share (the nose's depth, a
    # face's own asymmetry). On the portraits labelled frontal by eye, the mirror-averaged yaw
    # ((photo - mirror) / 2: the reading's noise halved, the bias kept) is the true small yaw plus
    # that bias; its spread bounds the bias. The yaw uncertainty is twice the root sum of squares.
    # Pitch the same (issue 23: the nose's depth and the mouth's place differ from face to face, and a
    # smile lifts the mouth corners the estimate reads; the mirror sees none of it).
    frontal = {p.name for p in PORTRAITS if p.expect == "photo"}
    for axis in ("yaw", "pitch"):
        averaged = [(row[axis][0] + row[axis][1]) / 2.0 for name, row in per_photo.items() if name in frontal]
        if len(averaged) > 1:
            bias = float(np.std(averaged, ddof=1))
            figures = axes[axis]
            figures["frontal_sd"] = bias
            figures["uncertainty_95"] = 2.0 * float(np.hypot(figures["one_reading_sd"], bias))
    return {"photos": per_photo, "axes": axes}


# -- the int8 gate (issue 24): int8 against fp32 on the real-portrait corpus ----------------------------

MIN_MEDIAN_IOU = 0.98
MIN_WORST_IOU = 0.95
MAX_MEAN_ALPHA_DIFF = 0.02
CALIBRATION_SOURCES = ("scikit-image", "insightface")  # corpus entries cut from a calibration photo's file


def matte_gap(reference: np.ndarray, candidate: np.ndarray) -> dict[str, float]:
    """Two (H, W) uint8 alphas of one photo: IoU of the masks alpha >= 128 (1.0 when both are empty)
    and the mean |difference| of the alphas on a 0-1 scale."""
    if reference.shape != candidate.shape:
        raise ValueError(f"alpha shapes differ: {reference.shape} and {candidate.shape}")
    a, b = reference >= 128, candidate >= 128
    union = int(np.logical_or(a, b).sum())
    iou = 1.0 if union == 0 else int(np.logical_and(a, b).sum()) / union
    diff = float(np.abs(reference.astype(np.int16) - candidate.astype(np.int16)).mean()) / 255.0
    return {"iou": iou, "alpha_diff": diff}


def gate_figures(gaps: Sequence[dict[str, float]]) -> dict[str, object]:
    """The gate over photos: median and worst IoU, mean |alpha difference| over all pixels of all
    photos' mean, and whether each bound holds."""
    if not gaps:
        raise ValueError("no photos")
    ious = [gap["iou"] for gap in gaps]
    diff = statistics.fmean(gap["alpha_diff"] for gap in gaps)
    figures = {
        "photos": len(gaps),
        "median_iou": statistics.median(ious),
        "worst_iou": min(ious),
        "mean_alpha_diff": diff,
        "worst_alpha_diff": max(gap["alpha_diff"] for gap in gaps),
    }
    figures["passes"] = bool(
        figures["median_iou"] >= MIN_MEDIAN_IOU and figures["worst_iou"] >= MIN_WORST_IOU and diff <= MAX_MEAN_ALPHA_DIFF
    )
    return figures


@dataclass(frozen=True)
class Portrait:
    name: str
    rgb: np.ndarray
    held_out: bool  # not cut from a file the calibration set also reads


def corpus_portraits(folder: Path | None = None, *, limit: int | None = None) -> list[Portrait]:
    """The corpus's portraits, (H, W, 3) uint8 RGB, in name order."""
    folder = folder or default_dir()
    manifest = load_manifest(folder)
    portraits = []
    for name in sorted(manifest)[:limit]:
        entry = manifest[name]
        with Image.open(folder / str(entry["file"])) as image:
            rgb = np.asarray(image.convert("RGB"))
        portraits.append(Portrait(name, rgb, held_out=entry["source"] not in CALIBRATION_SOURCES))
    return portraits


def compare(reference: dict[str, np.ndarray], candidate: dict[str, np.ndarray],
            portraits: Sequence[Portrait]) -> dict[str, object]:
    gaps = {p.name: matte_gap(reference[p.name], candidate[p.name]) for p in portraits}
    held_out = [gaps[p.name] for p in portraits if p.held_out]
    return {
        "all": gate_figures(list(gaps.values())),
        "held_out": gate_figures(held_out) if held_out else None,
        "worst_photo": min(gaps, key=lambda name: gaps[name]["iou"]),
        "photos": gaps,
    }


def idphoto_outcomes(registry: object, portraits: Sequence[Portrait], specs: Sequence[str], *,
                     settings: object, matte: str = "u2net") -> dict[tuple[str, str], str]:
    """(portrait, spec) -> the inspector's outcome of the ID photo: "compliant", "broken: rule,...",
    "refused: code" or "error: ...", with the service's detector and the segmenter `matte` of `registry`."""
    detector = registry.face_detector()[1]
    # as the service: u2net where the portrait matte misses the face
    portrait, general = registry.portrait_mattes(matte, "u2net")
    segmenter, fallback = MatteOnce(portrait), None if general is None else MatteOnce(general)
    outcomes = {}
    for portrait in portraits:
        for spec_id in specs:
            row = run_pair(portrait.rgb, spec_id, background="white", face="largest", detector=detector,
                           segmenter=segmenter, settings=settings, fallback=fallback)
            if row["status"] == "made":
                failed = row["inspector_failed"]
                outcomes[(portrait.name, spec_id)] = "broken: " + ",".join(failed) if failed else "compliant"
            else:
                outcomes[(portrait.name, spec_id)] = f"refused: {row['code']}"
    return outcomes


# -- capture lines (issue 33) -----------------------------------------------------------------------
# the line a capture label must fail; "good" fails none of them
CAPTURE_LINE = {"dim": "capture_exposure", "side-lit": "capture_lighting", "blurred": "capture_sharpness"}
# faults made on purpose on every portrait labelled "good": (label, copy's name, how)
CAPTURE_COPIES = (
    ("dim", "3 stops under", lambda rgb, face: degrade.darken(rgb, face, stops=3.0)),
    ("blurred", "blurred 4 % of the face", lambda rgb, face: degrade.blur(rgb, face, share=0.04)),
    ("side-lit", "right half at 25 % light", lambda rgb, face: degrade.side_light(rgb, face, light=0.25)),
)


def capture_outcomes(detector: object, portraits: Sequence[Portrait], *, copies: bool = True) -> list[dict[str, object]]:
    """The capture lines (`compliance.capture_checks`) on every corpus portrait, against its label by
    eye (`corpus.Portrait.capture`), and with `copies` on degraded copies of the "good" ones (labelled
    by what was done to them). One row each: {"portrait", "copy", "label", "failed", "right", "values"}; right is
    the label's own line failing ("good": none failing)."""
    from app.imaging import compliance, quality

    labels = {p.name: p.capture for p in PORTRAITS}

    def judge(name: str, copy: str | None, label: str, rgb: np.ndarray, face: object) -> dict[str, object]:
        components = quality.assess(rgb, box=face.box, landmarks=face.landmarks)  # type: ignore[attr-defined]
        lines = compliance.capture_checks(components)
        failed = sorted(line.name for line in lines if line.passed is False)
        right = (not failed) if label == "good" else CAPTURE_LINE[label] in failed
        return {"portrait": name, "copy": copy, "label": label, "failed": failed, "right": right,
                "values": {line.name: line.value for line in lines}}

    rows = []
    for portrait in portraits:
        faces = detector.detect(portrait.rgb)  # type: ignore[attr-defined]
        if not faces:
            continue
        face = max(faces, key=lambda f: f.area)
        label = labels.get(portrait.name, "good")
        rows.append(judge(portrait.name, None, label, portrait.rgb, face))
        if copies and label == "good":
            for fault, copy, make in CAPTURE_COPIES:
                rows.append(judge(portrait.name, copy, fault, make(portrait.rgb, face), face))
    return rows
