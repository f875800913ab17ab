"""MODNet, the portrait matte (issue 35): its fixed input shapes, each warmed once per lane; the
colours under soft edges; the routes that pick it (a cut-out that names no model and shows a face,
ID photos) and the ones that refuse it (alpha matting).

The shape and warm-up checks run on a generated ONNX model with MODNet's input and output (its
alpha is the input's mean grey, so every output pixel is known); the rest on the real model.
"""

from __future__ import annotations

import base64
import io
from collections import Counter
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest
from flask import Flask
from PIL import Image

from app import create_app
from app.config import Settings
from app.imaging.matte_edges import BAND_ROWS, decontaminate, edge_colours, fit_shape, pad_to
from app.models import sessions
from app.models.portrait import SHAPES, AlphaMattingNotApplicable, PortraitMatte, network_input
from app.models.registry import Registry
from app.service import Service
from tests.conftest import jpeg_bytes

# -- pure functions --------------------------------------------------------------------------------


@pytest.mark.parametrize(("size", "shape"), [
    ((1200, 1200), (512, 512)),
    ((900, 1200), (512, 672)),  # a 3:4 portrait
    ((1200, 900), (672, 512)),
    ((300, 2000), (512, 672)),  # very tall: the tallest shape still fits it best
    ((2000, 300), (672, 512)),
    ((1, 1), (512, 512)),
])
def test_a_photo_goes_to_the_shape_it_fills_most(size: tuple[int, int], shape: tuple[int, int]) -> None:
    chosen, fitted = fit_shape(*size, SHAPES)
    assert chosen == shape
    assert fitted[0] <= shape[0] and fitted[1] <= shape[1] and (fitted[0] == shape[0] or fitted[1] == shape[1])
    assert abs((fitted[0] / fitted[1]) / (size[0] / size[1]) - 1) <= 1.0 / min(fitted)  # the aspect ratio kept, to a pixel


def test_padding_centres_the_photo_and_reflects_it() -> None:
    rng = np.random.default_rng(3)
    rgb = rng.integers(0, 256, (500, 400, 3), dtype=np.uint8)
    padded, (x, y, width, height) = pad_to(rgb, (512, 672))
    assert padded.shape == (672, 512, 3) and (width, height) == (400, 500)
    assert (x, y) == (56, 86)
    assert np.array_equal(padded[y : y + height, x : x + width], rgb)
    assert np.array_equal(padded[y, x - 1], rgb[0, 1])  # reflected about the edge pixel
    tiny, box = pad_to(rgb[:2, :3], (512, 512))  # too small to reflect: its edge repeated
    assert tiny.shape == (512, 512, 3) and np.array_equal(tiny[0, 0], rgb[0, 0]) and box[2:] == (3, 2)


def test_the_network_sees_the_photo_in_minus_one_to_one() -> None:
    rgb = np.zeros((300, 400, 3), dtype=np.uint8)
    rgb[..., 0] = 255
    given = network_input(rgb)
    assert given.shape == (672, 512) and given.tensor.shape == (1, 3, 512, 672) and given.tensor.dtype == np.float32
    x, y, width, height = given.content
    inside = given.tensor[0, :, y : y + height, x : x + width]
    assert np.allclose(inside[0], 1.0) and np.allclose(inside[1:], -1.0)


