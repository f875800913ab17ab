"""insightface's own model classes, over sessions from our factory.

insightface 2.1 does all the pre- and post-processing: SCRFD's decoding, the ArcFace alignment
(`insightface.utils.face_align`), the gender/age and 106-landmark crops, INSwapper's latent. Each
class here only adapts one of its classes to this project:
- `from_file` builds insightface's class with a session from the registry's factory. insightface's
  classes take a ready `session`; its loader (`model_zoo.get_model`) would build its own session
  and drop our options (upstream #2899), and routes models by sniffing input shapes;
- it checks the file's interface at load, where insightface would fail later with an `assert`;
- it takes our detector-agnostic `Face` (app.models.faces) and hands insightface its own `Face`.

Colour order: insightface's classes take **BGR** images (`cv2.imread`'s order) and swap them to
RGB for their networks. The per-face methods here take `bgr` (the face pipeline converts once per
photo with `app.imaging.opencv.rgb_to_bgr`); the detector takes RGB, like CenterFace.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import numpy as np

from ..imaging.face_align import l2_normalise, paste_back
from ..imaging.opencv import rgb_to_bgr  # before insightface: OpenCV's thread pool is set there

# insightface's imports: numpy, onnx, onnxruntime, cv2 (opencv-python-headless), scipy,
# scikit-image, requests, tqdm (tests/test_insightface_imports.py checks them in a fresh process).
from insightface.app.common import Face as InsightFace
from insightface.model_zoo.arcface_onnx import ArcFaceONNX
from insightface.model_zoo.attribute import Attribute
from insightface.model_zoo.inswapper import INSwapper
from insightface.model_zoo.landmark import Landmark
from insightface.model_zoo.scrfd import SCRFD
from insightface.utils import face_align

from .base import SessionFactory, warmup_card
from .faces import Face

__all__ = ["ArcFace", "Embedding", "GenderAge", "Landmark106", "Scrfd", "Swapper", "align_112", "insight_face"]

log = logging.getLogger(__name__)

# insightface 2.1's estimate_norm calls SimilarityTransform.estimate, which scikit-image 0.26
# deprecates (FutureWarning, removal announced for 2.2); the result is the same. Silenced for that
# one call site only (pyproject.toml does the same for the tests).
warnings.filterwarnings("ignore", message="`estimate` is deprecated", category=FutureWarning,
                        module="insightface.utils.face_align")


def insight_face(face: Face) -> InsightFace:
    """insightface's `Face` (a dict with attributes) for our `Face`: `bbox` (4,), `kps` (5, 2),
    float32, image px, and `det_score`."""
    return InsightFace(
        bbox=np.array(face.box, dtype=np.float32),
        kps=np.array(face.landmarks, dtype=np.float32),
        det_score=face.score,
    )


def align_112(image: np.ndarray, face: Face) -> np.ndarray:
    """The 112 x 112 ArcFace-aligned crop of `face` (insightface's `norm_crop`), in `image`'s
    colour order (an affine warp does not mix channels)."""
    return face_align.norm_crop(image, np.array(face.landmarks, dtype=np.float32), image_size=112)


def _square_side(shape: list[object], what: str) -> int:
    """S of an [N, 3, S, S] input with a fixed S; ValueError otherwise."""
    if len(shape) != 4 or shape[1] != 3 or not isinstance(shape[2], int) or shape[2] != shape[3]:
        raise ValueError(f"{what}: input must be [N, 3, S, S] with a fixed S, got {shape}")
    return int(shape[2])


@dataclass(frozen=True)
class Embedding:
    """An identity embedding: `vector` is (D,) float32 with unit L2 norm (insightface's
    `normed_embedding`); `norm` is the raw output's L2 norm (low for blurred or tiny faces)."""

    vector: np.ndarray
    norm: float


class Scrfd:
    """SCRFD (buffalo_l `det_10g.onnx`): insightface's `SCRFD` at one fixed 640 x 640 input.

    `static_shape_sessions=False`: insightface 2.1 would otherwise build one more session per input
    size, lazily, outside our factory: on the first request, in each worker after the fork. With
    False every size runs on the one session from our factory, and we always use one size (the
    model's own when its input is fixed), so the shape warmed up is the shape requests use.
    """

    def __init__(self, model: SCRFD) -> None:
        if not model.use_kps:
            raise ValueError(
                f"SCRFD with keypoints has 9 or 15 outputs, this model has {len(model.output_names)} "
                "(a model without keypoints cannot align faces)"
            )
        self.model = model
        width, height = model.static_input_size or (640, 640)
        if width != height:
            raise ValueError(f"SCRFD with a fixed non-square input {model.input_shape} is not supported")
        self.input_size: int = int(width)

    @classmethod
    def from_file(cls, path: Path, *, session_factory: SessionFactory) -> Self:
        return cls(SCRFD(str(path), session_factory(path), static_shape_sessions=False))

    def detect(self, rgb: np.ndarray, *, score_threshold: float = 0.5) -> list[Face]:
        """Faces in an (H, W, 3) uint8 **RGB** image, by descending score: insightface's boxes
        clipped to the image (its landmarks are not), empty boxes dropped."""
        if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
            raise ValueError(f"image must be (H, W, 3) uint8, got {rgb.shape} {rgb.dtype}")
        height, width = rgb.shape[:2]
        if height == 0 or width == 0:
            raise ValueError(f"image must be non-empty, got {rgb.shape}")
        size = (self.input_size, self.input_size)
        detections, landmarks = self.model.detect(rgb_to_bgr(rgb), input_size=size, det_thresh=score_threshold)
        faces = []
        for row, points in zip(detections, landmarks, strict=True):
            x1, x2 = (float(np.clip(v, 0.0, width)) for v in (row[0], row[2]))
            y1, y2 = (float(np.clip(v, 0.0, height)) for v in (row[1], row[3]))
            if x2 > x1 and y2 > y1:
                faces.append(Face(box=(x1, y1, x2, y2), score=float(row[4]), landmarks=points))
        log.debug("scrfd: %d face(s) in %dx%d image", len(faces), width, height)
        return faces

    def detect_frame(self, image: np.ndarray, *, score_threshold: float = 0.5) -> list[Face]:
        """`detect` (SCRFD has one input size)."""
        return self.detect(image, score_threshold=score_threshold)

    def detect_close_ups(self, images: Sequence[np.ndarray], *, score_threshold: float = 0.5) -> list[list[Face]]:
        """`detect` on each crop around one face (insightface's SCRFD runs one image at a time, at
        its one input size: no new shape to warm)."""
        return [self.detect(image, score_threshold=score_threshold) for image in images]

    def warmup(self) -> None:
        self.detect(warmup_card(self.input_size))


class ArcFace:
    """ArcFace (buffalo_l `w600k_r50.onnx`): insightface's `ArcFaceONNX` (its input normalisation
    read from the graph, its `norm_crop` alignment) -> a 512-d embedding."""

    def __init__(self, model: ArcFaceONNX) -> None:
        self.input_size = _square_side(model.input_shape, "ArcFace")
        if self.input_size % 112 and self.input_size % 128:
            raise ValueError(f"ArcFace: input side {self.input_size} is not a multiple of 112 or 128")
        output_shape = model.output_shape
        if len(output_shape) != 2 or not isinstance(output_shape[1], int):
            raise ValueError(f"ArcFace: output must be [N, D], got {output_shape}")
        self.model = model
        self.dimensions = int(output_shape[1])

    @classmethod
    def from_file(cls, path: Path, *, session_factory: SessionFactory) -> Self:
        return cls(ArcFaceONNX(str(path), session_factory(path)))

    def align(self, bgr: np.ndarray, face: Face) -> np.ndarray:
        """The (S, S, 3) uint8 crop the network sees (insightface's `norm_crop`), in `bgr`'s order."""
        return face_align.norm_crop(bgr, np.array(face.landmarks, dtype=np.float32), image_size=self.input_size)

    def embed_crop(self, crop: np.ndarray) -> Embedding:
        """The embedding of an aligned (S, S, 3) uint8 **BGR** crop."""
        raw = np.asarray(self.model.get_feat(crop), dtype=np.float32).reshape(-1)
        return Embedding(l2_normalise(raw), float(np.linalg.norm(raw)))

    def embed(self, bgr: np.ndarray, face: Face) -> Embedding:
        """The embedding of `face` (its five landmarks) in an (H, W, 3) uint8 **BGR** image."""
        return self.embed_crop(self.align(bgr, face))

    def warmup(self) -> None:
        self.embed_crop(warmup_card(self.input_size))


class GenderAge:
    """Gender and age (buffalo_l `genderage.onnx`): insightface's `Attribute` on a crop of 1.5 x the
    box's long side."""

    def __init__(self, model: Attribute) -> None:
        self.input_size = _square_side(model.input_shape, "genderage")
        if model.taskname != "genderage":
            raise ValueError(f"genderage: output must be [N, 3], got {model.session.get_outputs()[0].shape}")
        self.model = model

    @classmethod
    def from_file(cls, path: Path, *, session_factory: SessionFactory) -> Self:
        return cls(Attribute(str(path), session_factory(path)))

    def predict(self, bgr: np.ndarray, face: Face) -> tuple[int, int]:
        """(gender, age) of `face` (its box) in an (H, W, 3) uint8 **BGR** image: gender 0 female,
        1 male; age in years."""
        gender, age = self.model.get(bgr, insight_face(face))
        return int(gender), int(age)

    def warmup(self) -> None:
        side = float(self.input_size)
        self.model.get(warmup_card(self.input_size), InsightFace(bbox=np.array([0.0, 0.0, side, side])))


class Landmark106:
    """106 face landmarks (buffalo_l `2d106det.onnx`): insightface's `Landmark` (2-D models)."""

    def __init__(self, model: Landmark) -> None:
        self.input_size = _square_side(model.input_shape, "landmark")
        if model.lmk_dim != 2:
            raise ValueError(f"landmark: a 2-D model is expected, this one is {model.taskname}")
        self.model = model
        self.points = int(model.lmk_num)

    @classmethod
    def from_file(cls, path: Path, *, session_factory: SessionFactory) -> Self:
        return cls(Landmark(str(path), session_factory(path)))

    def predict(self, bgr: np.ndarray, face: Face) -> np.ndarray:
        """(points, 2) float32 [x, y] image px of `face` (its box) in an (H, W, 3) uint8 **BGR** image."""
        return np.asarray(self.model.get(bgr, insight_face(face)), dtype=np.float32)

    def warmup(self) -> None:
        side = float(self.input_size)
        self.model.get(warmup_card(self.input_size), InsightFace(bbox=np.array([0.0, 0.0, side, side])))


class Swapper:
    """Face swap (`inswapper_128.onnx`): insightface's `INSwapper` makes the swapped crop (its
    alignment with the template shifted for 128 px, its latent `normalise(normalise(identity) @
    emap)`); :func:`app.imaging.face_align.paste_back` puts it back into the photo."""

    def __init__(self, model: INSwapper) -> None:
        inputs = model.session.get_inputs()
        if len(inputs) != 2 or len(model.output_names) != 1:
            raise ValueError(
                f"INSwapper: expected two inputs and one output, got {len(inputs)} and {len(model.output_names)}"
            )
        self.input_size = _square_side(inputs[0].shape, "INSwapper")
        latent_shape = inputs[1].shape
        emap = np.asarray(model.emap)
        if len(latent_shape) != 2 or emap.ndim != 2 or emap.shape[1] != latent_shape[1]:
            raise ValueError(f"INSwapper: emap {emap.shape} does not map onto the latent input {latent_shape}")
        self.model = model
        self.embedding_size = int(emap.shape[0])

    @classmethod
    def from_file(cls, path: Path, *, session_factory: SessionFactory) -> Self:
        session = session_factory(path)
        with contextlib.redirect_stdout(io.StringIO()) as printed:  # it prints its input shape
            model = INSwapper(str(path), session)
        log.debug("model %s: %s", path.name, printed.getvalue().strip())
        return cls(model)

    def swap(self, bgr: np.ndarray, face: Face, identity: np.ndarray) -> np.ndarray:
        """`bgr` ((H, W, 3) uint8 **BGR**) with `face` given `identity` (an embedding of
        `embedding_size` values, any norm); a new array of the same shape and order."""
        vector = np.asarray(identity, dtype=np.float32).reshape(-1)
        if vector.shape[0] != self.embedding_size:
            raise ValueError(f"embedding has {vector.shape[0]} values, the swapper takes {self.embedding_size}")
        crop, matrix = self.model.get(bgr, insight_face(face), InsightFace(embedding=vector), paste_back=False)
        return paste_back(bgr, crop, matrix)

    def warmup(self) -> None:
        scale = self.input_size / 112.0
        target = InsightFace(kps=face_align.arcface_dst * scale)  # a face already in place on the card
        source = InsightFace(embedding=np.ones(self.embedding_size, dtype=np.float32))
        self.model.get(warmup_card(self.input_size), target, source, paste_back=False)
