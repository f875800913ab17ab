"""HivisionIDPhotos' routes, as its `deploy_api.py` and `docs/api_EN.md` define them.

A Hivision client changes its base URL and nothing else: the same form fields with the same
defaults, the same JSON (`status`, `image_base64` / `image_base64_standard` / `image_base64_hd`,
each a `data:image/png;base64,...` string as Hivision writes it, whatever the bytes). A photo that
cannot make what was asked (no face, several faces) is a 200 with `{"status": false, "error": ...}`,
as Hivision answers it; a request we cannot read is `{"status": false, "error": "..."}` with a
status that says what happened (400 bad field, 413 too large, 503 busy or loading). One field of
our own, `pilotlight`, says what was done: the model, the compliance report of an ID photo (of the
image it names), the `edits`, each one marked `asked: true` where the client asked for it, and
`not_applied`: each field read and not done (retouching, a model we do not ship), why, and what
ran instead. The fields are read in `hivision_fields.py`.

Each route is a step of our own pipelines: `/human_matting` is the cut-out (`background.make_cutout`),
`/idphoto` and `/idphoto_crop` the ID photo with its background kept (`make_id_photo`, the
transparency from its matte or from the upload's own alpha: the whole chain), `/add_background`
the compositing (`compose.flatten` over a painted backdrop), `/generate_layout_photos` Hivision's
six-inch sheet (`six_inch.render_six_inch`), `/set_kb` the encode step (`encode_sized`, through
which /add_background, /generate_layout_photos and /watermark encode too).
What differs from Hivision is in the README ("Coming from rembg or HivisionIDPhotos").
"""

from __future__ import annotations

import base64
import dataclasses

import numpy as np
from flask import Blueprint, Response, jsonify

from .. import observability
from ..errors import ModelUnavailable, NoFace, PhotoRejected, bad_request, describe
from ..imageio import decode, decode_rgba, encode, jpeg_of_exactly
from ..imaging.compose import cutout, flatten, radial_gradient, vertical_gradient
from ..imaging.framing import Framing
from ..imaging.resample import resize_alpha, resize_rgb
from ..imaging.six_inch import SHEET_PX, render_six_inch
from ..imaging.watermark import add_watermark, check_text
from ..pipelines.idphoto import IdPhoto, IdPhotoOptions, carry_onto, make_id_photo
from ..service import current_service
from ..specs import SPECS, EditPolicy, PhotoSpec, custom_spec
from ..timings import Timings
from . import forms
from .background import make_cutout
from .hivision_fields import (FACE_MODELS, MATTING_MODELS, NotApplied, dpi_field, hex_colour, input_bytes, kb_field,
                              model_choice, number, render_field, retouch_fields, skip, value)

bp = Blueprint("hivision", __name__)

PREFIX = "data:image/png;base64,"  # Hivision's bytes_2_base64 writes this before every image, PNG or JPEG
HEAD_FIELDS = {"head_measure_ratio": 0.2, "head_height_ratio": 0.45, "top_distance_max": 0.12, "top_distance_min": 0.1}
MATTE_RUNS = "our portrait matte (pilotlight.model names it)"
FACE_RUNS = "our face detector (CenterFace)"
WHITE = (255, 255, 255)


@bp.errorhandler(Exception)
def _error(exc: Exception) -> Response:
    """Hivision's error shape, `{"status": false, "error": message}`, with our code beside it. A
    photo that cannot make what was asked (no face, several, the head cut off) is a 200, as
    Hivision answers its FaceError: its clients read `status`, not the HTTP code."""
    failure = describe(exc, max_upload_mb=current_service().settings.max_upload_mb)
    response = jsonify({"status": False, "error": failure.message, "code": failure.code, **failure.details})
    response.status_code = 200 if isinstance(exc, NoFace | PhotoRejected) else failure.status
    response.headers.update(failure.headers)
    return response


# -- the answer -------------------------------------------------------------------------------------


def data_url(data: bytes) -> str:
    return PREFIX + base64.b64encode(data).decode("ascii")


