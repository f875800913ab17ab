"""The model registry: the one piece of module-level state, keyed by manifest name.

`Registry.load(names)` builds each model from its file in MODEL_HOME through the session factory.
In preload mode it runs once in the gunicorn master and the workers inherit the loaded sessions
copy-on-write; with GPU providers or in lazy mode it runs in each worker. An unknown name is an
error, never `None`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import onnxruntime as ort

from . import optimised, precision, quantised
from .base import Model
from .centerface import CenterFace
from .checksums import expected_checksum, install_command
from .insight import ArcFace, GenderAge, Landmark106, Scrfd, Swapper
from .landmarks68 import Landmarks68
from .manifest import MANIFEST, ModelSpec, Role, get_spec
from .portrait import MattingModel, PortraitMatte
from .segmentation import Segmenter
from .sessions import CPU, Lanes, Providers, active_provider, create_session

log = logging.getLogger(__name__)

FaceDetector = Scrfd | CenterFace
M = TypeVar("M", bound=Model)

#: The one family table: a manifest entry's `family` -> the class that builds it (app/models/base.py).
FAMILIES: dict[str, type[Model]] = {
    "rembg": Segmenter,
    "modnet": PortraitMatte,
    "centerface": CenterFace,
    "scrfd": Scrfd,
    "arcface": ArcFace,
    "genderage": GenderAge,
    "landmark_106": Landmark106,
    "inswapper": Swapper,
    "landmarks68": Landmarks68,
}


class ModelFileError(RuntimeError):
    """A model file is missing or unusable; the message names the file and the command that fixes it."""


class ModelNotLoaded(LookupError):
    """The name is known but this process has not loaded it (not in MODELS, or still loading)."""


def fetch_command(name: str) -> str:
    return f"python -m app.models fetch {name}"


@dataclass(frozen=True)
class LoadedModel:
    spec: ModelSpec
    model: Model
    provider: str
    load_seconds: float
    variant: str = quantised.FP32  # the weights it runs: "fp32" or "int8" (MODEL_PRECISION, app/models/precision.py)
    variant_reason: str = ""
    file: str = ""  # the file loaded, relative to MODEL_HOME

    @property
    def name(self) -> str:
        return self.spec.name

    def describe(self) -> dict[str, object]:
        described: dict[str, object] = {
            "role": self.spec.role.value,
            "provider": self.provider,
            "load_seconds": round(self.load_seconds, 4),
            "variant": self.variant,
            "variant_reason": self.variant_reason,
        }
        if isinstance(self.model, PortraitMatte):
            described["warm_shapes"] = self.model.warm_shapes()  # each (lane, input shape) run in this worker
        return described


def _build(
    spec: ModelSpec, path: Path, providers: Providers, optimised_home: Path | None, *, variant: str = quantised.FP32
) -> tuple[Model, str]:
    """The model of `spec`'s family from `path` (the file of `variant`), every session from our
    factory; and the provider its (first) session runs on. On a CPU the sessions load the model's
    pre-optimised files (written first where missing, app/models/optimised.py), so their weights are
    shared pages."""
    family = FAMILIES.get(spec.family)
    if family is None:
        raise ValueError(f"model {spec.name}: no class for family {spec.family!r}")
    sessions: list[ort.InferenceSession | Lanes] = []
    on_cpu = providers.names_for(spec.name)[0] == CPU

    def session_factory(model: Path | bytes) -> ort.InferenceSession | Lanes:
        graph = (optimised.ensure(spec, path.parent, optimised_home, variant=variant)
                 if on_cpu and optimised_home is not None else None)
        if graph is not None:
            session = create_session(graph, providers=providers, label=spec.name, preoptimised=True,
                                     prepack=variant == quantised.INT8)
        else:
            session = create_session(model, providers=providers, label=spec.name)
        sessions.append(session)
        return session

    model = family.from_file(path, session_factory=session_factory)
    if not sessions:
        raise ValueError(f"model {spec.name}: {family.__name__}.from_file made no session")
    return model, active_provider(sessions[0])


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:300]}" if text else type(exc).__name__


def _reinstall_command(spec: ModelSpec) -> str:
    command = install_command(spec)
    return f"{command} --force" if command.startswith("python -m app.models fetch") else command


def check_file(spec: ModelSpec, model_home: Path) -> Path:
    """The model's path, after a cheap size check (the full sha256 check is the fetch command's).

    The size is the pinned one, else the one recorded when the file was installed, else the
    published one; a file with none (copied in by hand) loads with a warning.
    """
    path = model_home / spec.filename
    if not path.is_file():
        raise ModelFileError(f"model file {path} is missing; run: {install_command(spec)}")
    size = path.stat().st_size
    expected = expected_checksum(spec, model_home)
    if expected is None:
        log.warning(
            "model %s: %s has no checksum on record; register it: python -m app.models add %s FILE --sha256 HEX",
            spec.name, path, spec.name,
        )
    elif size != expected.checksum.size:
        hint = "" if expected.origin == "manifest" else (
            f" (if it is a different file on purpose: python -m app.models add {spec.name} FILE --sha256 HEX)"
        )
        raise ModelFileError(
            f"model file {path} is {size:,} bytes, expected {expected.checksum.size:,} ({expected.origin}; "
            f"partial, corrupt or another file); run: {install_command(spec)}{hint}"
        )
    return path


class Registry:
    def __init__(self) -> None:
        self._models: dict[str, LoadedModel] = {}
        self._lock = threading.Lock()

    def load(
        self,
        names: Iterable[str],
        *,
        model_home: Path,
        providers: Providers,
        optimised_home: Path | None = None,
        on_loaded: Callable[[LoadedModel], None] | None = None,
        model_precision: str = precision.AUTO,
    ) -> list[LoadedModel]:
        """Load each named model that is not loaded yet; returns the ones loaded by this call.
        With `optimised_home`, CPU sessions load from pre-optimised files (app/models/optimised.py).
        `model_precision` (MODEL_PRECISION): the variant of models that have an int8 one
        (app/models/precision.py: auto, int8 or fp32).

        Raises KeyError for a name the manifest does not know and ModelFileError for a missing or
        corrupt file, before anything is half-registered.
        """
        specs = [get_spec(name) for name in names]
        loaded: list[LoadedModel] = []
        with self._lock:
            for spec in specs:
                if spec.name in self._models:
                    continue
                started = time.perf_counter()
                path, choice = self._file_to_load(spec, model_home, providers, optimised_home, model_precision)
                try:
                    model, provider = _build(spec, path, providers, optimised_home, variant=choice.variant)
                except Exception as exc:  # onnxruntime raises its own hierarchy for unreadable files
                    raise ModelFileError(
                        f"model file {path} could not be loaded ({_first_line(exc)}); run: {_reinstall_command(spec)}"
                    ) from exc
                file = str(path.relative_to(model_home)) if path.is_relative_to(model_home) else str(path)
                entry = LoadedModel(spec, model, provider, time.perf_counter() - started, variant=choice.variant,
                                    variant_reason=choice.reason, file=file)
                self._models[spec.name] = entry
                loaded.append(entry)
                if on_loaded is not None:
                    on_loaded(entry)
        return loaded

    @staticmethod
    def _file_to_load(
        spec: ModelSpec, model_home: Path, providers: Providers, optimised_home: Path | None, setting: str
    ) -> tuple[Path, precision.Choice]:
        """The file of the variant this process runs (app/models/precision.py), after the checks."""
        if not spec.int8:
            return check_file(spec, model_home), precision.Choice(quantised.FP32, "the only variant")
        fp32_installed = (model_home / spec.filename).is_file()  # an image may ship the int8 file alone
        if fp32_installed:
            check_file(spec, model_home)  # a present file of the wrong size fails loudly, whatever runs
        try:
            resolved = precision.resolve(spec, setting=setting, model_home=model_home, optimised_home=optimised_home,
                                         providers=providers, fp32_installed=fp32_installed)
        except precision.PrecisionError as exc:
            raise ModelFileError(str(exc)) from None
        return resolved.path, resolved.choice

    def get(self, name: str) -> LoadedModel:
        entry = self._models.get(name)
        if entry is not None:
            return entry
        if name not in MANIFEST:
            raise KeyError(f"unknown model {name!r}")
        raise ModelNotLoaded(f"model {name!r} is not loaded")

    def find(self, kind: type[M]) -> M | None:
        """The first loaded model (in MODELS order) that is a `kind`, or None."""
        found = self.find_named(kind)
        return None if found is None else found[1]

    def find_named(self, kind: type[M]) -> tuple[str, M] | None:
        """(name, model) of the first loaded model (in MODELS order) that is a `kind`, or None."""
        for name, entry in self._models.items():
            if isinstance(entry.model, kind):
                return name, entry.model
        return None

    def face_detector(self) -> tuple[str, FaceDetector] | None:
        """(name, detector) for face analysis: SCRFD when loaded, else CenterFace; None without either."""
        return self.find_named(Scrfd) or self.find_named(CenterFace)

    def landmarker(self) -> Landmarks68 | None:
        """The 68-point landmark net when loaded (the expression checks), else None."""
        found = self.find_named(Landmarks68)
        return None if found is None else found[1]

    def segmenter(self, name: str) -> MattingModel:
        model = self.get(name).model
        if not isinstance(model, MattingModel):
            raise ModelNotLoaded(f"model {name!r} is not a segmentation model")
        return model

    def portrait_mattes(self, portrait: str, general: str) -> tuple[MattingModel, MattingModel | None]:
        """(the matte of photos with a face, the one that stands in where it misses the face): the
        `portrait` model, and the `general` one when it differs and is loaded, else None."""
        fallback = self.segmenter(general) if general != portrait and general in self else None
        return self.segmenter(portrait), fallback

    def names(self, role: Role | None = None) -> list[str]:
        return [name for name, entry in self._models.items() if role is None or entry.spec.role == role]

    def loaded(self) -> list[LoadedModel]:
        return list(self._models.values())

    def __contains__(self, name: object) -> bool:
        return name in self._models

    def clear(self) -> None:
        with self._lock:
            self._models.clear()


REGISTRY = Registry()
