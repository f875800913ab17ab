"""ID photos: GET /api/v1/specs, POST /api/v1/idphoto, POST /api/v1/idphoto/sheet."""

from __future__ import annotations

import base64
import math
from collections.abc import Callable

from flask import Blueprint, Response, jsonify

from ..errors import ApiError, ModelUnavailable, PhotoRejected, bad_request
from ..pipelines.idphoto import IdPhoto, IdPhotoOptions, make_id_photo, print_sheet
from ..imageio import decode, encode
from ..models.landmarks68 import Landmarks68
from ..models.segmentation import AlphaMatting, matting_budget
from ..imaging.sheet import get_paper
from ..service import Service, current_service
from ..specs import MAX_DPI, MIN_DPI, SPECS, PhotoSpec, custom_spec, get_spec, parse_background
from ..timings import Timings
from ..warmup import WarmupRequest
from . import forms

bp = Blueprint("idphoto", __name__, url_prefix="/api/v1")

BACKGROUND_STYLES = ("solid", "gradient")


def warmup_requests(service: Service) -> list[WarmupRequest]:
    registry = service.registry
    detector = registry.face_detector()
    matte = service.settings.portrait_matte  # it holds the astronaut's face: the fallback does not run
    if detector is None or matte not in registry:
        return []
    landmarker = registry.find_named(Landmarks68)  # the ID photo runs it too: no warm-up of its own
    models = (detector[0], matte, *(() if landmarker is None else (landmarker[0],)))
    # a replaced background: the heavier path (the foreground estimate under soft edges); a kept one
    # runs a subset of it plus the background measures, whose one first-call cost (OpenCV's CIELAB
    # tables) the master pays before the fork (warmup.prime_process)
    return [WarmupRequest("/api/v1/idphoto/sheet", {"spec": "icao", "paper": "4x6", "background": "white"}, models)]


@bp.get("/specs")
def specs() -> Response:
    return jsonify({"specs": [spec.to_dict() for spec in SPECS.values()]})


def _number(name: str) -> float | None:
    value = forms.text(name)
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        raise bad_request("invalid_field", f"{name} must be a number, not {value!r}.") from None
    if not math.isfinite(number):
        raise bad_request("invalid_field", f"{name} must be a finite number, not {value!r}.")
    return number


def _spec_from_form() -> PhotoSpec:
    spec_id = forms.text("spec")
    if spec_id is not None:
        try:
            return get_spec(spec_id)
        except KeyError:
            raise bad_request("unknown_spec", f"Unknown spec; GET /api/v1/specs lists them ({', '.join(list(SPECS)[:6])}, ...).") from None
    sizes = {name: _number(name) for name in ("width_mm", "height_mm", "width_px", "height_px")}
    if all(value is None for value in sizes.values()):
        raise bad_request("missing_spec", "Send spec (see GET /api/v1/specs) or a custom size (width_mm/height_mm or width_px/height_px).")
    head = forms.text("head_ratio") or "0.6-0.7"
    try:
        low, high = (float(part) for part in head.replace(",", "-").split("-", 1))
        return custom_spec(
            width_mm=sizes["width_mm"],
            height_mm=sizes["height_mm"],
            width_px=None if sizes["width_px"] is None else int(sizes["width_px"]),
            height_px=None if sizes["height_px"] is None else int(sizes["height_px"]),
            dpi=forms.integer("dpi", 300, low=MIN_DPI, high=MAX_DPI),
            head_ratio=(low, high),
        )
    except ValueError as exc:
        raise bad_request("invalid_size", f"Custom size: {exc}") from None


def _options(spec: PhotoSpec) -> IdPhotoOptions:
    background_value = forms.text("background") or spec.default_background
    try:
        background = parse_background(background_value)
    except ValueError as exc:
        raise bad_request("invalid_background", str(exc)) from None
    style = (forms.text("background_style") or "solid").lower()
    if style not in BACKGROUND_STYLES:
        raise bad_request("invalid_field", f"background_style must be one of {', '.join(BACKGROUND_STYLES)}.")
    fmt = (forms.text("format") or "jpeg").lower()
    fmt = "jpeg" if fmt == "jpg" else fmt
    if fmt not in ("jpeg", "png"):
        raise ApiError(400, "invalid_format", "format must be jpeg or png for ID photos.")
    face = (forms.text("face") or "single").lower()
    if face not in ("single", "largest"):
        raise bad_request("invalid_field", "face must be single or largest.")
    max_kb_text = forms.text("max_kb")
    max_kb = None if max_kb_text is None else forms.integer("max_kb", 0, low=1, high=100_000)
    return IdPhotoOptions(
        spec=spec,
        background=background,
        gradient=style == "gradient",
        fmt=fmt,  # type: ignore[arg-type]
        dpi=forms.integer("dpi", spec.dpi, low=MIN_DPI, high=MAX_DPI) if forms.text("dpi") else None,
        max_kb=max_kb,
        face=face,  # type: ignore[arg-type]
        alpha_matting=AlphaMatting(max_unknown_px=matting_budget(current_service().settings.timeout,
                                                                  configured=current_service().settings.max_matting_px))
        if forms.boolean("alpha_matting") else None,
    )


