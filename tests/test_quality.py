"""Capture quality (app.imaging.quality) on real portraits and degraded copies of them.

The faces come from the real detector (CenterFace): scikit-image's astronaut and five of the six
faces of insightface's group photo t1.jpg. Each degradation must fail exactly its own component
while the clean photo passes them all. The values are printed (pytest -s) for the record.
"""

from __future__ import annotations

import importlib.util
import io
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from app.imaging import compliance, quality
from app.models.faces import Face
from app.models.registry import Registry
from tests.support import corpus, degrade
from tests.support.judge import capture_outcomes, corpus_portraits


def t1_path() -> Path | None:
    """insightface's group photo (requirements-bench.txt installs the package for it), found without importing it."""
    spec = importlib.util.find_spec("insightface")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "data/images/t1.jpg"
    return path if path.is_file() else None


def blur(rgb: np.ndarray, face: Face) -> np.ndarray:
    return degrade.blur(rgb, face)


def darken(rgb: np.ndarray, face: Face) -> np.ndarray:
    return degrade.gamma_light(rgb, 2.0**-4)  # four stops under, noiseless


def crush_shadows(rgb: np.ndarray, face: Face) -> np.ndarray:
    """Everything darker than luminance 150 sinks to a tenth: hard shadows with no detail in them."""
    return np.where((quality.luminance(rgb) < 150)[..., None], rgb // 10, rgb).astype(np.uint8)


def overexpose(rgb: np.ndarray, face: Face) -> np.ndarray:
    return degrade.gamma_light(rgb, 2.0)  # one stop over


def flatten_contrast(rgb: np.ndarray, face: Face) -> np.ndarray:
    pixels = rgb.astype(np.float32)
    mean = pixels.mean(axis=(0, 1))
    return np.clip(mean + 0.1 * (pixels - mean), 0, 255).astype(np.uint8)


def side_light(rgb: np.ndarray, face: Face) -> np.ndarray:
    return degrade.side_light(rgb, face)


def jpeg10(rgb: np.ndarray, face: Face) -> np.ndarray:
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, "JPEG", quality=10)
    return np.asarray(Image.open(buffer).convert("RGB"))


DEGRADATIONS: dict[str, tuple[Callable[[np.ndarray, Face], np.ndarray], str]] = {
    "blur": (blur, "sharpness"),
    "crushed shadows": (crush_shadows, "under_exposure"),
    "overexposed": (overexpose, "over_exposure"),
    "darkened": (darken, "luminance"),
    "flat": (flatten_contrast, "dynamic_range"),
    "harsh side light": (side_light, "illumination_uniformity"),
    "jpeg quality 10": (jpeg10, "compression"),
}
MEASURED = ["sharpness", "under_exposure", "over_exposure", "luminance", "dynamic_range", "illumination_uniformity", "compression"]


@pytest.fixture(scope="module")
def portraits(astronaut: np.ndarray, small_registry: Registry) -> list[tuple[str, np.ndarray, Face]]:
    found = small_registry.face_detector()
    assert found is not None
    detector = found[1]
    (face,) = detector.detect(astronaut)
    path = t1_path()
    if path is None:
        print("insightface's t1.jpg is not installed: the astronaut alone")
        return [("astronaut", astronaut, face)]
    group = np.asarray(Image.open(path).convert("RGB"))
    faces = sorted(detector.detect(group), key=lambda f: -f.area)
    assert len(faces) == 6
    # face 5 (the smallest) is left out: it is lit from one side already (uniformity 0.80), so crushing
    # its shadows also darkens one half below the uniformity threshold (two components fail, not one).
    return [("astronaut", astronaut, face)] + [(f"t1 face {i}", group, faces[i]) for i in range(5)]


def values(report: list[dict[str, object]]) -> dict[str, dict[str, object]]:
    return {item["name"]: item for item in report}  # type: ignore[misc]


def row(label: str, report: dict[str, dict[str, object]]) -> str:
    cells = [f"{report[name]['value']:>8.3f}{' ' if report[name]['passed'] else '!'}" for name in MEASURED]
    return f"{label:34}" + "".join(cells)


def test_each_degradation_fails_exactly_its_component(portraits: list[tuple[str, np.ndarray, Face]]) -> None:
    print("\n" + " " * 34 + "".join(f"{name[:8]:>9}" for name in MEASURED) + "   (! = fails)")
    for label, rgb, face in portraits:
        clean = values(quality.assess(rgb, box=face.box, landmarks=face.landmarks))
        print(row(f"{label} clean", clean))
        assert all(clean[name]["passed"] is True for name in MEASURED), (label, clean)
        for degradation, (make, component) in DEGRADATIONS.items():
            report = values(quality.assess(make(rgb, face), box=face.box, landmarks=face.landmarks))
            print(row(f"{label} {degradation}", report))
            failed = [name for name in MEASURED if report[name]["passed"] is False]
            assert failed == [component], (label, degradation, failed)


