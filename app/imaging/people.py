"""One person only: the chosen person's matte, with everyone and everything else made background.

Pure functions on numpy arrays (OpenCV's connected components and GrabCut). Coordinates are image
px, x to the right, y down; mattes are (H, W) uint8, 255 = person; photos (H, W, 3) uint8 RGB.
"""

from __future__ import annotations

import math

import numpy as np

from .head import PERSON
from .opencv import cv2


PERSON_LINK = 64  # alpha at or above this joins pixels into one component (soft hair edges included)
BODY_BAND = 0.6  # the column band under the face, +- this share of the face width around its centre


def keep_person(alpha: np.ndarray, box: tuple[float, float, float, float],
                others: list[tuple[float, float, float, float]] | None = None, *, rgb: np.ndarray | None = None) -> np.ndarray:
    """The matte with only the chosen person: the connected component(s) holding the face box's
    centre, and those reaching into the column band below the face (the body under the head).
    Everything else (other people, objects, a shoulder at the edge) becomes background (0). Other
    people whose mattes touch this one's (`others`: their face boxes) lose what is theirs: with the
    photo (`rgb`, (H, W, 3) uint8) by `separate_people`, else by the nearest body axis alone
    (`person_owner`); never the chosen face."""
    if others:
        alpha = _cut_other_people(alpha, box, others, rgb)
    height, width = alpha.shape
    count, labels = cv2.connectedComponents((alpha >= PERSON_LINK).astype(np.uint8), connectivity=8)
    if count <= 2:
        return alpha
    x0, y0, x1, y1 = box
    cx, cy = (x0 + x1) / 2.0, (y0 + y1) / 2.0
    face = labels[max(0, int(y0)) : min(height, int(math.ceil(y1))), max(0, int(x0)) : min(width, int(math.ceil(x1)))]
    keep = set(np.unique(face[face > 0]).tolist())
    half = BODY_BAND * (x1 - x0)
    band = labels[min(height - 1, max(0, int(y1))) :, max(0, int(cx - half)) : min(width, int(math.ceil(cx + half)))]
    keep |= set(np.unique(band[band > 0]).tolist())
    centre_label = labels[min(height - 1, max(0, int(cy))), min(width - 1, max(0, int(cx)))]
    if centre_label > 0:
        keep.add(int(centre_label))
    if not keep:
        return alpha
    mask = np.isin(labels, sorted(keep))
    return np.where(mask, alpha, 0).astype(np.uint8)


FACE_CORE = 0.5  # the centre of a face box, this share of its width and height: skin, never background
MIN_FACE_COVER = 0.5  # the share of that centre a person's matte must hold (alpha >= PERSON)


def covers_face(alpha: np.ndarray, box: tuple[float, float, float, float]) -> bool:
    """Whether an (H, W) uint8 matte holds the face whose box the detector found: at least
    MIN_FACE_COVER of the box's centre (FACE_CORE of its width and height) at alpha >= PERSON. A
    portrait matte that misses it has failed on this photo (MODNet on an out-of-focus portrait
    returns next to nothing: tests/test_portrait_matte.py)."""
    height, width = alpha.shape
    x0, y0, x1, y1 = box
    margin_x, margin_y = (1 - FACE_CORE) / 2 * (x1 - x0), (1 - FACE_CORE) / 2 * (y1 - y0)
    left, right = max(0, int(x0 + margin_x)), min(width, int(math.ceil(x1 - margin_x)))
    top, bottom = max(0, int(y0 + margin_y)), min(height, int(math.ceil(y1 - margin_y)))
    if right <= left or bottom <= top:
        return True  # no centre to judge (a box at the edge): nothing says the matte failed
    return float(np.mean(alpha[top:bottom, left:right] >= PERSON)) >= MIN_FACE_COVER


HAIR_ABOVE_FACE = 1.0  # a person's axis starts this many face heights above the face box (the hair)
OWNER_GRID = 512  # the ownership of each pixel is decided on a grid this many cells along the longer side
SEPARATE_SIDE = 360  # px, longer side: where GrabCut separates touching people (its cost grows with the pixels)
SEPARATE_ITERATIONS = 4  # GrabCut's rounds of refitting its colour models
SEPARATE_MATTE = 32  # alpha at or above this is someone (the rest is sure background)
HAIR_CORE = 0.3  # face heights above the sitter's face box whose middle columns are sure to be the sitter's hair


