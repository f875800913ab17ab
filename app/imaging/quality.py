"""Capture quality of the input photo's face: the ISO/IEC 29794-5 (OFIQ) components that need no model.

Pure functions (numpy, OpenCV). The pipeline passes the decoded upload and the chosen face's box and
five landmarks (insightface order: left eye, right eye, nose, left and right mouth corner, in image
px); `assess` returns one dict per component:

    {"name", "label", "value", "threshold": {"min"/"max", "reason"}, "passed", "advice"}

and a last, unchecked line for what needs dense landmarks (eyes open, mouth closed): `passed` None.

The face is first aligned as OFIQ does before its measures: rotated so the eyes are level and scaled
to a fixed inter-ocular distance (IED, `ALIGNED_IED` px), so a value means the same for a selfie and a
studio photo. The face region is an ellipse from the brows to below the mouth and between the cheeks,
drawn from the landmarks (OFIQ uses a 98-landmark polygon and a face-parsing model; five landmarks
give an ellipse, which leaves hair and background out on frontal portraits).

What is ours and not OFIQ's: OFIQ's sharpness is a random forest over several filter responses; ours
is the variance of the Laplacian over the local contrast on the aligned face, a documented simpler
proxy. OFIQ's compression-artefact component runs a CNN (an ONNX model); ours is the classic JPEG
8x8 blockiness ratio, which needs none but only sees JPEG's grid (an image rescaled after
compression hides it). OFIQ maps each raw value to 0-100 with fitted sigmoids; we keep the raw value
and a pass/fail threshold calibrated on real portraits (scikit-image's astronaut, insightface's
t1.jpg) and degraded copies of them (see tests/test_quality.py). Quality never refuses a photo;
three of its measures are judged in the compliance report too (`compliance.capture_checks`).

Eyes open and mouth closed need dense landmarks: the mouth is judged in the compliance report with
face-api.js's 68-point net (app/models/landmarks68.py, app/imaging/expression.py); here the line
stays unchecked. mediapipe was weighed for them and declined: its current wheels (1.2.3: 43 MB download, 128 MB installed; 0.10.35)
ship no face-mesh weights (the Tasks API downloads a .task file), and 0.10.21, the last wheel with
the 468-point model inside, pins numpy<2 and protobuf<5 and fails under ours with --no-deps (its
solutions import matplotlib, and its graph options break on protobuf 7).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .opencv import cv2

ALIGNED_IED = 64  # px between the eye centres in the aligned face
ALIGNED_SIZE = (192, 224)  # (width, height) of the aligned face, in px
EYES_AT = (96.0, 80.0)  # where the eye midpoint lands in the aligned face
# the farthest aligned-window corner from the eye midpoint, in IEDs (plus a small margin)
REACH = math.hypot(max(EYES_AT[0], ALIGNED_SIZE[0] - EYES_AT[0]), max(EYES_AT[1], ALIGNED_SIZE[1] - EYES_AT[1])) / ALIGNED_IED + 0.05

# Thresholds; each reason says where the number comes from.
MIN_SHARPNESS = 0.8
MAX_UNDER_EXPOSED = 0.02  # of the lit half of the face, clipped to black
MAX_OVER_EXPOSED = 0.05
MAX_LUMINANCE = 0.92  # mean face luminance, 0-1: washed out overall (no lower end: a dark skin is not a fault)
MIN_HIGHLIGHTS = 0.47  # the lit half's brightest 1 % (eye white, the skin's own highlights), 0-1
MIN_DYNAMIC_RANGE_BITS = 4.5
MIN_ILLUMINATION_RATIO = 0.70
MAX_BLOCKINESS = 1.5

CLIPPED_BLACK = 8  # a pixel whose three channels are all 0-8 is clipped to black: nothing recorded there
BRIGHT_MIN = 247  # OFIQ OverExposurePrevention: luminance 247-255 counts as bright
BLOCK = 8  # the JPEG block size


@dataclass(frozen=True)
class Component:
    name: str
    label: str
    value: float | None
    low: float | None  # the smallest passing value, or None
    high: float | None  # the largest passing value, or None
    reason: str
    advice: str

    @property
    def passed(self) -> bool | None:
        if self.value is None:
            return None
        return (self.low is None or self.value >= self.low) and (self.high is None or self.value <= self.high)

    def to_dict(self) -> dict[str, object]:
        threshold: dict[str, object] = {}
        if self.low is not None:
            threshold["min"] = self.low
        if self.high is not None:
            threshold["max"] = self.high
        threshold["reason"] = self.reason
        value = None if self.value is None else round(float(self.value), 4)
        return {"name": self.name, "label": self.label, "value": value, "threshold": threshold, "passed": self.passed, "advice": self.advice}


NOT_CHECKED = {
    "name": "eyes_open_mouth_closed",
    "label": "Eyes open, mouth closed",
    "value": None,
    "threshold": {"reason": "judged in the compliance report, not here: the eyes by OpenCV's eye cascade (eyes_open), "
                            "the mouth by the landmarks68 model (mouth_closed)"},
    "passed": None,
    "advice": "Eyes open and mouth closed are judged with the rules above, where the spec asks for them.",
}


def luminance(rgb: np.ndarray) -> np.ndarray:
    """ITU-R BT.601 luma (as OFIQ's GetLuminanceImageFromBGR), float32 0-255."""
    pixels = rgb.astype(np.float32)
    return pixels[..., 0] * 0.299 + pixels[..., 1] * 0.587 + pixels[..., 2] * 0.114


def align(rgb: np.ndarray, landmarks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The face rotated upright and scaled to ALIGNED_IED: (aligned RGB, valid-pixel mask, landmarks
    in aligned px). Pixels outside the photo are marked invalid, never measured."""
    points = np.asarray(landmarks, dtype=np.float64).reshape(5, 2)
    left, right = points[0], points[1]
    dx, dy = right - left
    ied = math.hypot(dx, dy)
    if ied < 1.0:
        raise ValueError("the eye landmarks coincide")
    scale = ALIGNED_IED / ied
    angle = math.atan2(dy, dx)
    cos, sin = scale * math.cos(-angle), scale * math.sin(-angle)
    mid = (left + right) / 2.0
    # Only the face's neighbourhood is read: the aligned window reaches at most REACH IEDs from the eye
    # midpoint, at any roll, so a 12-megapixel upload costs what a 1-megapixel one does.
    reach = REACH * ied
    x0, y0 = max(0, int(mid[0] - reach)), max(0, int(mid[1] - reach))
    x1, y1 = min(rgb.shape[1], int(math.ceil(mid[0] + reach))), min(rgb.shape[0], int(math.ceil(mid[1] + reach)))
    if x1 - x0 < 2 or y1 - y0 < 2:
        raise ValueError("the face is outside the photo")
    rgb = rgb[y0:y1, x0:x1]
    points = points - np.array([x0, y0], dtype=np.float64)
    mid = mid - np.array([x0, y0], dtype=np.float64)
    matrix = np.array([[cos, -sin, 0.0], [sin, cos, 0.0]])
    matrix[:, 2] = np.array(EYES_AT) - matrix[:, :2] @ mid
    interpolation = cv2.INTER_AREA if scale < 1.0 else cv2.INTER_LINEAR
    size = ALIGNED_SIZE
    if scale < 1.0:
        # INTER_AREA only averages when resizing; for a warp, average first (resize), then rotate.
        small = cv2.resize(rgb, (max(1, round(rgb.shape[1] * scale)), max(1, round(rgb.shape[0] * scale))), interpolation=cv2.INTER_AREA)
        shrink = np.diag([small.shape[1] / rgb.shape[1], small.shape[0] / rgb.shape[0]])
        warp_from_small = matrix.copy()
        warp_from_small[:, :2] = matrix[:, :2] @ np.linalg.inv(shrink)
        aligned = cv2.warpAffine(small, warp_from_small, size, flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        valid = cv2.warpAffine(np.full(small.shape[:2], 255, np.uint8), warp_from_small, size, flags=cv2.INTER_NEAREST, borderValue=0)
    else:
        aligned = cv2.warpAffine(rgb, matrix, size, flags=interpolation, borderMode=cv2.BORDER_REPLICATE)
        valid = cv2.warpAffine(np.full(rgb.shape[:2], 255, np.uint8), matrix, size, flags=cv2.INTER_NEAREST, borderValue=0)
    moved = points @ matrix[:, :2].T + matrix[:, 2]  # `points` are in the crop's px, as `matrix` expects
    return aligned, valid > 0, moved


def face_mask(aligned_landmarks: np.ndarray) -> np.ndarray:
    """An ellipse over the face in the aligned image: brows to below the mouth, cheek to cheek."""
    eyes_y = EYES_AT[1]
    mouth_y = float(aligned_landmarks[3:5, 1].mean())
    top = eyes_y - 0.45 * ALIGNED_IED
    bottom = mouth_y + 0.35 * ALIGNED_IED
    centre = (round(EYES_AT[0]), round((top + bottom) / 2))
    axes = (round(0.85 * ALIGNED_IED), max(1, round((bottom - top) / 2)))
    mask = np.zeros((ALIGNED_SIZE[1], ALIGNED_SIZE[0]), np.uint8)
    cv2.ellipse(mask, centre, axes, 0, 0, 360, 255, thickness=-1)
    return mask > 0


def sharpness(grey: np.ndarray, mask: np.ndarray) -> float:
    """100 x the variance of the Laplacian of Gaussian (sigma IED/64, one pixel here) inside the face
    over the mean local variance of the luminance (Gaussian window, sigma IED/16).

    The one-pixel Gaussian first makes it ignore what is finer than facial detail: sensor noise and
    the ringing of JPEG/HEVC, which would otherwise read as sharpness on a blurred photo. Dividing by
    the local contrast, not the face's global variance, keeps the value for a dim, flat or
    half-shadowed face (a shadow edge raises the global variance a lot and the local one little).
    The border is eroded so the ellipse edge adds nothing."""
    inner = cv2.erode(mask.astype(np.uint8), np.ones((5, 5), np.uint8)) > 0
    if not inner.any():
        return 0.0
    smooth = cv2.GaussianBlur(grey, (0, 0), ALIGNED_IED / 64.0)
    laplacian = cv2.Laplacian(smooth, cv2.CV_32F, ksize=1)
    sigma = ALIGNED_IED / 16.0
    mean = cv2.GaussianBlur(smooth, (0, 0), sigma)
    local_variance = cv2.GaussianBlur(smooth * smooth, (0, 0), sigma) - mean * mean
    return float(100.0 * laplacian[inner].var() / max(float(local_variance[inner].mean()), 1.0))


def entropy_bits(values: np.ndarray) -> float:
    """Shannon entropy of the 256-bin histogram (OFIQ DynamicRange), 0-8 bits."""
    histogram = np.bincount(np.clip(values, 0, 255).astype(np.uint8), minlength=256).astype(np.float64)
    p = histogram[histogram > 0] / histogram.sum()
    return float(-(p * np.log2(p)).sum())


def blockiness(grey: np.ndarray) -> float:
    """JPEG blockiness: mean absolute step across the 8x8 grid lines divided by the mean step between
    the other neighbours (rows and columns). 1.0 for an uncompressed photo; heavy JPEG compression
    makes its block edges into steps. `grey` must start on the file's own 8-pixel grid."""
    if grey.shape[0] <= BLOCK or grey.shape[1] <= BLOCK:
        return 1.0  # no grid line inside: nothing to compare
    grey = grey.astype(np.float32)
    steps_x = np.abs(np.diff(grey, axis=1))  # step between column c and c+1 sits at index c
    steps_y = np.abs(np.diff(grey, axis=0))
    on_x = (np.arange(steps_x.shape[1]) % BLOCK) == BLOCK - 1
    on_y = (np.arange(steps_y.shape[0]) % BLOCK) == BLOCK - 1
    on = np.concatenate([steps_x[:, on_x].ravel(), steps_y[on_y, :].ravel()])
    off = np.concatenate([steps_x[:, ~on_x].ravel(), steps_y[~on_y, :].ravel()])
    return float((on.mean() + 0.5) / (off.mean() + 0.5))  # +0.5: a flat patch reads 1, not 0/0


def grid_crop(rgb: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
    """The luminance of the face box at full resolution, its top-left corner moved onto the 8x8 grid
    that JPEG used."""
    height, width = rgb.shape[:2]
    x0 = min(width, max(0, int(box[0]) // BLOCK * BLOCK))
    y0 = min(height, max(0, int(box[1]) // BLOCK * BLOCK))
    x1 = min(width, max(0, int(math.ceil(box[2]))))
    y1 = min(height, max(0, int(math.ceil(box[3]))))
    return luminance(rgb[y0:y1, x0:x1])


NOT_MEASURED = {
    "name": "capture_quality",
    "label": "Capture quality",
    "value": None,
    "threshold": {"reason": "the face region (from the five landmarks) lies mostly outside the photo"},
    "passed": None,
    "advice": "We could not measure the capture quality of this face: show your whole face, looking at the camera.",
}


def assess(rgb: np.ndarray, *, box: tuple[float, float, float, float], landmarks: np.ndarray) -> list[dict[str, object]]:
    """Measure the capture quality of the face at `box`/`landmarks` in the (H, W, 3) uint8 RGB photo.

    Never raises for a face it cannot measure (eyes on one point, face off the photo): it says so in
    one unchecked line instead, since quality is advice and must not cost the user the photo."""
    try:
        aligned, valid, moved = align(rgb, landmarks)
    except ValueError:
        return [dict(NOT_MEASURED), dict(NOT_CHECKED)]
    mask = face_mask(moved) & valid
    y = luminance(aligned)
    face = y[mask]
    half = EYES_AT[0]
    columns = np.arange(mask.shape[1])[None, :]
    if face.size < 200 or not (mask & (columns < half)).any() or not (mask & (columns >= half)).any():
        return [dict(NOT_MEASURED), dict(NOT_CHECKED)]
    left_half = mask & (columns < half)
    right_half = mask & (columns >= half)
    left_mean, right_mean = float(y[left_half].mean()), float(y[right_half].mean())
    lit_half = left_half if left_mean >= right_mean else right_half
    components = [
        Component(
            "sharpness",
            "Sharpness",
            sharpness(y, mask),
            MIN_SHARPNESS,
            None,
            "100 x variance of the Laplacian of Gaussian (1 px) over the mean local variance, on the face scaled to "
            "64 px between the eyes (a simpler proxy for OFIQ's random-forest sharpness); our test faces measure "
            "1.9-7.1, the same faces blurred by 5% of the face width 0.09-0.23, and under 0.5 after JPEG or HEIC",
            "Your photo is blurred: hold the camera still, or tap the screen to focus on your face.",
        ),
        Component(
            "under_exposure",
            "Clipped to black",
            float((aligned.max(axis=2)[lit_half] <= CLIPPED_BLACK).mean()),
            None,
            MAX_UNDER_EXPOSED,
            "share of the lit half of the face whose three channels are all 0-8: clipped to black, nothing "
            "recorded there (OFIQ's UnderExposurePrevention counts luminance 0-25, which a dark skin in good light "
            "reaches; the half in shadow is the lighting line's); the portrait corpus's faces have 0-0.4 %, our "
            "test faces with every shadow under luminance 150 clipped 5-25 %",
            "Parts of your face are black, with nothing recorded in them: face a window or a lamp, or turn on "
            "more light.",
        ),
        Component(
            "over_exposure",
            "Washed-out areas",
            float((face >= BRIGHT_MIN).mean()),
            None,
            MAX_OVER_EXPOSED,
            "share of face pixels with luminance 247-255 (the bright range of OFIQ's OverExposurePrevention); our "
            "test faces have under 0.2%, one stop too bright 27-62%",
            "Parts of your face are washed out: move away from direct sun or a flash, or use softer light.",
        ),
        Component(
            "luminance",
            "Brightness",
            float(face.mean() / 255.0),
            None,
            MAX_LUMINANCE,
            "mean face luminance, 0-1 (OFIQ's LuminanceMean), judged only when washed out: a low mean is the "
            "skin's own tone as often as the light's, so darkness is judged on the highlights; our test faces "
            "measure 0.38-0.73",
            "Your face looks washed out: take the photo in even daylight, without flash.",
        ),
        Component(
            "highlights",
            "Highlights",
            float(np.percentile(y[lit_half], 99) / 255.0),
            MIN_HIGHLIGHTS,
            None,
            "the brightest 1 % of the lit half of the face (its 99th luminance percentile, 0-1): an eye white and "
            "the skin's own highlights, bright under good light whatever the skin's tone. The portrait corpus's "
            "46 well-lit faces measure 0.64-0.95 (the darkest-skinned, six photos of one man, 0.64-0.90; with "
            "half the face at 25 % light 0.50-0.88), its one dim photo 0.458, the well-lit faces three stops under "
            "0.25-0.37",
            "Your photo is too dark: even the brightest parts of your face are dim. Face a window or a lamp, or "
            "turn on more light.",
        ),
        Component(
            "dynamic_range",
            "Contrast",
            entropy_bits(face),
            MIN_DYNAMIC_RANGE_BITS,
            None,
            "entropy of the face's luminance histogram in bits, 0-8 (OFIQ's DynamicRange); our test faces have "
            "6.5-7.0, the same faces at a tenth of the contrast 3.3-3.7",
            "Your photo looks flat and grey: avoid haze, a dirty lens or backlight, and face the light.",
        ),
        Component(
            "illumination_uniformity",
            "Even light on both sides",
            min(left_mean, right_mean) / max(left_mean, right_mean, 1e-6),
            MIN_ILLUMINATION_RATIO,
            None,
            "mean luminance of the darker half of the face over the brighter half (OFIQ's IlluminationUniformity "
            "compares the same halves); our test faces measure 0.87-0.96, with one side in shadow 0.45-0.67",
            "One side of your face is in shadow: face the light source squarely, or add light on the darker side.",
        ),
        Component(
            "compression",
            "Compression artefacts",
            blockiness(grid_crop(rgb, box)),
            None,
            MAX_BLOCKINESS,
            "steps across JPEG's 8x8 block edges over steps elsewhere, on the face at full resolution (OFIQ's "
            "component is a CNN; this needs none); 1.0 for a PNG, up to 1.4 for ordinary JPEGs, over 2 at JPEG quality 10",
            "Your photo is heavily compressed: send the original from your camera, not one from a messaging app.",
        ),
    ]
    return [component.to_dict() for component in components] + [dict(NOT_CHECKED)]