def answer(images: dict[str, bytes], ours: dict[str, object], timings: Timings,
           not_applied: NotApplied) -> Response:
    """`{"status": true, <name>: data URL..., "pilotlight": ours}`; 413 over MAX_ANSWER_MB."""
    limit = current_service().settings.max_answer_bytes
    forms.refuse_larger_than(limit, sum(forms.base64_size(len(data)) for data in images.values()), fmt="png",
                             as_json=True)
    observability.observe_inference(timings)
    response = jsonify({"status": True, **{name: data_url(data) for name, data in images.items()},
                        "pilotlight": {**ours, "not_applied": not_applied, "timings": timings.as_dict()}})
    response.headers["Server-Timing"] = timings.header()
    return response


def encode_sized(pixels: np.ndarray, *, kb: int | None, dpi: int, not_applied: NotApplied,
                 zero_is_smallest: bool = False) -> tuple[bytes, dict[str, object]]:
    """(file, what the report says of it). No `kb` (or 0, as Hivision's `if kb:` reads it): PNG at
    `dpi`. `kb`: a JPEG of exactly `kb` x 1024 bytes, the highest quality that fits, grown to the
    size by a filler segment inside the JPEG (Hivision pads null bytes after the image's end). Out
    of reach: the smallest JPEG (quality 1), as Hivision answers, and `not_applied` says so. With
    `zero_is_smallest` (/set_kb), kb=0 is that smallest JPEG too, as Hivision's loop makes it."""
    if not kb and not (kb == 0 and zero_is_smallest):
        data = encode(pixels, "png", dpi=dpi)
        return data, {"content_type": "image/png", "bytes": len(data)}
    if kb == 0:
        data, quality = encode(pixels, "jpeg", dpi=dpi, jpeg_quality=1), 1
    else:
        data, quality, reached = jpeg_of_exactly(pixels, kb * 1024, dpi=dpi)
        if not reached:
            skip(not_applied, "kb", kb, f"the smallest JPEG of this image (quality 1) is {len(data) / 1024:.1f} KB",
                 instead="that smallest JPEG, as HivisionIDPhotos answers")
    return data, {"content_type": "image/jpeg", "bytes": len(data), "jpeg_quality": quality}


def asked(operation: str, **detail: object) -> dict[str, object]:
    """An edit the client asked for, as the report lists it."""
    return {"operation": operation, "asked": True, **detail}


# -- the routes -------------------------------------------------------------------------------------


@bp.post("/human_matting")
def human_matting() -> Response:
    service = current_service()
    timings = Timings()
    not_applied: NotApplied = []
    data = input_bytes()
    model_choice("human_matting_model", "hivision_modnet", MATTING_MODELS, MATTE_RUNS, not_applied)
    dpi = dpi_field()
    service.require_ready()
    with service.inference(timings):
        made = make_cutout(service, data, named=service.settings.portrait_matte, matting=None, only_mask=False,
                           background=None, timings=timings)
        with timings.stage("encode"):
            body = encode(made.pixels, "png", dpi=dpi)
        return answer({"image_base64": body}, {
            "model": made.model, "content_type": "image/png", "width": made.size[0], "height": made.size[1],
            "edits": [asked("remove_background")]}, timings, not_applied)


def spec_of_size(width: int, height: int, dpi: int) -> PhotoSpec | None:
    """The first of our specs (in the table's order) of exactly this pixel size at this dpi."""
    return next((spec for spec in SPECS.values() if (spec.width_px, spec.height_px, spec.dpi) == (width, height, dpi)),
                None)


def _id_spec(*, hd: bool, rgb_size: tuple[int, int]) -> tuple[PhotoSpec, PhotoSpec | None]:
    """The standard photo's spec (height, width px at dpi): ours where the size matches one of our
    specs (its rules then win over the client's framing), else a custom size; and, with `hd`, the
    same print size and rules at the upload's resolution (at least the standard's, at most 4000 px a side)."""
    height = int(number("height", 413, low=16, high=4000, whole=True))
    width = int(number("width", 295, low=16, high=4000, whole=True))
    dpi = dpi_field()
    try:
        standard = spec_of_size(width, height, dpi) or custom_spec(width_px=width, height_px=height, dpi=dpi)
        if not hd:
            return standard, None
        scale = max(1.0, min(rgb_size[0] / width, rgb_size[1] / height, 4000 / width, 4000 / height))
        return standard, dataclasses.replace(standard, width_px=round(width * scale), height_px=round(height * scale),
                                             min_px=None, max_px=None)
    except ValueError as exc:
        raise bad_request("invalid_size", str(exc)) from None