def face_core(box: tuple[float, float, float, float], shape: tuple[int, int]) -> np.ndarray:
    """(H, W) bool: the centre of a face box (FACE_CORE of its width and height), skin of that face alone."""
    height, width = shape
    x0, y0, x1, y1 = box
    margin_x, margin_y = (1 - FACE_CORE) / 2 * (x1 - x0), (1 - FACE_CORE) / 2 * (y1 - y0)
    out = np.zeros(shape, bool)
    out[max(0, int(y0 + margin_y)) : min(height, max(0, int(math.ceil(y1 - margin_y)))),
        max(0, int(x0 + margin_x)) : min(width, max(0, int(math.ceil(x1 - margin_x))))] = True
    return out


def person_owner(shape: tuple[int, int], boxes: list[tuple[float, float, float, float]]) -> np.ndarray:
    """(H, W) int8: which of `boxes` (face boxes, px) each pixel's person is, by the nearest body axis.

    A person's axis is the vertical line through the face's centre from HAIR_ABOVE_FACE face heights
    above the face down to the bottom edge (the hair above the head, the neck and body below it); the
    distance to it is counted in that face's widths, so a larger (nearer) person owns more. Decided
    on a grid of at most OWNER_GRID cells along the longer side and spread to every pixel."""
    height, width = shape
    step = max(1, int(math.ceil(max(height, width) / OWNER_GRID)))
    ys = np.arange(0, height, step, dtype=np.float32) + step / 2.0
    xs = np.arange(0, width, step, dtype=np.float32) + step / 2.0
    best = np.full((ys.size, xs.size), np.inf, np.float32)
    owner = np.zeros((ys.size, xs.size), np.int8)
    for index, (x0, y0, x1, y1) in enumerate(boxes):
        face_width = max(1.0, x1 - x0)
        top = y0 - HAIR_ABOVE_FACE * (y1 - y0)
        dx = (xs - (x0 + x1) / 2.0) ** 2
        dy = np.clip(top - ys, 0.0, None) ** 2
        distance = np.sqrt(dy[:, None] + dx[None, :]) / face_width
        nearer = distance < best
        best[nearer] = distance[nearer]
        owner[nearer] = index
    return np.repeat(np.repeat(owner, step, axis=0), step, axis=1)[:height, :width]


def separate_people(rgb: np.ndarray, alpha: np.ndarray, box: tuple[float, float, float, float],
                    others: list[tuple[float, float, float, float]]) -> np.ndarray | None:
    """(H, W) float32 0-1: how much each pixel of the matte is the chosen person's, where other people
    touch it. OpenCV's GrabCut on a copy SEPARATE_SIDE px long: sure background outside the matte
    and in the other faces' boxes, sure foreground in the chosen face and the middle of its body, the
    rest of the matte "probably" the chosen person's or another's by the nearest body axis
    (`person_owner`); GrabCut's colour models settle the probable pixels (blonde hair against a
    neighbour's dark curls). The answer is scaled back smoothly (a soft edge where people touch).
    None where GrabCut cannot run (no background left, say). Colour order does not matter to it."""
    height, width = alpha.shape
    scale = min(1.0, SEPARATE_SIDE / max(height, width))
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    small = cv2.resize(np.ascontiguousarray(rgb), size, interpolation=cv2.INTER_AREA)
    matte = cv2.resize(alpha, size, interpolation=cv2.INTER_AREA)
    scaled = [tuple(v * scale for v in b) for b in (box, *others)]
    owner = person_owner(matte.shape, scaled)  # type: ignore[arg-type]
    mask = np.where(matte >= SEPARATE_MATTE, np.where(owner == 0, cv2.GC_PR_FGD, cv2.GC_PR_BGD), cv2.GC_BGD).astype(np.uint8)
    x0, y0, x1, y1 = scaled[0]
    w, h = x1 - x0, y1 - y0
    sitter_box = np.zeros(mask.shape, bool)
    sitter_box[max(0, int(y0)) : max(0, int(math.ceil(y1))), max(0, int(x0)) : max(0, int(math.ceil(x1)))] = True
    for ox0, oy0, ox1, oy1 in scaled[1:]:
        # only the centre of another's face is sure background, never inside the sitter's box: a whole
        # box there cut the sitter's hair or cheek along its straight side where the heads overlap
        core = face_core((ox0, oy0, ox1, oy1), mask.shape)
        mask[core & ~sitter_box] = cv2.GC_BGD
    # the hair straight above the sitter's forehead, where the matte holds it, is the sitter's: GrabCut's
    # colour models once gave dark hair beside a dark-haired neighbour to the background
    hair = (slice(max(0, int(y0 - HAIR_CORE * h)), max(0, int(y0 + 0.15 * h))),
            slice(max(0, int(x0 + 0.3 * w)), max(0, int(x1 - 0.3 * w))))
    mask[hair] = np.where(matte[hair] >= PERSON, cv2.GC_FGD, mask[hair])
    mask[max(0, int(y0 + 0.15 * h)) : max(0, int(y1 - 0.1 * h)), max(0, int(x0 + 0.2 * w)) : max(0, int(x1 - 0.2 * w))] = cv2.GC_FGD
    body = (slice(max(0, int(y1 + 0.3 * h)), None), slice(max(0, int((x0 + x1) / 2 - 0.25 * w)), max(0, int((x0 + x1) / 2 + 0.25 * w))))
    mask[body] = np.where(matte[body] >= PERSON, cv2.GC_FGD, mask[body])
    if not ((mask == cv2.GC_BGD) | (mask == cv2.GC_PR_BGD)).any():
        return None
    models = (np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64))
    try:
        cv2.grabCut(small, mask, None, models[0], models[1], SEPARATE_ITERATIONS, cv2.GC_INIT_WITH_MASK)
    except cv2.error:
        return None
    chosen = ((mask == cv2.GC_FGD) | (mask == cv2.GC_PR_FGD)).astype(np.float32)
    return cv2.resize(chosen, (width, height), interpolation=cv2.INTER_LINEAR)