def test_codec_noise_does_not_read_as_sharpness(portraits: list[tuple[str, np.ndarray, Face]]) -> None:
    """A blurred photo saved as a phone would (HEIC, JPEG 85) stays blurred; a sharp one stays sharp."""
    import pillow_heif

    def through(rgb: np.ndarray, writer: str) -> np.ndarray:
        buffer = io.BytesIO()
        if writer == "HEIF":
            pillow_heif.from_pillow(Image.fromarray(rgb)).save(buffer, quality=90)
            return np.asarray(pillow_heif.open_heif(io.BytesIO(buffer.getvalue())).to_pillow().convert("RGB"))
        Image.fromarray(rgb).save(buffer, writer, quality=85)
        return np.asarray(Image.open(buffer).convert("RGB"))

    for label, whole, found in portraits:
        # only the face's surroundings go through the encoders (x265 is slow on a whole group photo)
        x0, y0 = (max(0, int(v - 1.5 * found.width)) // 8 * 8 for v in found.box[:2])
        x1, y1 = (int(v + 1.5 * found.width) for v in found.box[2:])
        rgb = np.ascontiguousarray(whole[y0:y1, x0:x1])
        offset = np.array([x0, y0], np.float32)
        face = Face(box=(found.box[0] - x0, found.box[1] - y0, found.box[2] - x0, found.box[3] - y0), score=found.score,
                    landmarks=found.landmarks - offset)
        for writer in ("HEIF", "JPEG"):
            sharp = values(quality.assess(through(rgb, writer), box=face.box, landmarks=face.landmarks))["sharpness"]
            soft = values(quality.assess(through(blur(rgb, face), writer), box=face.box, landmarks=face.landmarks))["sharpness"]
            print(f"{label} {writer}: sharp {sharp['value']:.3f}, blurred {soft['value']:.3f}")
            assert sharp["passed"] is True and soft["passed"] is False and soft["value"] < 0.5, (label, writer)


def test_report_shape(astronaut: np.ndarray, portraits: list[tuple[str, np.ndarray, Face]]) -> None:
    _, rgb, face = portraits[0]
    report = quality.assess(rgb, box=face.box, landmarks=face.landmarks)
    assert [item["name"] for item in report] == MEASURED + ["eyes_open_mouth_closed"]
    for item in report[:-1]:
        assert isinstance(item["value"], float) and item["passed"] in (True, False)
        threshold = item["threshold"]
        assert ("min" in threshold or "max" in threshold) and len(threshold["reason"]) > 40
        assert item["advice"].endswith(".") and item["label"]
    last = report[-1]
    assert last["passed"] is None and last["value"] is None
    assert last["advice"] == "Eyes open and mouth closed are judged with the rules above, where the spec asks for them."


def test_measures_do_not_depend_on_the_photo_size(portraits: list[tuple[str, np.ndarray, Face]]) -> None:
    """The face is aligned to a fixed eye distance first: the same photo at twice the size measures alike
    (except blockiness, which is about the file's own 8x8 grid)."""
    _, rgb, face = portraits[0]
    big = cv2.resize(rgb, (rgb.shape[1] * 2, rgb.shape[0] * 2), interpolation=cv2.INTER_CUBIC)
    small = values(quality.assess(rgb, box=face.box, landmarks=face.landmarks))
    large = values(quality.assess(big, box=tuple(2 * v for v in face.box), landmarks=face.landmarks * 2))  # type: ignore[arg-type]
    for name in ("under_exposure", "over_exposure", "luminance", "dynamic_range", "illumination_uniformity"):
        assert abs(small[name]["value"] - large[name]["value"]) < 0.05 * max(1.0, abs(small[name]["value"])), name
    assert large["sharpness"]["passed"] and 0.5 < large["sharpness"]["value"] / small["sharpness"]["value"] < 2.0


def test_a_face_off_the_photo_is_not_measured_and_does_not_raise(astronaut: np.ndarray) -> None:
    landmarks = np.array([[-900, -900], [-860, -900], [-880, -880], [-895, -860], [-865, -860]], np.float32)
    report = quality.assess(astronaut, box=(-920, -930, -840, -840), landmarks=landmarks)
    assert [item["name"] for item in report] == ["capture_quality", "eyes_open_mouth_closed"]
    assert all(item["passed"] is None for item in report)
    same_point = np.tile(np.array([[200.0, 100.0]], np.float32), (5, 1))
    assert values(quality.assess(astronaut, box=(180, 58, 271, 176), landmarks=same_point))["capture_quality"]["passed"] is None


def test_blockiness_follows_the_jpeg_grid(portraits: list[tuple[str, np.ndarray, Face]]) -> None:
    _, rgb, face = portraits[0]
    assert quality.blockiness(quality.luminance(rgb)) < 1.1
    squeezed = jpeg10(rgb, face)
    on_grid = values(quality.assess(squeezed, box=face.box, landmarks=face.landmarks))["compression"]["value"]
    assert on_grid > 1.8
    off_grid = quality.blockiness(quality.luminance(squeezed)[3:, 5:])
    assert off_grid < 1.3 < on_grid  # off the grid, the block edges are not where we look


# -- the capture lines of the compliance report (issue 33) ------------------------------------------


def components(**values: float) -> list[dict[str, object]]:
    """quality.assess's report with these values in place of a real face's (all passing by default)."""
    measured = {"sharpness": 5.0, "under_exposure": 0.0, "over_exposure": 0.0, "luminance": 0.55,
                "dynamic_range": 7.0, "illumination_uniformity": 0.9, "compression": 1.0} | values
    limits = {"sharpness": (quality.MIN_SHARPNESS, None), "under_exposure": (None, quality.MAX_UNDER_EXPOSED),
              "over_exposure": (None, quality.MAX_OVER_EXPOSED), "luminance": quality.LUMINANCE_BAND,
              "dynamic_range": (quality.MIN_DYNAMIC_RANGE_BITS, None),
              "illumination_uniformity": (quality.MIN_ILLUMINATION_RATIO, None), "compression": (None, quality.MAX_BLOCKINESS)}
    return [quality.Component(name, name, value, *limits[name], "reason", f"advice on {name}").to_dict()
            for name, value in measured.items()]


def failed(report: list[dict[str, object]]) -> set[str]:
    return {line.name for line in compliance.capture_checks(report) if line.passed is False}


def test_capture_lines_fail_on_their_own_fault_and_quote_their_source() -> None:
    assert failed(components()) == set()
    assert failed(components(sharpness=0.3)) == {"capture_sharpness"}
    assert failed(components(illumination_uniformity=0.5)) == {"capture_lighting"}
    assert failed(components(over_exposure=0.2)) == {"capture_exposure"}
    for line in compliance.capture_checks(components(sharpness=0.3)):
        assert line.kind == "quality" and line.judged and "http" in line.allowed
    (blurred,) = [line for line in compliance.capture_checks(components(sharpness=0.3)) if line.passed is False]
    assert blurred.advice == "advice on sharpness"


def test_a_dim_face_needs_crushed_shadows_so_a_well_lit_dark_skin_is_never_dim() -> None:
    # the labelled dim portrait: mean 0.254, 4.8 % black
    assert failed(components(luminance=0.254, under_exposure=0.048)) == {"capture_exposure"}
    # a dark skin in good light: as low a mean, but nothing crushed to black
    assert failed(components(luminance=0.254, under_exposure=0.005)) == set()
    # bright enough, a few black pixels (hair, brows, an open mouth): not dim either
    assert failed(components(luminance=0.45, under_exposure=0.048)) == set()


def test_no_capture_lines_for_a_face_that_could_not_be_measured() -> None:
    assert compliance.capture_checks([dict(quality.NOT_MEASURED), dict(quality.NOT_CHECKED)]) == []


def test_capture_lines_against_the_corpus_labelled_by_eye(small_registry: Registry) -> None:
    """Every real portrait's capture lines against its label (dim, side-lit, good). Measured with
    `python -m bench.idphoto --capture`: 51 of 52 right; the miss is breakingbad-walter (a three-quarter
    view in hard light, labelled side-lit, whose two halves measure 0.91 of each other)."""
    corpus.fetch(None)  # fails, never skips, where the archives cannot be fetched
    detector = small_registry.face_detector()[1]
    rows = capture_outcomes(detector, corpus_portraits(corpus.default_dir()), copies=False)
    wrong = [(r["portrait"], r["label"], r["failed"]) for r in rows if not r["right"]]
    labels = {r["portrait"]: r["label"] for r in rows}
    assert labels["party-talking"] == "dim" and sum(label == "side-lit" for label in labels.values()) >= 4
    assert len(rows) >= 50 and len(wrong) <= 1, wrong
    assert all(r["label"] != "good" for r in rows if not r["right"]), wrong  # no good photo is refused
