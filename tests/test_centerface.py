"""Tests for app.models.faces and app.models.centerface.

The first half is pure (synthetic arrays, a fake session); the second half runs
the real CenterFace model, found under $MODEL_HOME or /root/.cache/pilotlight/models.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime
import pytest
import skimage.data
from PIL import Image

from app.models.centerface import CLOSE_UP_BATCH, CLOSE_UP_SIZE, CenterFace, decode, letterbox, make_dims_dynamic
from app.models.faces import Face, nms

MODEL_SHA256 = "09189deaaf8646c5c51a68447e3c744ea1e211798155d4728c20507b9f5aefbc"
DEFAULT_MODEL_HOME = Path("/root/.cache/pilotlight/models")

LEFT_EYE, RIGHT_EYE, NOSE, LEFT_MOUTH, RIGHT_MOUTH = range(5)


# --------------------------------------------------------------------------- helpers


def _landmarks() -> np.ndarray:
    """A plausible (5, 2) float32 landmark set in px."""
    return np.array([[10, 10], [20, 10], [15, 15], [11, 20], [19, 20]], dtype=np.float32)


def _maps(
    size: tuple[int, int],
    peaks: Sequence[tuple[int, int, float]],
    *,
    box_hw: tuple[float, float] = (20.0, 16.0),
    offset_yx: tuple[float, float] = (0.0, 0.0),
    landmark_fractions: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Synthetic CenterFace outputs (batch 1, stride-4 maps of ``size`` = (h, w)).

    Each peak is ``(row, col, score)``; every peak gets the same box size
    ``box_hw`` (network px), offset and landmark fractions ((5, 2) as [x, y]).
    """
    h, w = size
    heatmap = np.zeros((1, 1, h, w), dtype=np.float32)
    scale = np.zeros((1, 2, h, w), dtype=np.float32)
    offset = np.zeros((1, 2, h, w), dtype=np.float32)
    landmarks = np.zeros((1, 10, h, w), dtype=np.float32)
    fractions = landmark_fractions if landmark_fractions is not None else np.full((5, 2), 0.5)
    for row, col, score in peaks:
        heatmap[0, 0, row, col] = score
        scale[0, 0, row, col] = math.log(box_hw[0] / 4)
        scale[0, 1, row, col] = math.log(box_hw[1] / 4)
        offset[0, 0, row, col] = offset_yx[0]
        offset[0, 1, row, col] = offset_yx[1]
        for k in range(5):
            landmarks[0, 2 * k, row, col] = fractions[k, 1]  # y
            landmarks[0, 2 * k + 1, row, col] = fractions[k, 0]  # x
    return heatmap, scale, offset, landmarks


class _FakeInput:
    def __init__(self, name: str) -> None:
        self.name = name