def _id_fields(not_applied: NotApplied) -> tuple[bool, bool, Framing]:
    """The /idphoto and /idphoto_crop fields: (hd, level the face, the framing). Hivision frames
    every photo by its head-ratio fields, its defaults where none are sent, and so do we, except
    where the size is one of our specs and its rule wins (`_framing_report` says which)."""
    model_choice("face_detect_model", "mtcnn", FACE_MODELS, FACE_RUNS, not_applied)
    hd = forms.boolean("hd", True)
    level = forms.boolean("face_align", False) or forms.boolean("face_alignment", False)
    ratios = {name: number(name, default, low=0.0, high=1.0) for name, default in HEAD_FIELDS.items()}
    if ratios["head_measure_ratio"] <= 0.0:
        raise bad_request("invalid_field", "head_measure_ratio must be above 0 (the face's share of the photo).")
    return hd, level, Framing(face_area=ratios["head_measure_ratio"], face_centre=ratios["head_height_ratio"],
                              top=(ratios["top_distance_min"], ratios["top_distance_max"]))


def _make(data: bytes, *, own_alpha: bool, timings: Timings, not_applied: NotApplied) -> Response:
    """The ID photo with its background kept, answered transparent (`own_alpha`: the upload's alpha,
    else the matte's); standard and, with hd, high-definition."""
    service = current_service()
    settings = service.settings
    hd, level, framing = _id_fields(not_applied)
    service.require_ready()
    found = service.registry.face_detector()
    if found is None:
        raise ModelUnavailable("model_unavailable", "No face detector is loaded; add centerface to MODELS.")
    segmenter, fallback = service.registry.portrait_mattes(settings.portrait_matte, settings.segmentation_model)
    with service.inference(timings):
        with timings.stage("decode"):
            rgba = decode_rgba(data, max_pixels=settings.max_image_pixels) if own_alpha else None
            rgb = decode(data, max_pixels=settings.max_image_pixels).rgb if rgba is None else flatten(
                rgba[:, :, :3], rgba[:, :, 3], WHITE)
        standard, high = _id_spec(hd=hd, rgb_size=(rgb.shape[1], rgb.shape[0]))
        spec = high or standard
        if not level:
            spec = dataclasses.replace(spec, edits={**spec.edits, "level": EditPolicy(
                "level", "silent", False, note="Not levelled: the client sent face_align=false (Hivision's default).")})
        options = IdPhotoOptions(spec=spec, background=None, fmt="png", dpi=standard.dpi, framing=framing)
        photo = make_id_photo(rgb, detector=found[1], segmenter=segmenter, options=options,
                              max_side=settings.working_max_side, timings=timings,
                              landmarker=service.registry.landmarker(), fallback=fallback)
        del rgb
        with timings.stage("encode"):
            alpha = carry_onto(photo, rgba[:, :, 3]) if rgba is not None else photo.alpha
            if alpha is None:  # make_id_photo always sets it; an opaque answer rather than none
                alpha = np.full(photo.pixels.shape[:2], 255, np.uint8)
            images = _id_images(photo, alpha, standard, hd=high is not None)
        return answer(images, {**_id_report(photo, standard, own_alpha=own_alpha),
                               "framing": _framing_report(photo, spec, not_applied)}, timings, not_applied)


RATIO_FIELDS = {"head_height": "head_measure_ratio",
                "crown_margin": "head_height_ratio, top_distance_max, top_distance_min"}