def _layered(size: int = 96) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A person's colour F (warm, slowly varying) over a background B (green) with a soft ramp of
    coverage: (I, alpha uint8, F, B)."""
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64) / size
    foreground = np.stack([180 + 40 * yy, 120 + 30 * xx, 90 + 0 * xx], axis=2)
    background = np.stack([30 + 0 * xx, 200 - 40 * yy, 40 + 20 * xx], axis=2)
    alpha = np.clip((xx - 0.3) / 0.4, 0, 1)  # 0 on the left, a ramp, 1 on the right
    image = alpha[..., None] * foreground + (1 - alpha[..., None]) * background
    return (np.round(image).astype(np.uint8), np.round(alpha * 255).astype(np.uint8), foreground, background)


def test_the_soft_edges_lose_the_old_backgrounds_colour() -> None:
    image, alpha, foreground, background = _layered()
    small = np.asarray(Image.fromarray(image).resize((48, 48), Image.BILINEAR))
    small_alpha = np.asarray(Image.fromarray(alpha).resize((48, 48), Image.BILINEAR)).astype(np.float64) / 255
    cleaned = decontaminate(image, alpha, edge_colours(small, small_alpha))
    thin = (alpha > 25) & (alpha < 230)
    before = np.abs(image[thin].astype(float) - foreground[thin]).mean()
    after = np.abs(cleaned[thin].astype(float) - foreground[thin]).mean()
    assert before > 30 and after < before / 3, (before, after)
    whole, none = alpha == 255, alpha == 0
    assert np.array_equal(cleaned[whole], image[whole])  # the photo's own pixels where it is whole
    assert np.array_equal(cleaned[none], image[none])  # and where nothing of the person shows (never seen)


def test_the_edge_colours_are_carried_up_as_opencv_scales_them() -> None:
    """The soft pixels get I + (1 - a) (F - B) with F - B scaled up bilinearly, as cv2.resize's
    INTER_LINEAR would scale the whole field; rows on both sides of a band boundary included."""
    rng = np.random.default_rng(7)
    height, width = BAND_ROWS + 37, 301
    image = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    alpha = rng.integers(0, 256, (height, width), dtype=np.uint8)
    difference = rng.uniform(-120, 120, (23, 17, 3)).astype(np.float32)
    field = cv2.resize(difference, (width, height), interpolation=cv2.INTER_LINEAR)
    expected = np.clip(image + (255 - alpha[..., None].astype(np.float32)) / 255 * field + 0.5, 0, 255).astype(np.uint8)
    cleaned = decontaminate(image, alpha, difference)
    soft = (alpha > 0) & (alpha < 255)
    assert np.abs(cleaned[soft].astype(int) - expected[soft]).max() <= 1
    assert np.array_equal(cleaned[~soft], image[~soft])


# -- on a generated model with MODNet's input and output -------------------------------------------


def _grey_model(path: Path) -> Path:
    """[B,3,H,W] in [-1,1] -> [B,1,H,W]: (mean over channels + 1) / 2, the grey level in [0, 1]."""
    from onnx import TensorProto, helper

    shape = ["batch_size", 3, "height", "width"]
    graph = helper.make_graph(
        [helper.make_node("ReduceMean", ["input"], ["mean"], axes=[1], keepdims=1),
         helper.make_node("Add", ["mean", "one"], ["shifted"]),
         helper.make_node("Mul", ["shifted", "half"], ["output"])],
        "modnet-standin",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch_size", 1, "height", "width"])],
        [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0]), helper.make_tensor("half", TensorProto.FLOAT, [], [0.5])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 6
    path.write_bytes(model.SerializeToString())
    return path


class _Shapes:
    """A session stand-in that counts the input shapes each lane ran."""

    def __init__(self, session: object) -> None:
        self.session = session
        self.ran: Counter[tuple[str, tuple[int, ...]]] = Counter()

    def get_inputs(self) -> object:
        return self.session.get_inputs()

    def run(self, names: object, feeds: dict[str, np.ndarray]) -> object:
        self.ran[(sessions.current_lane(), next(iter(feeds.values())).shape)] += 1
        return self.session.run(names, feeds)


@pytest.fixture()
def standin(tmp_path: Path) -> tuple[PortraitMatte, _Shapes]:
    providers = sessions.Providers((sessions.CPU,), cpu_arena="off")
    counting: list[_Shapes] = []

    def factory(model: Path | bytes) -> object:
        counting.append(_Shapes(sessions.create_session(model, providers=providers, label="modnet")))
        return counting[0]

    return PortraitMatte.from_file(_grey_model(tmp_path / "modnet.onnx"), session_factory=factory), counting[0]


def test_every_shape_runs_once_per_lane_in_the_warm_up(standin: tuple[PortraitMatte, _Shapes]) -> None:
    matte, session = standin
    with sessions.forced_lane(sessions.NARROW):
        matte.matte(np.full((300, 300, 3), 200, np.uint8), max_side=2048)  # a request: the square shape
        matte.warmup()
        matte.warmup()  # nothing left to run on this lane
    with sessions.forced_lane(sessions.WIDE):
        matte.warmup()
    expected = Counter({(lane, (1, 3, height, width)): 1 for lane in ("narrow", "wide") for width, height in SHAPES})
    assert session.ran == expected


def test_a_request_at_a_shape_not_warmed_is_recorded_with_its_lane(standin: tuple[PortraitMatte, _Shapes]) -> None:
    """/readyz's warm_shapes says what has run: a landscape photo on the wide lane adds that pair, and only it."""
    matte, _ = standin
    with sessions.forced_lane(sessions.NARROW):
        matte.warmup()
    assert matte.warm_shapes() == sorted(f"narrow:{w}x{h}" for w, h in SHAPES)
    with sessions.forced_lane(sessions.WIDE):
        matte.matte(np.full((300, 480, 3), 120, np.uint8), max_side=2048)
    assert matte.warm_shapes() == sorted([*(f"narrow:{w}x{h}" for w, h in SHAPES), "wide:672x512"])