def _make(timings: Timings, answer: Callable[[IdPhoto, IdPhotoOptions], Response]) -> Response:
    """Read the form, make the ID photo and `answer` it, all of the pixel work (decode, pipeline,
    sheet, encoding, base64) inside the request's inference slot: one photo's pixels per worker at a
    time, and the watchdog times it all."""
    service = current_service()
    settings = service.settings
    data = forms.image_bytes()
    spec = _spec_from_form()
    options = _options(spec)
    service.require_ready()
    found = service.registry.face_detector()
    if found is None:
        raise ModelUnavailable("model_unavailable", "No face detector is loaded; add centerface to MODELS.")
    # the portrait matte, unless the client asks for alpha matting (which refines the general model's mask)
    matte_name = settings.segmentation_model if options.alpha_matting is not None else settings.portrait_matte
    if matte_name not in service.registry:
        raise ModelUnavailable("model_unavailable", f"No segmentation model is loaded; add {matte_name} to MODELS.")
    detector_name, detector = found
    # where the portrait matte misses the face, the general one (u2net) mattes it
    segmenter, fallback = service.registry.portrait_mattes(matte_name, settings.segmentation_model)
    timings.models.update(detect=detector_name, align=detector_name, segment=matte_name)
    with service.inference(timings):
        with timings.stage("decode"):
            image = decode(data, max_pixels=settings.max_image_pixels)
        photo = make_id_photo(
            image.rgb,
            detector=detector,
            segmenter=segmenter,
            options=options,
            max_side=settings.working_max_side,
            timings=timings,
            landmarker=service.registry.landmarker(),
            fallback=fallback,
        )
        timings.models["segment"] = photo.record.matte.matted_by
        del image
        return answer(photo, options)


def _file_stem(spec: PhotoSpec) -> str:
    return f"{spec.id}-{spec.width_px}x{spec.height_px}"


@bp.post("/idphoto")
def idphoto() -> Response:
    timings = Timings()

    def answer(photo: IdPhoto, options: IdPhotoOptions) -> Response:
        spec, record = options.spec, photo.record  # the record: what was done, step by step
        return forms.image_response(
            record.encoded.data,
            options.fmt,
            timings=timings,
            filename=f"{_file_stem(spec)}.{'jpg' if options.fmt == 'jpeg' else 'png'}",
            extra={
                "spec": spec.to_dict(),
                "width": spec.width_px,
                "height": spec.height_px,
                "dpi": options.output_dpi,
                "jpeg_quality": record.encoded.jpeg_quality,
                "face": {**record.face.face.to_dict(), "roll_degrees": round(record.framed.level.roll, 2),
                         "faces_found": len(record.face.people)},
                "compliance": photo.verdict.to_dict(),
                "quality": photo.verdict.capture,
                "models": dict(timings.models),  # the model of each stage (segment: the matte)
            },
        )

    return _make(timings, answer)


@bp.post("/idphoto/sheet")
def idphoto_sheet() -> Response:
    timings = Timings()
    try:
        paper = get_paper(forms.text("paper") or "4x6")
    except ValueError as exc:
        raise bad_request("invalid_paper", str(exc)) from None
    copies_text = forms.text("copies")
    copies = None if copies_text is None else forms.integer("copies", 1, low=1, high=1000)
    sheet_dpi = forms.integer("sheet_dpi", 300, low=150, high=600)

    def answer(photo: IdPhoto, options: IdPhotoOptions) -> Response:
        spec, fmt = options.spec, options.fmt
        with timings.stage("sheet"):
            try:
                layout, sheet, caption = print_sheet(photo, spec, paper, copies=copies, dpi=sheet_dpi)
            except ValueError as exc:
                raise PhotoRejected("sheet_does_not_fit", str(exc)) from None
            body = encode(sheet, fmt, dpi=sheet_dpi, jpeg_quality=95)
            del sheet
        name = f"{_file_stem(spec)}-sheet-{paper.id}-{len(layout.positions)}x.{'jpg' if fmt == 'jpeg' else 'png'}"
        extra = {
            "spec": spec.to_dict(),
            "paper": {"id": paper.id, "name": paper.name, "landscape": layout.landscape},
            "copies": len(layout.positions),
            "capacity": layout.capacity,
            "sheet_px": list(layout.sheet_px),
            "dpi": sheet_dpi,
            "compliance": photo.report(),
            "caption": caption,  # the line printed under the copies
            "quality": photo.quality,
            "photo": base64.b64encode(photo.data).decode("ascii") if forms.wants_json("image/jpeg") else None,
        }
        return forms.image_response(body, fmt, timings=timings, filename=name, extra=extra)

    return _make(timings, answer)
