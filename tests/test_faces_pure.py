"""Face geometry, insightface's models on our sessions, and their installation, without a server.

The models are the generated stand-ins of tests/onnx_fakes.py, installed through the real
checksum machinery (`add`) and loaded by the real registry; detection and alignment on real photos
use the real CenterFace. Alignment, SCRFD decoding and the models' pre- and post-processing are
insightface's own: where these tests state numbers, insightface's behaviour is the reference.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from insightface.app.common import Face as InsightFace
from insightface.model_zoo.inswapper import INSwapper
from insightface.model_zoo.scrfd import SCRFD
from insightface.utils import face_align
from PIL import Image

from app.imaging.face_align import cosine_similarity, l2_normalise, paste_back, soft_mask
from app.imaging.opencv import bgr_to_rgb, cv2, rgb_to_bgr
from app.models.centerface import CenterFace, make_dims_dynamic
from app.models.checksums import read_record
from app.models.fetch import FetchError, add, fetch, inspect
from app.models.insight import ArcFace, GenderAge, Landmark106, Scrfd, Swapper
from app.models.manifest import Checksum, ModelSpec, Role, ZipMemberSource, get_spec
from app.models.registry import ModelFileError, Registry
from app.models.sessions import Providers, create_session
from tests import onnx_fakes

CPU = Providers(("CPUExecutionProvider",))
ARCFACE_TEMPLATE = face_align.arcface_dst.astype(np.float64)  # insightface's, for 112 px
# CenterFace on skimage's astronaut (measured): the box and the five landmarks.
ASTRONAUT_BOX = (180.0, 57.9, 270.7, 175.9)
ASTRONAUT_LANDMARKS = np.array([[202.9, 101.7], [249.4, 102.5], [225.7, 124.5], [204.4, 143.8], [243.5, 144.3]])


def insightface_image(name: str) -> np.ndarray:
    spec = importlib.util.find_spec("insightface")
    assert spec is not None and spec.submodule_search_locations
    path = Path(spec.submodule_search_locations[0]) / "data" / "images" / name
    return np.asarray(Image.open(path).convert("RGB"))


@pytest.fixture(scope="module")
def centerface(model_home: Path) -> CenterFace:
    session = create_session(make_dims_dynamic((model_home / "centerface.onnx").read_bytes()), providers=CPU, label="test")
    return CenterFace(session)


def astronaut_scrfd_face() -> onnx_fakes.ScrfdFace:
    """The fake SCRFD's face: the astronaut's, in the 640 px input of a 512 px image (x 1.25)."""
    return onnx_fakes.ScrfdFace(tuple(v * 1.25 for v in ASTRONAUT_BOX), ASTRONAUT_LANDMARKS * 1.25)  # type: ignore[arg-type]


FAKES = {
    "arcface": onnx_fakes.arcface,
    "genderage": onnx_fakes.genderage,
    "landmark_2d_106": onnx_fakes.landmark_106,
    "scrfd": lambda: onnx_fakes.scrfd(astronaut_scrfd_face()),
    "inswapper": onnx_fakes.inswapper,
}


@pytest.fixture(scope="module")
def fake_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A MODEL_HOME holding every fake, installed with `add` against its own checksum."""
    home = tmp_path_factory.mktemp("fake-models")
    for name, build in FAKES.items():
        path, digest = onnx_fakes.write(home / "incoming", f"{name}.onnx", build())
        add(get_spec(name), path, home, sha256=digest)
    return home