def test_the_alpha_comes_back_at_the_photos_size_without_the_padding(standin: tuple[PortraitMatte, _Shapes]) -> None:
    matte, _ = standin
    rgb = np.zeros((450, 300, 3), dtype=np.uint8)
    rgb[:, 150:] = 255  # left half black (alpha 0), right half white (alpha 1) in the stand-in
    result = matte.matte(rgb, max_side=2048, decontaminate_edges=False)
    assert result.alpha.shape == (450, 300) and result.alpha.dtype == np.uint8
    assert result.alpha[:, :140].max() <= 2 and result.alpha[:, 160:].min() >= 253  # padding would shift the edge
    assert result.foreground is rgb
    with pytest.raises(AlphaMattingNotApplicable):
        from app.models.segmentation import AlphaMatting

        matte.matte(rgb, max_side=2048, alpha_matting=AlphaMatting())


# -- the real model, through the app --------------------------------------------------------------


def _post(app: Flask, path: str, image: bytes, **fields: str) -> tuple[int, dict, bytes]:
    """(status, the JSON answer, the image it carries): the JSON answer names the model that ran."""
    response = app.test_client().post(path, data={**fields, "image": (io.BytesIO(image), "photo.jpg")},
                                      headers={"Accept": "application/json"})
    body = response.get_json()
    return response.status_code, body, base64.b64decode(body["image"]) if "image" in body else b""


def test_a_cut_out_of_a_face_takes_the_portrait_matte_and_of_no_face_the_general(portrait_app: Flask, astronaut: np.ndarray) -> None:
    status, meta, body = _post(portrait_app, "/api/v1/remove-background", jpeg_bytes(astronaut))
    assert status == 200 and meta["model"] == "modnet", meta
    rgba = np.asarray(Image.open(io.BytesIO(body)))
    assert rgba.shape == (512, 512, 4)
    assert rgba[5:40, 5:40, 3].max() == 0 and rgba[300:400, 200:300, 3].mean() > 250  # the wall out, the suit in
    wall = np.zeros((400, 600, 3), dtype=np.uint8)
    wall[:] = np.linspace(40, 220, 600, dtype=np.uint8)[None, :, None]
    status, meta, _ = _post(portrait_app, "/api/v1/remove-background", jpeg_bytes(wall))
    assert status == 200 and meta["model"] == "u2netp", meta
    status, meta, _ = _post(portrait_app, "/api/v1/remove-background", jpeg_bytes(wall), model="modnet")
    assert status == 200 and meta["model"] == "modnet", meta  # a named model is the one that runs


def test_alpha_matting_never_runs_on_the_portrait_matte(portrait_app: Flask, astronaut: np.ndarray) -> None:
    status, body, _ = _post(portrait_app, "/api/v1/remove-background", jpeg_bytes(astronaut), model="modnet", alpha_matting="true")
    assert status == 400 and body["error"]["code"] == "alpha_matting_not_applicable", body
    status, meta, _ = _post(portrait_app, "/api/v1/remove-background", jpeg_bytes(astronaut), alpha_matting="true")
    assert status == 200 and meta["model"] == "u2netp", meta  # no model named: matting refines the general mask


