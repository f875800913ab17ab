"""A matte's quality against a known answer: portraits photographed on a plain backdrop, whose
person mask is read from the backdrop's colour (a colour key), pasted onto busy photos.

The truth is the key; near its outline it is uncertain (the key's own soft edge, hair), so every
figure leaves out a band of BAND_PX px on either side of the key's outline. In the rest, a matte is
scored by the IoU of its mask (alpha >= 128) with the key's, and by the mean absolute difference of
its alpha from the key's 0 or 1. tests/test_matte_quality.py holds the figures; `python -m
bench.matte` prints them for every model.

The portraits come from the real-photo corpus (tests/support/corpus.py), those labelled as on a
plain backdrop whose key reads cleanly (PLAIN, each looked at on the key's outline); the busy
photos are scikit-image's own sample photos, each free of copyright (BACKDROPS). Nothing here
imports the app.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image
from scipy import ndimage

# corpus portraits on a plain backdrop (corpus label plain-coloured) whose key reads cleanly, each
# looked at: the whole person inside, the whole backdrop outside. The other plain ones do not: the
# feat-* walls fall off unevenly towards the bottom corners (and one has a watermark), and on the
# plain-dark ones (takeo, einstein-tongue, cage) dark hair or a dark suit meets a dark backdrop.
PLAIN = ("franck-blink", "franck-closed", "franck-laugh", "franck-neutral", "franck-smile", "franck-talking")
# scikit-image's sample photos (its data folder), with the licence its docstrings give
BACKDROPS = {
    "coffee.png": "CC0 (Rachel Michetti)",
    "rocket.jpg": "public domain (SpaceX)",
    "chelsea.png": "CC0 (Stefan van der Walt)",
    "brick.png": "CC0 (CC0Textures, Bricks25)",
}
BORDER = 0.04  # the share of each side's width (and of the top's height) sampled as backdrop
SIDE_DEPTH = 0.6  # the sides are sampled down to this share of the height (shoulders come lower)
KEY_LOW, KEY_HIGH = 4.0, 9.0  # a pixel's distance from the backdrop, in its own spread: 0 below, 1 above
BAND_PX = 6  # px on either side of the key's outline that no figure counts


@dataclass(frozen=True)
class Composite:
    name: str  # "portrait+backdrop"
    rgb: np.ndarray  # (H, W, 3) uint8, the person on the busy photo
    truth: np.ndarray  # (H, W) bool, the person
    scored: np.ndarray  # (H, W) bool, outside the band around the outline


def read_key(rgb: np.ndarray) -> np.ndarray:
    """The person's coverage (H, W) float in [0, 1] on a plain backdrop: each pixel's distance
    from the backdrop's colour (sampled along the top and the upper sides), in units of the
    backdrop's own spread; then the component(s) touching the bottom edge, holes filled."""
    pixels = rgb.astype(np.float64)
    height, width = rgb.shape[:2]
    side, top = max(2, int(BORDER * width)), max(2, int(BORDER * height))
    sampled = np.zeros((height, width), dtype=bool)
    sampled[:top] = True
    sampled[: int(SIDE_DEPTH * height), :side] = sampled[: int(SIDE_DEPTH * height), -side:] = True
    # the backdrop as a smooth surface (lit unevenly, a vignette): quadratic in x and y, per channel
    yy, xx = np.mgrid[0:height, 0:width] / max(height, width)
    terms = np.stack([np.ones_like(xx), xx, yy, xx * xx, yy * yy, xx * yy], axis=-1)
    fit, *_ = np.linalg.lstsq(terms[sampled], pixels[sampled], rcond=None)
    residual = pixels - terms @ fit
    spread = np.median(np.linalg.norm(residual[sampled], axis=1)) + 2.0
    distance = np.linalg.norm(residual, axis=2) / spread
    coverage = np.clip((distance - KEY_LOW) / (KEY_HIGH - KEY_LOW), 0.0, 1.0)
    person = ndimage.binary_fill_holes(ndimage.binary_opening(coverage >= 0.5, iterations=2))
    labels, _ = ndimage.label(person)
    keep = np.setdiff1d(np.unique(labels[-1]), [0])
    person = np.isin(labels, keep)
    return np.where(person, np.maximum(coverage, ndimage.binary_erosion(person, iterations=2)), 0.0)


