"""The service's portrait models loaded in the test process, and the corpus's portraits matted as
the ID photo mattes them (MODNet, u2net where it misses the face; the chosen person kept, the others
cleared): shared by the tests of the lines that read a sitter's matte. Loaded and matted once per
test process, whichever test file asks first."""

from __future__ import annotations

import functools
import glob
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from tests.support import corpus


@functools.cache
def portrait_models(model_home: Path) -> dict[str, object]:
    """{"detector", "segmenter" (MODNet), "fallback" (u2net), "max_side"}: the service's own choice
    of models and working size, from MODEL_HOME (MODNet fetched where it is missing)."""
    from app.config import Settings
    from app.models.fetch import fetch, inspect
    from app.models.manifest import get_spec
    from app.models.registry import Registry
    from app.models.sessions import resolve_providers

    if not inspect(get_spec("modnet"), model_home, verify_hash=False).ok:
        fetch(get_spec("modnet"), model_home, progress=False)
    settings = Settings.from_env()
    registry = Registry()
    registry.load(["modnet", "u2net", "centerface"], model_home=model_home, providers=resolve_providers(
        settings.ort_providers, cpu_arena=settings.ort_cpu_arena, mem_pattern=settings.ort_mem_pattern))
    portrait, fallback = registry.portrait_mattes("modnet", "u2net")
    return {"detector": registry.face_detector()[1], "segmenter": portrait, "fallback": fallback,
            "max_side": settings.working_max_side}


@dataclass(frozen=True)
class Sitter:
    """One corpus portrait as the ID photo sees it: its pixels ((H, W, 3) uint8 RGB), the chosen
    person's matte ((H, W) uint8, the others cleared), that person's face, and the others' boxes."""

    portrait: corpus.Portrait
    rgb: np.ndarray
    alpha: np.ndarray
    face: object
    others: list


@functools.cache
def corpus_sitters(model_home: Path) -> tuple[Sitter, ...]:
    """Every frontal or raised-hand portrait of the corpus (labels "photo" and "hands"), matted once."""
    from app.imaging.people import keep_person
    from app.pipelines.matte_choice import matte_holding_face
    from app.pipelines.face_reading import choose_face, people, refine, same_face
    from app.timings import Timings

    corpus.fetch(None)  # fails, never skips, where the archives cannot be fetched
    models = portrait_models(model_home)
    detector = models["detector"]
    sitters = []
    for portrait in corpus.PORTRAITS:
        if portrait.expect not in ("photo", "hands"):
            continue
        path = next(iter(glob.glob(str(corpus.default_dir() / f"{portrait.name}.*"))))
        with Image.open(path) as image:
            rgb = np.asarray(image.convert("RGB"))
        faces = detector.detect(rgb)  # type: ignore[attr-defined]
        face = refine(detector, rgb, choose_face(faces, "largest"))
        matte, _ = matte_holding_face(rgb, tuple(face.box), portrait=models["segmenter"], fallback=models["fallback"],
                                      max_side=models["max_side"], alpha_matting=None, timings=Timings(),
                                      edge_colours=False)
        others = [other.box for other in people(faces) if not same_face(other, face)]
        sitters.append(Sitter(portrait, rgb, keep_person(matte.alpha, face.box, others, rgb=rgb), face, others))
    return tuple(sitters)