def _framing_report(photo: IdPhoto, spec: PhotoSpec, not_applied: NotApplied) -> dict[str, object]:
    """`pilotlight.framing`: the ratios applied, the spec the size matched (None: a custom size, the
    client's ratios apply whole), the head height and crown margin they asked (mm and share of the
    height), and each rule of the spec that won over them, why, and from which source; each field
    so overruled is in `not_applied` too."""
    framed = photo.record.framed.geometry.client
    if framed is None:  # make_id_photo always frames by the ratios given
        return {}
    height = spec.height_mm
    won = {}
    for rule, why in framed.won.items():
        band = getattr(spec.rules, rule)
        words = (f"{spec.id}'s {rule} rule ({band.low:g}-{band.high:g} mm) wins: the ratios ask "
                 f"{why['asked_mm']:g} mm" + (f", which breaks its {', '.join(why['breaks'])} rule"  # type: ignore[arg-type]
                                             if "breaks" in why else ", outside it"))
        won[rule] = {**why, "rule_of": spec.id, "source": band.source.title, "why": words}
        skip(not_applied, RATIO_FIELDS[rule], None, words, instead=f"{spec.id}'s {rule} rule")
    return {"asked": framed.framing.to_dict(), "spec": None if spec.id == "custom" else spec.id,
            "head_height": {"asked_mm": round(framed.aim.head_mm, 2), "asked_share": round(framed.aim.head_mm / height, 4)},
            "crown_margin": {"asked_mm": round(framed.aim.crown_mm, 2),
                             "asked_share": round(framed.aim.crown_mm / height, 4)},
            "won": won, "applied": [RATIO_FIELDS[rule] for rule in RATIO_FIELDS if rule not in won]}


def _id_images(photo: IdPhoto, alpha: np.ndarray, standard: PhotoSpec, *, hd: bool) -> dict[str, bytes]:
    size = (standard.width_px, standard.height_px)
    pixels = photo.pixels if not hd else resize_rgb(photo.pixels, size)
    small = alpha if not hd else resize_alpha(alpha, size)
    images = {"image_base64_standard": encode(cutout(pixels, small), "png", dpi=standard.dpi)}
    if hd:
        images["image_base64_hd"] = encode(cutout(photo.pixels, alpha), "png", dpi=standard.dpi)
    return images


def _id_report(photo: IdPhoto, standard: PhotoSpec, *, own_alpha: bool) -> dict[str, object]:
    # the transparency: the matte's, which removes the photographed background (an edit the client
    # asked for), or the upload's own alpha, carried through the crop (no new edit)
    transparent = [] if own_alpha else [asked("remove_background", source=photo.matted_by)]
    height, width = photo.pixels.shape[:2]
    sizes = {"image_base64_standard": {"width": standard.width_px, "height": standard.height_px}}
    if (width, height) != (standard.width_px, standard.height_px):
        sizes["image_base64_hd"] = {"width": width, "height": height}
    return {
        "model": photo.matted_by,
        "content_type": "image/png",
        "width": standard.width_px,
        "height": standard.height_px,
        "images": sizes,
        "edits": [*photo.edits, *transparent],
        "compliance": describe_standard(photo.report(), standard, measured_on=(width, height)),
    }


def describe_standard(report: dict[str, object], standard: PhotoSpec, *, measured_on: tuple[int, int]
                      ) -> dict[str, object]:
    """The compliance report of the standard photo (`image_base64_standard`, the size asked for).
    The photo is made and measured once, at the high-definition size where hd is on; the standard is
    the same crop scaled down, so every rule in mm holds for both, and the pixel size is the
    standard's own."""
    size = f"{standard.width_px}x{standard.height_px}"
    checks = [{**check, "value": size, "allowed": size, "pass": True} if check.get("name") == "pixel_size" else check
              for check in report.get("checks", [])]  # type: ignore[union-attr]
    note = "" if measured_on == (standard.width_px, standard.height_px) else (
        f"; measured on image_base64_hd ({measured_on[0]}x{measured_on[1]} px, the same crop), each rule in mm "
        "holding for both")
    return {**report, "checks": checks, "describes": "image_base64_standard",
            "note": f"The report describes image_base64_standard ({size} px){note}."}


@bp.post("/idphoto")
def idphoto() -> Response:
    timings = Timings()
    not_applied: NotApplied = []
    data = input_bytes()
    model_choice("human_matting_model", "modnet_photographic_portrait_matting", MATTING_MODELS, MATTE_RUNS,
                 not_applied)
    retouch_fields(not_applied)
    return _make(data, own_alpha=False, timings=timings, not_applied=not_applied)


@bp.post("/idphoto_crop")
def idphoto_crop() -> Response:
    return _make(input_bytes(), own_alpha=True, timings=Timings(), not_applied=[])