def _cut_other_people(alpha: np.ndarray, box: tuple[float, float, float, float],
                      others: list[tuple[float, float, float, float]], rgb: np.ndarray | None) -> np.ndarray:
    """`alpha` without what belongs to the other people: `separate_people` where the photo is given,
    else every pixel nearer another's body axis (`person_owner`) set to 0 but the chosen face box."""
    weight = None if rgb is None else separate_people(rgb, alpha, box, others)
    if weight is not None:
        return np.clip(alpha.astype(np.float32) * weight + 0.5, 0, 255).astype(np.uint8)
    height, width = alpha.shape
    x0, y0, x1, y1 = box
    cut = person_owner(alpha.shape, [box, *others]) != 0
    cut[max(0, int(y0)) : min(height, int(math.ceil(y1))), max(0, int(x0)) : min(width, int(math.ceil(x1)))] = False
    if not cut.any():
        return alpha
    out = alpha.copy()
    out[cut] = 0
    return out


def clear_faces(mask: np.ndarray, boxes: list[tuple[float, float, float, float]]) -> None:
    """Clear from `mask` (H, W) bool, in place, each face box in `boxes` (x0, y0, x1, y1 px) and its
    neck below it (0.3 of the box's size either side and above, a box's height below)."""
    for x0, y0, x1, y1 in boxes:
        w, h = x1 - x0, y1 - y0
        mask[max(0, int(y0 - 0.3 * h)) : max(0, int(y1 + 1.0 * h)), max(0, int(x0 - 0.3 * w)) : max(0, int(x1 + 0.3 * w))] = False


def largest_piece(mask: np.ndarray, *, unit_px: float, size: tuple[int, int]) -> tuple[float, np.ndarray | None]:
    """The largest 8-connected piece of `mask` (H, W) bool: its area in `unit_px` squared (an eye
    distance: the scale cancels), and the piece as a bool mask of `size` (W, H); (0.0, None) where
    `mask` is empty. A scatter of pixels is never a piece: only the largest one counts."""
    count, labels, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    if count <= 1:
        return 0.0, None
    largest = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    piece = (labels == largest).astype(np.uint8)
    if (piece.shape[1], piece.shape[0]) != tuple(size):
        piece = cv2.resize(piece, size, interpolation=cv2.INTER_NEAREST)
    return float(stats[largest, cv2.CC_STAT_AREA]) / (unit_px * unit_px), piece > 0
