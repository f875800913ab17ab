"""The ID photo's first steps on the input: the face read (the people, the sitter's landmarks and
pose), then the level.

Face reading lives here, and only here: the detector's first reading, the landmarks read again
on close-ups of several sizes (`refine`), the 68 dense landmarks where that net is loaded, the
roll estimate (`estimate_roll`), and the same reading on a draft of the output (`read_faces_on`)
from which the frame step corrects the level (`correct_level`) where the eye line still leans.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..errors import NoFace, PhotoRejected
from ..imaging.closeups import close_ups, levelled_window
from ..imaging.dense_pose import head_pose
from ..imaging.head import eye_distance, eye_midpoint, roll_degrees
from ..imaging.pose import Pose, estimate_pose
from ..models.faces import Face
from ..models.landmarks68 import Landmarks68, menton
from ..models.registry import FaceDetector
from ..specs import Edit

FaceMode = Literal["single", "largest"]
PEOPLE_MIN_WIDTH = 0.4  # faces narrower than this share of the largest face are not counted as people
REFINE_CONTEXTS = (1.6, 2.2, 3.0, 4.0)  # the refining crops' sides, in face sizes
LEVEL_CONTEXT = 2.5  # the levelled copy's half side, in face sizes
LEANING_DEG = 1.0  # an output whose eye line still leans more than this has its level corrected
CORRECTION_MAX = 3.0  # degrees: the correction is at most this much (the first reading had two estimates)
LEVEL_APPLIED_DEG = 0.05  # a rotation smaller than this is no levelling


@dataclass(frozen=True)
class FaceReading:
    """The face step's answer: the people in the photo and the sitter. `face`: the chosen face, its
    landmarks refined (input px); `people`: every face that counts as a person (`people`), the chosen
    one among them; `detected`: every face the detector found (posters and faces far behind too);
    `dense`: the 68 landmarks where that net ran, with `chin` their menton (x, y) px; `pose`: the
    head's yaw, pitch and roll read on the input."""

    face: Face
    people: tuple[Face, ...]
    detected: tuple[Face, ...]
    dense: np.ndarray | None
    chin: np.ndarray | None
    pose: Pose

    @property
    def others(self) -> list[tuple[float, float, float, float]]:
        """The boxes of the other people (not the chosen face)."""
        return [other.box for other in self.people if not same_face(other, self.face)]

    @property
    def others_detected(self) -> list[tuple[float, float, float, float]]:
        """The boxes of every other face found, people or not (the hands check leaves them out)."""
        return [other.box for other in self.detected if not same_face(other, self.face)]

    @property
    def eye_distance(self) -> float:
        return eye_distance(self.face.landmarks)


@dataclass(frozen=True)
class Levelled:
    """The roll (degrees) the output is levelled by, and the level edit: the level step's estimate,
    or the frame step's, corrected on a draft of the output."""

    roll: float
    edit: Edit


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


def same_face(a: Face, b: Face) -> bool:
    """Whether two detections are one face (the refined face against the detector's first reading)."""
    ax, ay = (a.box[0] + a.box[2]) / 2.0, (a.box[1] + a.box[3]) / 2.0
    bx, by = (b.box[0] + b.box[2]) / 2.0, (b.box[1] + b.box[3]) / 2.0
    return bool(abs(ax - bx) < 0.5 * b.width and abs(ay - by) < 0.5 * b.height)


def _nearest(found: list[Face], near: tuple[float, float]) -> Face | None:
    """The face whose eye midpoint is nearest `near` (px), or None."""
    if not found:
        return None
    return min(found, key=lambda f: float(np.hypot(*(np.asarray(eye_midpoint(f.landmarks)) - near))))


def _median_face(readings: list[Face]) -> Face:
    landmarks = np.median([f.landmarks for f in readings], axis=0).astype(np.float32)
    box = tuple(float(v) for v in np.median([f.box for f in readings], axis=0))
    return Face(box=box, score=max(f.score for f in readings), landmarks=landmarks)  # type: ignore[arg-type]