def transform_points(points: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    p = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    return p @ np.asarray(matrix)[:, :2].T + np.asarray(matrix)[:, 2]


def estimate_norm(landmarks: np.ndarray, *, size: int) -> np.ndarray:
    return face_align.estimate_norm(np.asarray(landmarks, dtype=np.float32), image_size=size)


class RecordingSession:
    """An onnxruntime session (real or stand-in outputs) that keeps every input it was fed."""

    def __init__(self, session: ort.InferenceSession | None = None, *, inputs: Sequence[object] = (),
                 outputs: Sequence[object] = (), results: Sequence[np.ndarray] = ()) -> None:
        self.session = session
        self._inputs, self._outputs, self._results = list(inputs), list(outputs), list(results)
        self.feeds: list[dict[str, np.ndarray]] = []

    def get_inputs(self) -> list[object]:
        return self.session.get_inputs() if self.session is not None else self._inputs

    def get_outputs(self) -> list[object]:
        return self.session.get_outputs() if self.session is not None else self._outputs

    def run(self, names: list[str] | None, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        self.feeds.append({name: np.array(value) for name, value in feed.items()})
        return self.session.run(names, feed) if self.session is not None else self._results


@dataclass(frozen=True)
class Arg:
    name: str
    shape: list[object]


@pytest.fixture(scope="module")
def fake_registry(fake_home: Path) -> Registry:
    registry = Registry()
    registry.load(FAKES, model_home=fake_home, providers=CPU)
    return registry


# -- alignment -------------------------------------------------------------------------------------


def test_estimate_norm_sends_the_landmarks_onto_the_template() -> None:
    angle = np.deg2rad(20)
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    landmarks = ARCFACE_TEMPLATE @ rotation.T * 2.5 + np.array([300.0, 140.0])  # an exact similarity
    np.testing.assert_allclose(transform_points(landmarks, estimate_norm(landmarks, size=112)), ARCFACE_TEMPLATE, atol=1e-3)
    at_128 = transform_points(landmarks, estimate_norm(landmarks, size=128))
    expected_128 = ARCFACE_TEMPLATE * (128 / 128) + np.array([8.0, 0.0])  # insightface: shifted 8 px for 128
    np.testing.assert_allclose(at_128, expected_128, atol=1e-3)  # float32 landmarks, as insightface takes them
    with pytest.raises(AssertionError):  # insightface asserts a size that is a multiple of 112 or 128
        estimate_norm(landmarks, size=100)


def test_the_warp_puts_marked_landmarks_on_the_template() -> None:
    """Dots painted at the landmarks of a rotated, scaled face land on the template's pixels."""
    angle = np.deg2rad(-12)
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    landmarks = (ARCFACE_TEMPLATE - 56) @ rotation.T * 3.0 + np.array([260.0, 210.0])
    image = np.zeros((420, 520, 3), dtype=np.uint8)
    for x, y in landmarks:
        xi, yi = int(round(x)), int(round(y))
        image[yi - 4 : yi + 5, xi - 4 : xi + 5] = 255
    crop = face_align.norm_crop(image, landmarks.astype(np.float32), image_size=112)
    assert crop.shape == (112, 112, 3) and crop.dtype == np.uint8
    for x, y in ARCFACE_TEMPLATE:  # each dot (about 3 px wide in the crop) covers its template point
        assert crop[int(round(y)), int(round(x))].min() > 200


def test_box_transform_is_insightfaces_crop() -> None:
    """The gender/age and landmark crop: the box centre at the crop centre, 1.5 x its long side."""
    x1, y1, x2, y2 = 100.0, 50.0, 180.0, 170.0
    scale = 96 / (max(x2 - x1, y2 - y1) * 1.5)
    _, matrix = face_align.transform(np.zeros((300, 300, 3), np.uint8), ((x1 + x2) / 2, (y1 + y2) / 2), 96, scale, 0)
    centre = transform_points(np.array([[140.0, 110.0]]), matrix)[0]
    np.testing.assert_allclose(centre, [48.0, 48.0])
    assert matrix[0, 0] == pytest.approx(96 / (120 * 1.5)) and matrix[0, 1] == 0.0


def test_real_photos_align_with_centerface(centerface: CenterFace, astronaut: np.ndarray) -> None:
    """CenterFace's landmarks on real photos fit the template closely, and insightface's own
    pre-aligned sample comes back almost unchanged."""
    for photo, count in ((astronaut, 1), (insightface_image("t1.jpg"), 6)):
        faces = centerface.detect(photo)
        assert len(faces) == count
        for face in faces:
            residual = np.abs(transform_points(face.landmarks, estimate_norm(face.landmarks, size=112)) - ARCFACE_TEMPLATE)
            assert residual.max() < 14, residual  # a similarity cannot fit every face exactly; no point strays far
    aligned = insightface_image("Tom_Hanks_54745.png")  # 112 x 112, already aligned by insightface
    face = centerface.detect(aligned)[0]
    matrix = estimate_norm(face.landmarks, size=112)
    scale = float(np.sqrt(abs(np.linalg.det(matrix[:, :2]))))
    angle = float(np.degrees(np.arctan2(matrix[1, 0], matrix[0, 0])))
    assert abs(scale - 1) < 0.1 and abs(angle) < 5 and np.abs(matrix[:, 2]).max() < 8


# -- paste-back ------------------------------------------------------------------------------------


def test_soft_mask_erodes_and_feathers() -> None:
    footprint = np.zeros((200, 200), dtype=np.float32)
    footprint[40:160, 50:170] = 255.0
    mask = soft_mask(footprint)  # mask_size 119: erosion k = 11, blur k' = 5
    assert mask.shape == (200, 200) and mask.dtype == np.float32
    assert mask[100, 110] == pytest.approx(1.0) and mask[:30].max() == 0.0 and mask[:, :40].max() == 0.0
    row = mask[100, 40:120]
    assert np.all(np.diff(row) >= -1e-6), "rises monotonically from the edge inwards"
    assert 0.0 < mask[100, 56] < 1.0 and mask[100, 50] < 0.05  # feathered inside the old edge


def test_paste_back_lands_on_the_face_and_nowhere_else(astronaut: np.ndarray) -> None:
    """Geometry of the INSwapper paste-back on the astronaut's face (CenterFace's landmarks)."""
    matrix = estimate_norm(ASTRONAUT_LANDMARKS, size=128)
    green = np.zeros((128, 128, 3), dtype=np.uint8)
    green[..., 1] = 255
    out = paste_back(astronaut, green, matrix)
    assert out.shape == astronaut.shape and out.dtype == np.uint8
    changed = np.any(out != astronaut, axis=2)
    ys, xs = np.nonzero(changed)
    # Everything changed lies inside the crop's footprint mapped back into the photo...
    footprint = transform_points(np.array([[0, 0], [127, 0], [0, 127], [127, 127]]), cv2.invertAffineTransform(matrix))
    assert xs.min() >= footprint[:, 0].min() - 1 and xs.max() <= footprint[:, 0].max() + 1
    assert ys.min() >= footprint[:, 1].min() - 1 and ys.max() <= footprint[:, 1].max() + 1
    # ...centred on the face...
    x1, y1, x2, y2 = ASTRONAUT_BOX
    assert abs(xs.mean() - (x1 + x2) / 2) < 8 and abs(ys.mean() - (y1 + y2) / 2) < 12
    # ...and the face itself (eyes, nose, mouth) is fully replaced.
    for x, y in ASTRONAUT_LANDMARKS:
        assert tuple(out[int(y), int(x)]) == (0, 255, 0)
    far = np.ones_like(changed)
    far[max(0, int(y1) - 40) : int(y2) + 40, max(0, int(x1) - 50) : int(x2) + 50] = False
    assert not changed[far].any()


def test_paste_back_near_the_image_edge_and_outside() -> None:
    photo = np.full((100, 100, 3), 90, dtype=np.uint8)
    landmarks = ARCFACE_TEMPLATE * 0.8 + np.array([-20.0, 10.0])  # the face is cut by the left edge
    white = np.full((128, 128, 3), 250, dtype=np.uint8)
    out = paste_back(photo, white, estimate_norm(landmarks, size=128))
    assert out[40:60, 0:10].min() > 200, "the edge does not erode the mask (as cv2.erode)"
    assert np.array_equal(paste_back(photo, white, estimate_norm(landmarks + 1000, size=128)), photo)


def test_paste_back_gives_insightfaces_pixels(fake_home: Path, astronaut: np.ndarray) -> None:
    """Ours (the window around the face) against insightface's own (`paste_back=True`, the whole
    photo), on the same swapped crop: the same pixels up to OpenCV's fixed-point weights."""
    path = fake_home / "inswapper_128.onnx"
    swapper = INSwapper(str(path), create_session(path, providers=CPU, label="test"))
    photo = rgb_to_bgr(astronaut)
    target = InsightFace(kps=ASTRONAUT_LANDMARKS.astype(np.float32))
    source = InsightFace(embedding=np.ones(512, np.float32))
    theirs = swapper.get(photo, target, source, paste_back=True)
    crop, matrix = swapper.get(photo, target, source, paste_back=False)
    ours = paste_back(photo, crop, matrix)
    difference = np.abs(theirs.astype(np.int16) - ours.astype(np.int16))
    assert np.any(theirs != photo) and difference.max() <= 1
    assert np.count_nonzero(difference) <= 0.001 * difference.size


# -- embeddings ------------------------------------------------------------------------------------


def test_cosine_similarity_and_normalisation() -> None:
    a = np.array([3.0, 4.0, 0.0])
    assert np.linalg.norm(l2_normalise(a)) == pytest.approx(1.0) and l2_normalise(a).dtype == np.float32
    assert cosine_similarity(a, a * 7) == pytest.approx(1.0)
    assert cosine_similarity(a, -a) == pytest.approx(-1.0)
    assert cosine_similarity(a, np.array([-4.0, 3.0, 0.0])) == pytest.approx(0.0)
    assert cosine_similarity(a, np.zeros(3)) == 0.0
    with pytest.raises(ValueError):
        cosine_similarity(a, np.ones(4))


def test_the_networks_see_rgb_and_the_graphs_normalisation(fake_home: Path) -> None:
    """A red RGB crop, handed over in BGR, reaches ArcFace as red, (x - 127.5) / 127.5; a graph
    that normalises by itself (first nodes Sub/Mul) gets raw pixels, as insightface reads it."""
    recording = RecordingSession(create_session(fake_home / "w600k_r50.onnx", providers=CPU, label="test"))
    from insightface.model_zoo.arcface_onnx import ArcFaceONNX

    arcface = ArcFace(ArcFaceONNX(str(fake_home / "w600k_r50.onnx"), recording))
    assert (arcface.model.input_mean, arcface.model.input_std) == (127.5, 127.5)
    red = np.zeros((112, 112, 3), dtype=np.uint8)
    red[..., 0] = 255
    arcface.embed_crop(rgb_to_bgr(red))
    blob = recording.feeds[-1]["input.1"]
    assert blob.shape == (1, 3, 112, 112) and blob.dtype == np.float32
    assert np.all(blob[0, 0] == 1.0) and np.all(blob[0, 1] == -1.0) and np.all(blob[0, 2] == -1.0)
    in_graph = fake_home / "in-graph.onnx"
    in_graph.write_bytes(onnx_fakes.arcface(normalise_in_graph=True))
    normalised = ArcFace.from_file(in_graph, session_factory=lambda model: create_session(model, providers=CPU, label="test"))
    assert (normalised.model.input_mean, normalised.model.input_std) == (0.0, 1.0)


# -- SCRFD -------------------------------------------------------------------------------------------


def scrfd_on(outputs: list[np.ndarray]) -> Scrfd:
    """Our SCRFD (insightface's class) on a session that answers `outputs` whatever it is fed."""
    session = RecordingSession(
        inputs=[Arg("input.1", [1, 3, "?", "?"])],
        outputs=[Arg(name, list(value.shape)) for name, value in zip(onnx_fakes.SCRFD_OUTPUT_NAMES, outputs, strict=False)],
        results=outputs,
    )
    return Scrfd(SCRFD(None, session, static_shape_sessions=False))


def test_scrfd_decode_on_synthetic_outputs() -> None:
    """insightface's SCRFD decoding of det_10g's 9 outputs, its letterbox (the image scaled into
    the top-left of 640 x 640, the side truncated to whole px) and its NMS; we clip boxes to the
    image (never landmarks)."""
    face = onnx_fakes.ScrfdFace((200.0, 100.0, 330.0, 260.0), np.array([[240, 160], [295, 158], [268, 195], [245, 225], [292, 224]], float))
    outputs = onnx_fakes.scrfd_outputs(face)
    assert [o.shape for o in outputs] == [(12800, 1), (3200, 1), (800, 1), (12800, 4), (3200, 4), (800, 4), (12800, 10), (3200, 10), (800, 10)]
    faces = scrfd_on(outputs).detect(np.zeros((640, 640, 3), np.uint8))
    assert len(faces) == 1, "the weaker duplicate is suppressed"
    np.testing.assert_allclose(faces[0].box, face.box, atol=1e-3)
    np.testing.assert_allclose(faces[0].landmarks, face.landmarks, atol=1e-3)
    assert faces[0].score == pytest.approx(0.95)
    # Letterbox scale: a 1280 x 960 photo shown at half size (outputs with a batch axis).
    scaled = scrfd_on([o[None] for o in outputs]).detect(np.zeros((960, 1280, 3), np.uint8))
    np.testing.assert_allclose(scaled[0].box, np.array(face.box) * 2, atol=1e-3)
    np.testing.assert_allclose(scaled[0].landmarks, face.landmarks * 2, atol=1e-3)
    # Clipping: a 640 x 200 photo fills the top of the input at scale 1; the face runs past its bottom.
    clipped = scrfd_on(outputs).detect(np.zeros((200, 640, 3), np.uint8))
    np.testing.assert_allclose(clipped[0].box, (200.0, 100.0, 330.0, 200.0), atol=1e-3)  # clipped to the image
    np.testing.assert_allclose(clipped[0].landmarks, face.landmarks, atol=1e-3)  # landmarks are not clipped
    assert scrfd_on(outputs).detect(np.zeros((640, 640, 3), np.uint8), score_threshold=0.99) == []
    with pytest.raises(ValueError, match="9 or 15"):
        scrfd_on(outputs[:6])


# -- the wrappers, loaded by the registry from installed fakes -------------------------------------------


def test_the_registry_loads_every_fake(fake_registry: Registry) -> None:
    entries = {entry.name: entry for entry in fake_registry.loaded()}
    assert set(entries) == set(FAKES)
    assert {entries[name].spec.role for name in entries} == {
        Role.FACE_DETECTION, Role.FACE_RECOGNITION, Role.FACE_ATTRIBUTES, Role.FACE_LANDMARKS_106, Role.FACE_SWAP,
    }
    for entry in entries.values():
        assert entry.provider == "CPUExecutionProvider"
        entry.model.warmup()
    found = fake_registry.face_detector()
    assert found is not None and found[0] == "scrfd" and isinstance(found[1], Scrfd)


def test_models_on_the_astronaut(fake_registry: Registry, astronaut: np.ndarray) -> None:
    detector = fake_registry.find(Scrfd)
    arcface = fake_registry.find(ArcFace)
    genderage = fake_registry.find(GenderAge)
    landmarks = fake_registry.find(Landmark106)
    assert detector and arcface and genderage and landmarks
    faces = detector.detect(astronaut)
    assert len(faces) == 1
    face = faces[0]
    np.testing.assert_allclose(face.box, ASTRONAUT_BOX, atol=0.01)
    np.testing.assert_allclose(face.landmarks, ASTRONAUT_LANDMARKS, atol=0.01)
    bgr = rgb_to_bgr(astronaut)
    embedding = arcface.embed(bgr, face)
    assert embedding.vector.shape == (512,) and embedding.vector.dtype == np.float32
    assert abs(float(np.linalg.norm(embedding.vector)) - 1.0) < 1e-5 and embedding.norm > 2
    assert arcface.model.input_mean == 127.5 and arcface.model.input_std == 127.5
    assert genderage.predict(bgr, face) == (1, 42)
    points = landmarks.predict(bgr, face)
    assert points.shape == (106, 2)
    x1, y1, x2, y2 = face.box
    assert np.all((points[:, 0] > x1 - 1) & (points[:, 0] < x2 + 1) & (points[:, 1] > y1 - 1) & (points[:, 1] < y2 + 1))
    # The 106 points are the fake's ellipse mapped back: its centre is the box centre.
    np.testing.assert_allclose(points.mean(axis=0), [(x1 + x2) / 2, (y1 + y2) / 2], atol=0.5)


def test_swapper_latent_and_emap(fake_registry: Registry, fake_home: Path, astronaut: np.ndarray) -> None:
    """insightface's INSwapper reads the emap from the graph and feeds the network the latent
    normalise(normalise(identity) @ emap); the swapped face is pasted back."""
    assert fake_registry.find(Swapper) is not None
    path = fake_home / "inswapper_128.onnx"
    recording = RecordingSession(create_session(path, providers=CPU, label="test"))
    with contextlib.redirect_stdout(io.StringIO()):
        swapper = Swapper(INSwapper(str(path), recording))
    np.testing.assert_array_equal(swapper.model.emap, onnx_fakes.emap())  # the graph's last initializer
    embedding = np.random.default_rng(1).normal(size=512)
    expected = (embedding / np.linalg.norm(embedding)) @ onnx_fakes.emap().astype(np.float64)
    expected /= np.linalg.norm(expected)
    face = fake_registry.find(Scrfd).detect(astronaut)[0]  # type: ignore[union-attr]
    out = bgr_to_rgb(swapper.swap(rgb_to_bgr(astronaut), face, embedding * 13))
    latent = recording.feeds[-1]["source"]
    assert latent.shape == (1, 512) and latent.dtype == np.float32
    np.testing.assert_allclose(latent[0], expected, atol=1e-5)
    with pytest.raises(ValueError, match="512"):
        swapper.swap(rgb_to_bgr(astronaut), face, np.ones(128))
    for x, y in ASTRONAUT_LANDMARKS:
        assert tuple(out[int(y), int(x)]) == (0, 255, 0)


def test_a_model_with_the_wrong_interface_is_refused(tmp_path: Path) -> None:
    path, digest = onnx_fakes.write(tmp_path / "incoming", "not-arcface.onnx", onnx_fakes.genderage())
    add(get_spec("arcface"), path, tmp_path, sha256=digest)
    with pytest.raises(ModelFileError, match=r"could not be loaded \(ValueError: ArcFace: input side 96"):
        Registry().load(["arcface"], model_home=tmp_path, providers=CPU)


def test_missing_and_changed_files_name_the_fix(fake_home: Path, tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match=r"inswapper_128.onnx is missing; run: python -m app.models fetch inswapper"):
        Registry().load(["inswapper"], model_home=tmp_path, providers=CPU)
    changed = tmp_path / "changed"
    changed.mkdir()
    for name in ("det_10g.onnx", "det_10g.onnx.checksum.json"):
        (changed / name).write_bytes((fake_home / name).read_bytes())
    with (changed / "det_10g.onnx").open("ab") as handle:
        handle.write(b"\0")
    with pytest.raises(ModelFileError, match=r"recorded at install.*python -m app.models add scrfd FILE --sha256 HEX"):
        Registry().load(["scrfd"], model_home=changed, providers=CPU)


# -- installing models ------------------------------------------------------------------------------


def user_supplied(name: str = "swapper_custom", *sources: ZipMemberSource, published: Checksum | None = None) -> ModelSpec:
    return ModelSpec(
        name=name, role=Role.FACE_SWAP, family="inswapper", filename=f"{name}.onnx", size=None, sha256=None,
        licence="test", sources=sources, description="test", published=published,
    )


def test_add_verifies_the_given_checksum_and_records_it(tmp_path: Path) -> None:
    path, digest = onnx_fakes.write(tmp_path / "incoming", "mine.onnx", onnx_fakes.inswapper())
    spec = user_supplied()
    home = tmp_path / "home"
    with pytest.raises(FetchError, match="not installed"):
        add(spec, path, home, sha256="0" * 64)
    assert not (home / spec.filename).exists()
    with pytest.raises(ValueError, match="not a sha256"):
        add(spec, path, home, sha256="abc")
    assert inspect(spec, home).status == "missing"
    add(spec, path, home, sha256=digest.upper())
    assert read_record(spec, home) == Checksum(digest, path.stat().st_size)
    assert inspect(spec, home).ok
    (home / spec.filename).write_bytes(b"x" * path.stat().st_size)  # same size, other bytes
    assert inspect(spec, home).status == "corrupt (sha256 mismatch)"
    (home / f"{spec.filename}.checksum.json").unlink()
    assert inspect(spec, home).status == "unverified (no checksum)"
    pinned = get_spec("centerface")
    with pytest.raises(FetchError, match="pinned"):
        add(pinned, path, home, sha256=digest)


def test_fetch_refuses_a_user_supplied_model_without_a_checksum(tmp_path: Path) -> None:
    with pytest.raises(FetchError, match=r"never downloaded unverified.*python -m app.models add swapper_custom FILE --sha256 HEX"):
        fetch(user_supplied(), tmp_path, progress=False)


def test_fetch_extracts_zip_members_once_per_archive(tmp_path: Path) -> None:
    """insightface's packs: members of one zip, verified against their published checksums."""
    members = {"w600k_r50.onnx": onnx_fakes.arcface(), "genderage.onnx": onnx_fakes.genderage()}
    archive = tmp_path / "buffalo_fake.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for name, data in members.items():
            zipped.writestr(f"buffalo_fake/{name}", data)  # under a folder: found by base name
    home, scratch = tmp_path / "home", tmp_path / "archives"
    scratch.mkdir()
    specs = []
    for name, data in members.items():
        import hashlib

        published = Checksum(hashlib.sha256(data).hexdigest(), len(data))
        specs.append(user_supplied(name.split(".")[0], ZipMemberSource(archive.as_uri(), name), published=published))
    fetch(specs[0], home, progress=False, archives=scratch)
    archive.unlink()  # the second member must come from the archive already downloaded
    fetch(specs[1], home, progress=False, archives=scratch)
    for spec, data in zip(specs, members.values(), strict=True):
        assert (home / spec.filename).read_bytes() == data and inspect(spec, home).ok
        assert read_record(spec, home) is not None
    wrong = user_supplied("wrong", ZipMemberSource(archive.as_uri(), "w600k_r50.onnx"), published=Checksum("0" * 64, 1))
    with pytest.raises(FetchError, match="could not fetch wrong"):
        fetch(wrong, home, progress=False)


def test_fetch_leaves_a_deliberately_added_file_alone(tmp_path: Path) -> None:
    path, digest = onnx_fakes.write(tmp_path / "incoming", "mine.onnx", onnx_fakes.inswapper())
    nowhere = ZipMemberSource((tmp_path / "nowhere.zip").as_uri(), "inswapper_128.onnx")
    spec = user_supplied("custom", nowhere, published=Checksum("1" * 64, 5))
    home = tmp_path / "home"
    add(spec, path, home, sha256=digest)
    assert fetch(spec, home, progress=False) == home / spec.filename  # verified against its record: no download
    with pytest.raises(FetchError, match="nowhere.zip"):
        fetch(spec, home, progress=False, sha256="1" * 64)  # another checksum asked for: it tries
    assert (home / spec.filename).read_bytes() == path.read_bytes(), "a failed fetch keeps the file"