def backdrop(path: Path, size: tuple[int, int]) -> np.ndarray:
    """A busy photo cropped to the aspect of `size` = (width, height) and scaled to it, as RGB."""
    with Image.open(path) as image:
        photo = image.convert("RGB")
    width, height = size
    scale = max(width / photo.width, height / photo.height)
    scaled = photo.resize((max(width, round(photo.width * scale)), max(height, round(photo.height * scale))), Image.LANCZOS)
    left, top = (scaled.width - width) // 2, (scaled.height - height) // 2
    return np.asarray(scaled.crop((left, top, left + width, top + height)))


def compose(portrait: np.ndarray, key: np.ndarray, busy: np.ndarray) -> np.ndarray:
    a = key[..., None]
    return np.clip(portrait * a + busy * (1.0 - a) + 0.5, 0, 255).astype(np.uint8)


def build(portraits: dict[str, np.ndarray], backdrop_dir: Path, *, backdrops: Sequence[str] = tuple(BACKDROPS)) -> list[Composite]:
    """Every portrait of PLAIN found in `portraits` (name -> RGB) on each of `backdrops` (files in
    `backdrop_dir`)."""
    made = []
    for name in PLAIN:
        if name not in portraits:
            continue
        rgb = portraits[name]
        key = read_key(rgb)
        truth = key >= 0.5
        band = ndimage.binary_dilation(truth, iterations=BAND_PX) & ~ndimage.binary_erosion(truth, iterations=BAND_PX)
        for file in backdrops:
            busy = backdrop(backdrop_dir / file, (rgb.shape[1], rgb.shape[0]))
            made.append(Composite(f"{name}+{Path(file).stem}", compose(rgb, key, busy), truth, ~band))
    return made


def score(alpha: np.ndarray, composite: Composite) -> dict[str, float]:
    """IoU of the matte's mask with the truth, and the mean absolute alpha error, outside the band."""
    scored = composite.scored
    mask, truth = alpha[scored] >= 128, composite.truth[scored]
    union = np.count_nonzero(mask | truth)
    iou = np.count_nonzero(mask & truth) / union if union else 1.0
    error = np.abs(alpha[scored].astype(np.float64) / 255.0 - truth).mean()
    return {"iou": round(float(iou), 4), "mae": round(float(error), 4)}


def figures(composites: Sequence[Composite], alphas: dict[str, np.ndarray]) -> dict[str, object]:
    """A matte's (H, W) uint8 alpha of every composite (`alphas`, by composite name): the median and
    worst IoU, the mean of the mean absolute errors, and each composite's scores."""
    scores = {c.name: score(alphas[c.name], c) for c in composites}
    ious = [s["iou"] for s in scores.values()]
    return {
        "composites": len(scores),
        "median_iou": round(statistics.median(ious), 4),
        "worst_iou": round(min(ious), 4),
        "worst": min(scores, key=lambda name: scores[name]["iou"]),
        "mean_mae": round(statistics.fmean(s["mae"] for s in scores.values()), 4),
        "scores": scores,
    }


def edge_distances(composite: Composite, alpha: np.ndarray, foreground: np.ndarray, backdrop_dir: Path) -> tuple[float, float]:
    """How far the colours under a matte's soft edges (0.1 < alpha < 0.9) are from the busy photo
    behind them, mean RGB distance: the composite's own pixels, and the matte's `foreground`. The
    second larger: less of the old background left in the person's colours."""
    file = next(f for f in BACKDROPS if f.startswith(composite.name.split("+")[1] + "."))
    behind = backdrop(backdrop_dir / file, (composite.rgb.shape[1], composite.rgb.shape[0])).astype(np.float64)
    band = (alpha > 25) & (alpha < 230)
    photographed = np.linalg.norm(composite.rgb[band] - behind[band], axis=1).mean()
    estimated = np.linalg.norm(foreground[band] - behind[band], axis=1).mean()
    return float(photographed), float(estimated)