@bp.post("/add_background")
def add_background() -> Response:
    service = current_service()
    timings = Timings()
    not_applied: NotApplied = []
    data = input_bytes()
    colour = hex_colour("color", "000000")
    kb, dpi = kb_field(default=None), dpi_field()
    render = render_field()
    service.require_ready()
    with service.inference(timings):
        with timings.stage("decode"):
            rgba = decode_rgba(data, max_pixels=service.settings.max_image_pixels)
        with timings.stage("composite"):
            height, width = rgba.shape[:2]
            # Hivision's gradients: 1, the colour at the top to white at the bottom; 2, white at the
            # centre to the colour at the longer side's length from it (its concentric ellipses)
            backdrop = (colour if render == "pure_color" else vertical_gradient((width, height), colour, WHITE)
                        if render == "updown_gradient" else radial_gradient((width, height), WHITE, colour,
                                                                            reach=max(width, height)))
            pixels = flatten(rgba[:, :, :3], rgba[:, :, 3], backdrop)
            replaced = bool((rgba[:, :, 3] < 255).any())
            del rgba
        with timings.stage("encode"):
            body, file = encode_sized(pixels, kb=kb, dpi=dpi, not_applied=not_applied)
        edits = [asked("replace_background", render=render, colour="#{:02x}{:02x}{:02x}".format(*colour))] if replaced else []
        return answer({"image_base64": body}, {**file, "width": width, "height": height, "edits": edits}, timings,
                      not_applied)


@bp.post("/generate_layout_photos")
def generate_layout_photos() -> Response:
    service = current_service()
    timings = Timings()
    not_applied: NotApplied = []
    data = input_bytes()
    height = int(number("height", 413, low=16, high=4000, whole=True))
    width = int(number("width", 295, low=16, high=4000, whole=True))
    kb, dpi = kb_field(default=None), dpi_field()
    service.require_ready()
    with service.inference(timings):
        with timings.stage("decode"):
            rgb = decode(data, max_pixels=service.settings.max_image_pixels).rgb
        scaled = (rgb.shape[1], rgb.shape[0]) != (width, height)
        with timings.stage("sheet"):
            try:
                sheet, layout = render_six_inch(rgb, width, height)
            except ValueError as exc:
                raise bad_request("invalid_size", f"{exc}.") from None
            del rgb
        with timings.stage("encode"):
            body, file = encode_sized(sheet, kb=kb, dpi=dpi, not_applied=not_applied)
        return answer({"image_base64": body}, {
            **file, "paper": "six-inch", "sheet_px": list(SHEET_PX), "copies": layout.copies,
            "turned": layout.turned, "edits": [asked("crop_scale")] if scaled else []}, timings, not_applied)


@bp.post("/watermark")
def watermark() -> Response:
    service = current_service()
    timings = Timings()
    not_applied: NotApplied = []
    data = input_bytes()
    text = value("text") or "Hello"
    try:
        check_text(text)
    except ValueError as exc:
        raise bad_request("invalid_field", f"text: {exc}.") from None
    style = {"size": int(number("size", 20, low=4, high=500, whole=True, query=True)),
             "opacity": number("opacity", 0.5, low=0.0, high=1.0, query=True),
             "angle": number("angle", 30, low=-360, high=360, query=True),
             "colour": hex_colour("color", "#000000", query=True),
             "space": int(number("space", 25, low=0, high=2000, whole=True, query=True))}
    kb, dpi = kb_field(default=None), dpi_field()
    service.require_ready()
    with service.inference(timings):
        with timings.stage("decode"):
            rgb = decode(data, max_pixels=service.settings.max_image_pixels).rgb
        with timings.stage("watermark"):
            pixels = add_watermark(rgb, text, **style)  # type: ignore[arg-type]
            del rgb
        with timings.stage("encode"):
            body, file = encode_sized(pixels, kb=kb, dpi=dpi, not_applied=not_applied)
        return answer({"image_base64": body}, {**file, "edits": [asked("watermark", text=text)]}, timings,
                      not_applied)


@bp.post("/set_kb")
def set_kb() -> Response:
    service = current_service()
    timings = Timings()
    not_applied: NotApplied = []
    data = input_bytes()
    kb, dpi = kb_field(default=50), dpi_field()
    service.require_ready()
    with service.inference(timings):
        with timings.stage("decode"):
            rgb = decode(data, max_pixels=service.settings.max_image_pixels).rgb
        with timings.stage("encode"):
            body, file = encode_sized(rgb, kb=kb, dpi=dpi, not_applied=not_applied, zero_is_smallest=True)
        return answer({"image_base64": body}, {**file, "edits": []}, timings, not_applied)