def refine(detector: FaceDetector, rgb: np.ndarray, face: Face, *, fill: tuple[int, int, int] | None = None) -> Face:
    """Detect again on crops around `face` so the face fills much of the detector's input, at
    several sizes (REFINE_CONTEXTS face sizes), all in one run (`detect_close_ups`): one CenterFace
    reading of the eye line moves by several degrees with the face's size in its input, so the
    landmarks are the per-coordinate median of the readings (the roll estimate needs them to a
    pixel). Where a crop passes the photo's edge it is `fill` (default: the photo's mean colour)."""
    centre = (face.box[0] + face.box[2]) / 2.0, (face.box[1] + face.box[3]) / 2.0
    near = eye_midpoint(face.landmarks)
    crops, origins = close_ups(rgb, centre=centre, face_size=max(face.width, face.height), contexts=REFINE_CONTEXTS,
                               fill=fill)
    readings = []
    for found, (x0, y0) in zip(detector.detect_close_ups(crops) if crops else [], origins, strict=True):
        best = _nearest(found, (near[0] - x0, near[1] - y0))
        if best is None:
            continue
        box = (best.box[0] + x0, best.box[1] + y0, best.box[2] + x0, best.box[3] + y0)
        readings.append(Face(box=box, score=best.score, landmarks=best.landmarks + np.array([x0, y0], np.float32)))
    return _median_face(readings) if readings else face


def read_face(rgb: np.ndarray, *, detector: FaceDetector, mode: FaceMode, landmarker: Landmarks68 | None) -> FaceReading:
    """The face step: (H, W, 3) uint8 RGB in, the sitter out. NoFace or PhotoRejected(face_count)
    where the photo shows no one, or more than one person and `mode` is "single"."""
    found = detector.detect(rgb)
    face = refine(detector, rgb, choose_face(found, mode))
    dense = None if landmarker is None else landmarker.landmarks(rgb, face.box)
    return FaceReading(face=face, people=tuple(people(found)), detected=tuple(found), dense=dense,
                       chin=None if dense is None else menton(dense), pose=head_pose(estimate_pose(face.landmarks), dense))


def estimate_roll(detector: FaceDetector, rgb: np.ndarray, face: Face) -> float:
    """The face's roll in degrees from two estimates: the refined landmarks, and landmarks read
    again (at several crop sizes) on a copy levelled by that first estimate (a detector is most
    precise on an upright face; what it still sees there is the first estimate's error). The two
    estimates are averaged; the output's own reading (`read_faces_on`, `correct_level`) takes what is left."""
    first = roll_degrees(face.landmarks)
    window = levelled_window(rgb, centre=eye_midpoint(face.landmarks), half=LEVEL_CONTEXT * max(face.width, face.height),
                             degrees=first)
    if window is None:
        return first
    levelled, (x0, y0) = window
    shifted = Face(box=(face.box[0] - x0, face.box[1] - y0, face.box[2] - x0, face.box[3] - y0), score=face.score,
                   landmarks=face.landmarks - np.array([x0, y0], np.float32))
    again = refine(detector, levelled, shifted)
    second = first + roll_degrees(again.landmarks)
    return (first + second) / 2.0


def estimate_level(rgb: np.ndarray, face: FaceReading, *, detector: FaceDetector, edit: Edit) -> Levelled:
    """The level step: the roll the output is levelled by (`estimate_roll`) where the level `edit`
    applies, else 0; the edit is done where the rotation is at least LEVEL_APPLIED_DEG."""
    roll = estimate_roll(detector, rgb, face.face) if edit.applies else 0.0
    return Levelled(roll, edit.did(abs(roll) >= LEVEL_APPLIED_DEG))


def read_faces_on(detector: FaceDetector, pixels: np.ndarray, background: tuple[int, int, int] | None) -> list[Face]:
    """The people on the output (or a draft of it) (one run over the whole output); for one face, its landmarks read
    again as `refine` reads them on the input (crops of several face sizes, one run), with the
    background colour past the output's edges. With other than one face, the plain reading."""
    found = people(detector.detect(pixels))
    if len(found) != 1:
        return found
    return [refine(detector, pixels, found[0], fill=background)]


def correct_level(first: Levelled, on_output: list[Face]) -> Levelled | None:
    """The level corrected where the output read with one face (`read_faces_on`) still leans more
    than LEANING_DEG: the roll plus what is left (at most CORRECTION_MAX). None where it needs no
    correction (or the level does not apply)."""
    if not first.edit.applies or len(on_output) != 1:
        return None
    residual = roll_degrees(on_output[0].landmarks)
    if abs(residual) <= LEANING_DEG:
        return None
    roll = first.roll + float(np.clip(residual, -CORRECTION_MAX, CORRECTION_MAX))
    return Levelled(roll, first.edit.did(abs(roll) >= LEVEL_APPLIED_DEG))