# -- arms near the head (issue 45) ----------------------------------------------------------------
# Limbs drawn in the face's own frame (u across the eye line from the face's centre line, v down from
# the eye line, in eye distances; the chin at `chin_v`), on the side `side` (-1: the image's left).
# Sizes of an adult arm in eye distances (about 63 mm): a forearm about 1.0 wide side-on (0.65 here,
# the narrowest), an upper arm 1.3 (0.8 here), a hand 1.3 x 1.6 (0.9 x 1.1 here): the smallest
# plausible, so what is caught here is caught with room to spare on a real arm.
ARM_POSES = {
    # the upper arm up from the shoulder to the elbow beside the head, the forearm behind the head
    "behind-head": (("limb", (2.4, 1.5), (2.7, -2.4), 0.8), ("limb", (2.7, -2.4), (1.0, -2.2), 0.7)),
    # the forearm upright beside the head against the wall, the hand at the temple's height
    "beside-head": (("limb", (2.4, 1.5), (2.3, -1.0), 0.65), ("hand", (2.3, -1.4), 0.9, 1.1)),
    # the hand raised above the head, the forearm up beside it
    "hand-above": (("limb", (2.4, 1.5), (1.9, -3.0), 0.65), ("hand", (1.5, -3.3), 1.1, 0.9)),
}


def arm_outline(five: np.ndarray, chin_y: float, pose: str, side: int, *, shape: tuple[int, int]) -> np.ndarray:
    """(H, W) bool: the arm of ARM_POSES[pose] on `side`, placed by the face's five landmarks
    (left eye, right eye, nose, mouth corners; px) with the chin at row `chin_y`. A limb's lower
    end in v is counted from the chin (1.5 means 1.5 eye distances below it)."""
    from PIL import ImageDraw

    left, right = np.asarray(five[0], np.float64), np.asarray(five[1], np.float64)
    iod = float(np.hypot(*(right - left)))
    angle = np.arctan2(right[1] - left[1], right[0] - left[0])
    cos, sin = float(np.cos(angle)), float(np.sin(angle))
    mid = (left + right) / 2.0
    centre = np.mean(np.asarray(five, np.float64)[[0, 1, 3, 4]], axis=0)
    centre_u = float((centre[0] - mid[0]) * cos + (centre[1] - mid[1]) * sin) / iod
    chin_v = float((chin_y - mid[1]) / iod)

    def px(u: float, v: float) -> tuple[float, float]:
        u = centre_u + side * u
        return float(mid[0] + (u * cos - v * sin) * iod), float(mid[1] + (u * sin + v * cos) * iod)

    canvas = Image.new("L", (shape[1], shape[0]), 0)
    draw = ImageDraw.Draw(canvas)
    for part in ARM_POSES[pose]:
        if part[0] == "limb":
            (_, (u0, v0), (u1, v1), width) = part
            v0 = chin_v + v0 if v0 > 0 else v0  # a lower end below the chin
            (x0, y0), (x1, y1) = px(u0, v0), px(u1, v1)
            draw.line([(x0, y0), (x1, y1)], fill=255, width=max(1, round(width * iod)))
            radius = width * iod / 2.0  # round joints
            for x, y in ((x0, y0), (x1, y1)):
                draw.ellipse([x - radius, y - radius, x + radius, y + radius], fill=255)
        else:
            (_, (u, v), w, h) = part
            x, y = px(u, v)
            draw.ellipse([x - w * iod / 2, y - h * iod / 2, x + w * iod / 2, y + h * iod / 2], fill=255)
    return np.asarray(canvas) > 0