def test_where_the_portrait_matte_misses_the_face_the_general_one_mattes_it(portrait_app: Flask, astronaut: np.ndarray) -> None:
    """MODNet on an out-of-focus portrait returns next to nothing (measured on the astronaut blurred by
    a 4.5 px Gaussian: 0.02 % of pixels at alpha >= 128); the face the detector found says so, and
    u2net mattes the photo instead, for a cut-out that names no model and for an ID photo."""
    from app.imaging.opencv import cv2
    from app.imaging.people import covers_face

    blurred = cv2.GaussianBlur(astronaut, (0, 0), 4.5)
    registry = Service.of(portrait_app).registry
    alpha = registry.segmenter("modnet").matte(blurred, max_side=2048).alpha
    face = registry.face_detector()[1].detect(blurred)[0]
    assert not covers_face(alpha, tuple(face.box))  # the failure this guards against
    assert covers_face(registry.segmenter("modnet").matte(astronaut, max_side=2048).alpha, tuple(face.box))
    status, meta, body = _post(portrait_app, "/api/v1/remove-background", jpeg_bytes(blurred))
    assert status == 200 and meta["model"] == "u2netp", meta
    assert covers_face(np.asarray(Image.open(io.BytesIO(body)))[:, :, 3], tuple(face.box))  # the face is in the cut-out
    status, meta, _ = _post(portrait_app, "/api/v1/idphoto", jpeg_bytes(blurred), spec="icao")
    assert status == 200 and meta["models"]["segment"] == "u2netp", meta
    status, meta, _ = _post(portrait_app, "/api/v1/idphoto", jpeg_bytes(astronaut), spec="icao")
    assert status == 200 and meta["models"]["segment"] == "modnet", meta


def test_a_face_is_covered_by_its_centre() -> None:
    from app.imaging.people import covers_face

    alpha = np.zeros((100, 100), dtype=np.uint8)
    alpha[30:70, 30:70] = 255
    assert covers_face(alpha, (20.0, 20.0, 80.0, 80.0))  # the centre 30..50 is inside
    assert not covers_face(alpha, (60.0, 0.0, 100.0, 40.0))
    assert covers_face(alpha, (120.0, 120.0, 140.0, 140.0))  # no centre inside the photo to judge


class _CountingSession:
    """A session that counts the input shapes it runs (the network's calls, not the pipeline's)."""

    def __init__(self, session: object, shapes: Counter) -> None:
        self._session, self._shapes = session, shapes

    def run(self, outputs: object, feeds: dict) -> object:
        (tensor,) = feeds.values()
        self._shapes[tuple(tensor.shape)] += 1
        return self._session.run(outputs, feeds)

    def __getattr__(self, name: str) -> object:
        return getattr(self._session, name)


def test_a_warm_up_pass_runs_each_modnet_shape_once_and_leaves_out_what_adds_nothing(model_home: Path) -> None:
    settings = Settings(model_home=model_home, models=("u2netp", "modnet", "centerface"), segmentation_model="u2netp",
                        warmup_requests=1, ort_providers="cpu", max_upload_mb=4, working_max_side=1024, workers=1)
    registry = Registry()
    service = Service.of(create_app(settings, registry))
    service.load()
    assert "prime process-wide first calls" in service.phases.as_dict()  # in the master, before any fork
    shapes: Counter = Counter()
    matte = registry.segmenter("modnet")
    matte.session = _CountingSession(matte.session, shapes)
    service.warm()
    # a HEIC decode first (libheif's set-up in this process); the ID photo's request runs the
    # astronaut's shape; modnet.warmup() the two others; the cut-out
    # request with model=modnet would only repeat the first, so the pass leaves it out
    assert shapes == Counter({(1, 3, height, width): 1 for width, height in SHAPES}), shapes
    steps = [step["step"] for step in service.warmup_steps]
    assert steps == ["decode warmup.heic", "POST /api/v1/idphoto/sheet spec=icao paper=4x6 background=white",
                     "POST /api/v1/remove-background model=u2netp", "POST /api/v1/faces crops=true", "POST /api/v1/idphoto/check spec=icao", "modnet.warmup()"], steps

    skipping = Service.of(create_app(replace(settings, warmup_skip=("requests",)), registry))
    skipping.warm()  # no requests: each model's own warm-up, for the shapes not yet run (none here)
    assert [step["step"] for step in skipping.warmup_steps] == ["u2netp.warmup()", "modnet.warmup()", "centerface.warmup()"]
    assert shapes == Counter({(1, 3, height, width): 1 for width, height in SHAPES})
    nothing = Service.of(create_app(replace(settings, warmup_skip=("requests", "shapes")), registry))
    nothing.warm()
    assert nothing.warmup_steps == [] and nothing.warmed
