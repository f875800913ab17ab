"""The compliance report: the finished photo measured as an inspector would (pure functions).

Every check measures the output itself (pixels, the matte warped with it, a face detection run on
the output), never the numbers the pipeline aimed for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .placement import PERSON, chin_from_landmarks, roll_degrees

MAX_ROLL_DEG = 5.0  # ISO/IEC 19794-5 allows +-8 degrees of roll; 5 leaves room for landmark noise
MAX_CENTRE_OFFSET = 0.05  # face centre from the photo's vertical midline, share of the width
MAX_BACKGROUND_STD = 6.0  # per channel, across each row of pure background
MAX_BACKGROUND_DELTA = 12.0  # mean distance from the requested colour


@dataclass(frozen=True)
class Check:
    name: str
    value: float | int | str | None
    allowed: str
    passed: bool

    def to_dict(self) -> dict[str, object]:
        value = round(self.value, 4) if isinstance(self.value, float) else self.value
        return {"name": self.name, "value": value, "allowed": self.allowed, "pass": self.passed}


def in_band(value: float, band: tuple[float, float]) -> bool:
    return band[0] <= value <= band[1]


def band_text(band: tuple[float, float]) -> str:
    return f"{band[0]:.3f}-{band[1]:.3f}"


def crown_row(alpha: np.ndarray, *, x_range: tuple[float, float]) -> int | None:
    """Topmost row where at least 10% of the columns in `x_range` are person, or None."""
    x0, x1 = max(0, int(x_range[0])), min(alpha.shape[1], int(math.ceil(x_range[1])))
    if x1 <= x0:
        return None
    rows = np.flatnonzero((alpha[:, x0:x1] >= PERSON).mean(axis=1) >= 0.1)
    return int(rows[0]) if rows.size else None


def background_checks(
    rgb: np.ndarray, alpha: np.ndarray, *, colour: tuple[int, int, int], gradient: bool
) -> list[Check]:
    """Uniformity of the pure-background pixels (alpha < 2%): per-row spread and distance to `colour`
    (for a gradient, only the spread across rows is checked)."""
    background = alpha < 5
    if background.mean() < 0.02:
        return [Check("background_uniformity", None, "visible background", False)]
    pixels = rgb.astype(np.float32)
    spreads = []
    for row in range(0, rgb.shape[0], max(1, rgb.shape[0] // 64)):
        mask = background[row]
        if mask.sum() >= 8:
            spreads.append(float(pixels[row][mask].std(axis=0).max()))
    spread = max(spreads) if spreads else 0.0
    checks = [Check("background_uniformity", spread, f"<= {MAX_BACKGROUND_STD} (std per row)", spread <= MAX_BACKGROUND_STD)]
    if not gradient:
        delta = float(np.linalg.norm(pixels[background].mean(axis=0) - np.asarray(colour, np.float32)))
        checks.append(Check("background_colour", delta, f"<= {MAX_BACKGROUND_DELTA} from {colour}", delta <= MAX_BACKGROUND_DELTA))
    return checks


def report(
    *,
    rgb: np.ndarray,
    alpha: np.ndarray,
    faces: list[tuple[tuple[float, float, float, float], np.ndarray]],
    size: tuple[int, int],
    dpi: tuple[float, float] | None,
    expected_dpi: int,
    head_band: tuple[float, float],
    eye_band: tuple[float, float] | None,
    background: tuple[int, int, int],
    gradient: bool,
) -> list[Check]:
    """Measure the finished photo.

    `rgb` (H, W, 3) and `alpha` (H, W) uint8 are the output and its matte; `faces` are (box,
    landmarks) detected on the output; `dpi` is what the encoded file says.
    """
    height, width = rgb.shape[:2]
    checks = [
        Check("pixel_size", f"{width}x{height}", f"{size[0]}x{size[1]}", (width, height) == size),
        Check(
            "dpi",
            None if dpi is None else round(dpi[0]),
            str(expected_dpi),
            dpi is not None and abs(dpi[0] - expected_dpi) < 0.5 and abs(dpi[1] - expected_dpi) < 0.5,
        ),
        Check("face_count", len(faces), "1", len(faces) == 1),
    ]
    if len(faces) == 1:
        box, landmarks = faces[0]
        roll = roll_degrees(landmarks)
        eye_y = float((landmarks[0, 1] + landmarks[1, 1]) / 2.0)
        centre_x = float((landmarks[0, 0] + landmarks[1, 0] + landmarks[3, 0] + landmarks[4, 0]) / 4.0)
        face_width = box[2] - box[0]
        crown = crown_row(alpha, x_range=(centre_x - 0.35 * face_width, centre_x + 0.35 * face_width))
        chin = chin_from_landmarks(landmarks)
        head_ratio = None if crown is None else (chin - crown) / height
        checks.append(
            Check(
                "head_height_ratio",
                head_ratio,
                band_text(head_band),
                head_ratio is not None and in_band(head_ratio, head_band),
            )
        )
        eye_line = (height - eye_y) / height
        if eye_band is not None:
            checks.append(Check("eye_line_ratio", eye_line, band_text(eye_band), in_band(eye_line, eye_band)))
        offset = abs(centre_x - width / 2.0) / width
        checks.append(Check("horizontal_offset", offset, f"<= {MAX_CENTRE_OFFSET}", offset <= MAX_CENTRE_OFFSET))
        checks.append(Check("roll_degrees", roll, f"<= {MAX_ROLL_DEG} either way", abs(roll) <= MAX_ROLL_DEG))
    checks.extend(background_checks(rgb, alpha, colour=background, gradient=gradient))
    return checks