class _FakeSession:
    """Stands in for an InferenceSession: records input shapes, returns fixed maps."""

    def __init__(self, peak_at_network_px: tuple[float, float] | None, box_hw: tuple[float, float]) -> None:
        self.shapes: list[tuple[int, ...]] = []
        self.dtypes: list[np.dtype[Any]] = []
        self._peak = peak_at_network_px
        self._box_hw = box_hw

    def get_inputs(self) -> list[_FakeInput]:
        return [_FakeInput("input.1")]

    def get_outputs(self) -> list[_FakeInput]:
        return [_FakeInput(name) for name in ("537", "538", "539", "540")]

    def run(self, output_names: list[str], feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        tensor = feed["input.1"]
        self.shapes.append(tensor.shape)
        self.dtypes.append(tensor.dtype)
        h, w = tensor.shape[2] // 4, tensor.shape[3] // 4
        return [np.repeat(maps, tensor.shape[0], axis=0) for maps in self._maps(h, w)]  # the same maps per image

    def _maps(self, h: int, w: int) -> list[np.ndarray]:
        if self._peak is None:
            return list(_maps((h, w), []))
        # Peak cell and offset such that the box centre lands exactly on the requested px.
        cx, cy = self._peak
        col, row = int(cx // 4), int(cy // 4)
        offset_yx = (cy / 4 - row - 0.5, cx / 4 - col - 0.5)
        fractions = np.array([[0.3, 0.4], [0.7, 0.4], [0.5, 0.6], [0.35, 0.8], [0.65, 0.8]])
        return list(
            _maps((h, w), [(row, col, 0.9)], box_hw=self._box_hw, offset_yx=offset_yx, landmark_fractions=fractions)
        )


# --------------------------------------------------------------------------- Face


def test_face_properties_and_to_dict_are_json_ready() -> None:
    face = Face(box=(10.04, 20.06, 50.0, 100.0), score=0.912345678, landmarks=_landmarks() + 0.04)
    assert face.width == pytest.approx(39.96)
    assert face.height == pytest.approx(79.94)
    assert face.area == pytest.approx(39.96 * 79.94)
    data = face.to_dict()
    assert data == {
        "box": [10.0, 20.1, 50.0, 100.0],
        "score": 0.9123,
        "landmarks": [[10.0, 10.0], [20.0, 10.0], [15.0, 15.0], [11.0, 20.0], [19.0, 20.0]],
    }
    assert all(type(v) is float for v in data["box"])
    assert json.loads(json.dumps(data)) == data


def test_face_copies_landmarks_read_only_and_validates_shape() -> None:
    source = _landmarks()
    face = Face(box=(0, 0, 1, 1), score=1, landmarks=source)
    source[0, 0] = 99.0
    assert face.landmarks[0, 0] == 10.0
    assert face.landmarks.dtype == np.float32
    with pytest.raises(ValueError):
        face.landmarks[0, 0] = 1.0
    with pytest.raises(ValueError):
        Face(box=(0, 0, 1, 1), score=1, landmarks=np.zeros((4, 2)))


# --------------------------------------------------------------------------- nms


def test_nms_collapses_overlaps_and_orders_by_score() -> None:
    boxes = np.array(
        [
            [0, 0, 10, 10],  # overlaps box 1 (IoU 81/119 = 0.68)
            [1, 1, 11, 11],
            [50, 50, 60, 60],  # disjoint
            [0, 0, 10, 10.5],  # near duplicate of box 0
        ],
        dtype=np.float32,
    )
    scores = np.array([0.8, 0.9, 0.5, 0.7], dtype=np.float32)
    keep = nms(boxes, scores, iou_threshold=0.3)
    assert keep.dtype == np.int64
    assert keep.tolist() == [1, 2]


def test_nms_threshold_is_exclusive_and_handles_empty() -> None:
    boxes = np.array([[0, 0, 10, 10], [5, 0, 15, 10]], dtype=np.float64)  # IoU = 50/150 = 1/3
    scores = np.array([0.9, 0.8])
    assert nms(boxes, scores, iou_threshold=0.34).tolist() == [0, 1]
    assert nms(boxes, scores, iou_threshold=0.33).tolist() == [0]
    assert nms(np.zeros((0, 4)), np.zeros(0), iou_threshold=0.3).tolist() == []
    with pytest.raises(ValueError):
        nms(np.zeros((3, 5)), np.zeros(3), iou_threshold=0.3)


# --------------------------------------------------------------------------- decode


def test_decode_single_peak_gives_expected_box_and_landmarks() -> None:
    fractions = np.array([[0.25, 0.3], [0.75, 0.3], [0.5, 0.55], [0.3, 0.8], [0.7, 0.8]])
    maps = _maps((8, 8), [(3, 5, 0.9)], box_hw=(20.0, 16.0), offset_yx=(0.25, -0.5), landmark_fractions=fractions)
    faces = decode(*maps, score_threshold=0.5)
    assert len(faces) == 1
    face = faces[0]
    # centre y = (3 + 0.25 + 0.5) * 4 = 15, centre x = (5 - 0.5 + 0.5) * 4 = 20
    assert face.box == pytest.approx((12.0, 5.0, 28.0, 25.0))
    assert face.score == pytest.approx(0.9)
    expected = np.array([12.0, 5.0]) + fractions * np.array([16.0, 20.0])
    np.testing.assert_allclose(face.landmarks, expected, atol=1e-4)


def test_decode_maps_back_to_image_px_with_per_axis_scale() -> None:
    fractions = np.array([[0.25, 0.3], [0.75, 0.3], [0.5, 0.55], [0.3, 0.8], [0.7, 0.8]])
    maps = _maps((8, 8), [(3, 5, 0.9)], box_hw=(20.0, 16.0), offset_yx=(0.25, -0.5), landmark_fractions=fractions)
    faces = decode(*maps, score_threshold=0.5, scale_x=2.0, scale_y=0.5)
    assert faces[0].box == pytest.approx((6.0, 10.0, 14.0, 50.0))
    expected = (np.array([12.0, 5.0]) + fractions * np.array([16.0, 20.0])) / np.array([2.0, 0.5])
    np.testing.assert_allclose(faces[0].landmarks, expected, atol=1e-4)


def test_decode_below_threshold_gives_none() -> None:
    maps = _maps((8, 8), [(3, 5, 0.49), (1, 1, 0.3)])
    assert decode(*maps, score_threshold=0.5) == []
    assert decode(*_maps((8, 8), []), score_threshold=0.0) == []


def test_decode_collapses_neighbouring_peaks_and_sorts_by_score() -> None:
    # Three adjacent cells on one face (as the real heatmap does) and one far away.
    maps = _maps((16, 16), [(4, 4, 0.7), (4, 5, 0.95), (5, 5, 0.8), (12, 12, 0.6)], box_hw=(24.0, 20.0))
    faces = decode(*maps, score_threshold=0.5, nms_threshold=0.3)
    assert [round(f.score, 2) for f in faces] == [0.95, 0.6]
    assert faces[0].box == pytest.approx((12.0, 6.0, 32.0, 30.0))


def test_decode_clips_boxes_but_keeps_landmarks_anchored_on_the_full_box() -> None:
    fractions = np.full((5, 2), 0.5)
    maps = _maps((8, 8), [(0, 0, 0.9)], box_hw=(20.0, 16.0), landmark_fractions=fractions)
    faces = decode(*maps, score_threshold=0.5, image_size=(30, 30))
    # centre (2, 2): unclipped box (-6, -8, 10, 12)
    assert faces[0].box == pytest.approx((0.0, 0.0, 10.0, 12.0))
    np.testing.assert_allclose(faces[0].landmarks, np.full((5, 2), 2.0), atol=1e-4)


def test_decode_rejects_mismatched_maps() -> None:
    heatmap, scale, offset, landmarks = _maps((8, 8), [])
    with pytest.raises(ValueError):
        decode(heatmap, scale[:, :, :4], offset, landmarks, score_threshold=0.5)
    with pytest.raises(ValueError):
        decode(heatmap, scale, offset, landmarks[:, :8], score_threshold=0.5)


# --------------------------------------------------------------------------- letterbox / class plumbing


def test_letterbox_scales_long_side_and_pads_bottom_right_with_zeros() -> None:
    image = np.full((300, 900, 3), 200, dtype=np.uint8)
    canvas, scale_x, scale_y = letterbox(image, size=640)
    assert canvas.shape == (640, 640, 3) and canvas.dtype == np.uint8
    assert (scale_x, scale_y) == (640 / 900, 213 / 300)
    assert (canvas[:213, :640] == 200).all()
    assert (canvas[213:] == 0).all()


@pytest.mark.parametrize("shape", [(512, 512), (300, 900), (900, 300), (37, 41), (1000, 1000)])
def test_detect_always_feeds_one_fixed_tensor_shape(shape: tuple[int, int]) -> None:
    session = _FakeSession(None, (20.0, 16.0))
    detector = CenterFace(session, input_size=320)  # type: ignore[arg-type]
    detector.warmup()
    warmed = list(session.shapes)
    assert warmed == [(1, 3, 320, 320), (CLOSE_UP_BATCH, 3, CLOSE_UP_SIZE, CLOSE_UP_SIZE)]
    detector.detect(np.zeros((*shape, 3), dtype=np.uint8))
    for count in range(1, CLOSE_UP_BATCH + 1):
        detector.detect_close_ups([np.zeros((*shape, 3), dtype=np.uint8)] * count)
    assert set(session.shapes) == set(warmed)  # every shape a request feeds was warmed
    assert set(session.dtypes) == {np.dtype(np.float32)}


def test_close_ups_take_one_to_a_batch_of_crops_and_say_which_face_is_in_which() -> None:
    session = _FakeSession((160.0, 160.0), (64.0, 48.0))
    detector = CenterFace(session)  # type: ignore[arg-type]
    crops = [np.zeros((size, size, 3), dtype=np.uint8) for size in (320, 640, 160)]
    found = detector.detect_close_ups(crops)
    assert session.shapes == [(CLOSE_UP_BATCH, 3, CLOSE_UP_SIZE, CLOSE_UP_SIZE)]  # one run for all three
    assert [len(faces) for faces in found] == [1, 1, 1]
    for faces, crop in zip(found, crops, strict=True):  # each mapped back into its own crop's px
        factor = crop.shape[0] / CLOSE_UP_SIZE
        assert faces[0].box == pytest.approx(((160 - 24) * factor, (160 - 32) * factor, (160 + 24) * factor, (160 + 32) * factor))
    for bad in ([], [np.zeros((8, 8, 3), np.uint8)] * (CLOSE_UP_BATCH + 1), [np.zeros((0, 8, 3), np.uint8)]):
        with pytest.raises(ValueError):
            detector.detect_close_ups(bad)


def test_detect_maps_network_px_back_to_a_wide_image() -> None:
    # 300 x 900 image -> scale 640/900 on x, 213/300 on y; network peak at (320, 100) px.
    session = _FakeSession((320.0, 100.0), (64.0, 48.0))
    detector = CenterFace(session)  # type: ignore[arg-type]
    faces = detector.detect(np.zeros((300, 900, 3), dtype=np.uint8))
    assert len(faces) == 1
    sx, sy = 640 / 900, 213 / 300
    assert faces[0].box == pytest.approx(((320 - 24) / sx, (100 - 32) / sy, (320 + 24) / sx, (100 + 32) / sy))
    left_eye = ((320 - 24 + 0.3 * 48) / sx, (100 - 32 + 0.4 * 64) / sy)
    np.testing.assert_allclose(faces[0].landmarks[LEFT_EYE], left_eye, rtol=1e-5)


def test_detector_rejects_bad_input() -> None:
    session = _FakeSession(None, (20.0, 16.0))
    with pytest.raises(ValueError):
        CenterFace(session, input_size=500)  # type: ignore[arg-type]
    detector = CenterFace(session)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        detector.detect(np.zeros((64, 64), dtype=np.uint8))
    with pytest.raises(ValueError):
        detector.detect(np.zeros((64, 64, 3), dtype=np.float32))


# --------------------------------------------------------------------------- real model


def _model_path() -> Path:
    return Path(os.environ.get("MODEL_HOME", str(DEFAULT_MODEL_HOME))) / "centerface.onnx"


@pytest.fixture(scope="module")
def model_bytes() -> bytes:
    path = _model_path()
    assert path.is_file(), f"CenterFace model not found at {path} (./test.sh fetches it)"
    data = path.read_bytes()
    assert hashlib.sha256(data).hexdigest() == MODEL_SHA256, f"unexpected model file at {path}"
    return data


@pytest.fixture(scope="module")
def session(model_bytes: bytes) -> onnxruntime.InferenceSession:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(
        make_dims_dynamic(model_bytes), sess_options=options, providers=["CPUExecutionProvider"]
    )


@pytest.fixture(scope="module")
def detector(session: onnxruntime.InferenceSession) -> CenterFace:
    centerface = CenterFace(session)
    centerface.warmup()
    return centerface


@pytest.fixture(scope="module")
def astronaut() -> np.ndarray:
    return skimage.data.astronaut()


@pytest.fixture(scope="module")
def group_photo() -> np.ndarray:
    # Located without importing insightface (its __init__ imports cv2, which is not installed).
    spec = importlib.util.find_spec("insightface")
    assert spec is not None and spec.submodule_search_locations, "insightface is not installed (requirements-nodeps.txt)"
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "images" / "t1.jpg"
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


def _assert_plausible_frontal_face(face: Face) -> None:
    marks = face.landmarks
    x1, y1, x2, y2 = face.box
    assert ((marks[:, 0] >= x1) & (marks[:, 0] <= x2) & (marks[:, 1] >= y1) & (marks[:, 1] <= y2)).all()
    assert marks[LEFT_EYE, 0] < marks[RIGHT_EYE, 0]
    assert marks[LEFT_MOUTH, 0] < marks[RIGHT_MOUTH, 0]
    assert max(marks[LEFT_EYE, 1], marks[RIGHT_EYE, 1]) < marks[NOSE, 1]
    assert marks[NOSE, 1] < min(marks[LEFT_MOUTH, 1], marks[RIGHT_MOUTH, 1])


def test_make_dims_dynamic_relaxes_shapes_and_strips_weight_inputs(model_bytes: bytes) -> None:
    model = onnx.load_from_string(make_dims_dynamic(model_bytes))

    def dims(value: onnx.ValueInfoProto) -> list[int | str]:
        return [d.dim_param or d.dim_value for d in value.type.tensor_type.shape.dim]

    assert [dims(i) for i in model.graph.input] == [["batch", 3, "height", "width"]]
    assert [dims(o)[:2] for o in model.graph.output] == [["batch", 1], ["batch", 2], ["batch", 2], ["batch", 10]]
    assert all(isinstance(d, str) for o in model.graph.output for d in dims(o)[2:])


def test_dynamic_model_runs_any_multiple_of_32(session: onnxruntime.InferenceSession) -> None:
    name = session.get_inputs()[0].name
    outputs = session.run(None, {name: np.zeros((2, 3, 64, 96), dtype=np.float32)})
    assert [o.shape for o in outputs] == [(2, 1, 16, 24), (2, 2, 16, 24), (2, 2, 16, 24), (2, 10, 16, 24)]


def test_astronaut_has_one_face_with_sane_landmarks(detector: CenterFace, astronaut: np.ndarray) -> None:
    faces = detector.detect(astronaut)
    assert len(faces) == 1
    face = faces[0]
    assert face.score > 0.8
    _assert_plausible_frontal_face(face)
    # The face sits left of centre in the upper part of the 512 x 512 picture.
    x1, y1, x2, y2 = face.box
    assert 150 < x1 < x2 < 300 and 30 < y1 < y2 < 210


def test_group_photo_has_six_faces(detector: CenterFace, group_photo: np.ndarray) -> None:
    faces = detector.detect(group_photo)
    assert len(faces) == 6
    scores = [f.score for f in faces]
    assert scores == sorted(scores, reverse=True)
    height, width = group_photo.shape[:2]
    for face in faces:
        x1, y1, x2, y2 = face.box
        assert 0 <= x1 < x2 <= width and 0 <= y1 < y2 <= height
        _assert_plausible_frontal_face(face)


def test_blank_grey_image_has_no_faces(detector: CenterFace) -> None:
    assert detector.detect(np.full((480, 640, 3), 128, dtype=np.uint8)) == []


@pytest.mark.parametrize("pad_axis", [0, 1])
def test_padding_does_not_move_the_face(detector: CenterFace, astronaut: np.ndarray, pad_axis: int) -> None:
    # 512 x 512 -> 512 x 640 (or 640 x 512) with grey: the network input scale changes
    # from 1.25 to 1.0, yet the face must come back at the same image px.
    reference = detector.detect(astronaut)[0]
    shape = (640, 512, 3) if pad_axis == 0 else (512, 640, 3)
    padded = np.full(shape, 128, dtype=np.uint8)
    padded[:512, :512] = astronaut
    faces = detector.detect(padded)
    assert len(faces) == 1
    np.testing.assert_allclose(faces[0].box, reference.box, atol=4.0)
    np.testing.assert_allclose(faces[0].landmarks, reference.landmarks, atol=4.0)


def test_wide_crop_maps_landmarks_back_to_crop_px(detector: CenterFace, group_photo: np.ndarray) -> None:
    top, left, crop_h, crop_w = 140, 0, 300, 900
    crop = group_photo[top : top + crop_h, left : left + crop_w]
    full = detector.detect(group_photo)
    inside = [
        f
        for f in full
        if f.box[0] >= left and f.box[1] >= top and f.box[2] <= left + crop_w and f.box[3] <= top + crop_h
    ]
    assert len(inside) == 3
    cropped = detector.detect(crop)
    shift = np.array([left, top], dtype=np.float32)
    for face in inside:
        errors = [np.abs(c.landmarks + shift - face.landmarks).max() for c in cropped]
        # Different network scale (0.5 vs 0.71) -> allow 12 % of the face width.
        assert min(errors) < 0.12 * face.width


def test_close_ups_read_in_one_run_as_each_crop_alone(detector: CenterFace, astronaut: np.ndarray) -> None:
    """A batch is only a way to run several crops at once: each crop's faces are the ones it gets alone."""
    crops = [np.ascontiguousarray(astronaut[y : y + side, x : x + side]) for x, y, side in
             ((120, 20, 220), (80, 0, 320), (40, 0, 400))]
    together = detector.detect_close_ups(crops)
    for crop, faces in zip(crops, together, strict=True):
        (alone,) = detector.detect_close_ups([crop])
        assert len(faces) == len(alone) == 1
        np.testing.assert_allclose(faces[0].landmarks, alone[0].landmarks, atol=0.05)
        _assert_plausible_frontal_face(faces[0])

