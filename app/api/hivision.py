"""HivisionIDPhotos' routes, as its `deploy_api.py` and `docs/api_EN.md` define them.

A Hivision client changes its base URL and nothing else: the same form fields with the same
defaults, the same JSON (`status`, `image_base64` / `image_base64_standard` / `image_base64_hd`,
each a `data:image/png;base64,...` string as Hivision writes it, whatever the bytes), and errors as
`{"status": false, "error": "..."}` with a status that says what happened (400 bad field, 413 too
large, 422 the photo cannot make it, 503 busy or loading). One field of our own, `pilotlight`,
says what was done: the model, the compliance report of an ID photo, and the `edits`, each one
marked `asked: true` where the client asked for it (a new background, a watermark).

Each route is a step of our own pipelines: `/human_matting` is the cut-out (`background.make_cutout`),
`/idphoto` and `/idphoto_crop` the ID photo with its background kept (`make_id_photo`, the
transparency from its matte or from the upload's own alpha: the whole chain), `/add_background`
the compositing (`compose.flatten` over a painted backdrop), `/generate_layout_photos` the print
sheet (`sheet.render_sheet`, as the layout step), `/set_kb` the encode step (`imageio.encode_photo`,
through which /add_background, /generate_layout_photos and /watermark encode too).
What differs from Hivision is in the README ("Coming from rembg or HivisionIDPhotos").
"""

from __future__ import annotations

import base64
import binascii
import dataclasses

import numpy as np
from flask import Blueprint, Response, jsonify, request

from .. import observability
from ..errors import ModelUnavailable, bad_request, describe
from ..imageio import decode, decode_rgba, encode, encode_photo
from ..imaging.compose import cutout, flatten, radial_gradient, vertical_gradient
from ..imaging.resample import resize_alpha, resize_rgb
from ..imaging.sheet import get_paper, plan_sheet, render_sheet
from ..imaging.watermark import add_watermark, check_text
from ..pipelines.idphoto import IdPhoto, IdPhotoOptions, carry_onto, make_id_photo
from ..service import current_service
from ..specs import MAX_DPI, MIN_DPI, EditPolicy, PhotoSpec, custom_spec
from ..timings import Timings
from . import forms
from .background import make_cutout

bp = Blueprint("hivision", __name__)

PREFIX = "data:image/png;base64,"  # Hivision's bytes_2_base64 writes this before every image, PNG or JPEG
MATTING_MODELS = ("modnet_photographic_portrait_matting", "hivision_modnet")  # both: our portrait matte
REFUSED_MATTING = {"rmbg-1.4": "not shipped here", "birefnet-v1-lite": "not shipped here"}
FACE_MODELS = ("mtcnn", "retinaface-resnet50")  # both: our face detector (CenterFace)
REFUSED_FACE = {"face_plusplus": "a cloud API: this server sends no request out"}
RENDER = ("pure_color", "updown_gradient", "center_gradient")
RETOUCH = ("whitening_strength", "brightness_strength", "contrast_strength", "sharpen_strength", "saturation_strength")
HEAD_FIELDS = {"head_measure_ratio": 0.2, "head_height_ratio": 0.45, "top_distance_max": 0.12, "top_distance_min": 0.1}
LAYOUT_PAPER = "4x6"  # Hivision's six-inch layout
WHITE = (255, 255, 255)


# -- the request ------------------------------------------------------------------------------------


@bp.errorhandler(Exception)
def _error(exc: Exception) -> Response:
    """Hivision's error shape, `{"status": false, "error": message}`, with our code beside it."""
    failure = describe(exc, max_upload_mb=current_service().settings.max_upload_mb)
    response = jsonify({"status": False, "error": failure.message, "code": failure.code, **failure.details})
    response.status_code = failure.status
    response.headers.update(failure.headers)
    return response


def input_bytes() -> bytes:
    """The photo: the file `input_image`, or `input_image_base64` (plain base64, or a `data:` URL)."""
    encoded = request.form.get("input_image_base64")
    if encoded is not None and encoded.strip():
        text = encoded.strip()
        if text.startswith("data:"):
            text = text.partition(",")[2]
        try:
            return base64.b64decode("".join(text.split()), validate=True)
        except (binascii.Error, ValueError):
            raise bad_request("invalid_base64", "input_image_base64 is not valid base64.") from None
    files = request.files.getlist("input_image") if request.mimetype == "multipart/form-data" else []
    if len(files) > 1:
        raise bad_request("too_many_images", f"Send exactly one file in input_image ({len(files)} were sent).")
    if not files:
        raise bad_request("missing_image", "Send the photo as the multipart file input_image, or as "
                          "input_image_base64.")
    return files[0].read()


def _value(name: str, *, query: bool = False) -> str | None:
    """A field's text (the query string first where `query`: /watermark reads its styling there)."""
    value = request.args.get(name) if query else None
    if value is None or not value.strip():
        value = request.form.get(name)
    return None if value is None or not value.strip() else value.strip()


def choice(name: str, default: str, allowed: tuple[str, ...], refused: dict[str, str]) -> str:
    value = _value(name) or default
    if value in refused:
        raise bad_request("invalid_field", f"{name}={value} is {refused[value]}; allowed: {', '.join(allowed)}.")
    if value not in allowed:
        raise bad_request("invalid_field", f"{name} must be one of {', '.join(allowed)}, not {value!r}.")
    return value


def number(name: str, default: float, *, low: float, high: float, whole: bool = False, query: bool = False) -> float:
    value = _value(name, query=query)
    if value is None:
        return default
    try:
        found = float(value) if not whole else int(value)
    except ValueError:
        raise bad_request("invalid_field", f"{name} must be {'a whole number' if whole else 'a number'}, "
                          f"not {value!r}.") from None
    if not low <= found <= high:
        raise bad_request("invalid_field", f"{name} must be between {low:g} and {high:g}, not {value}.")
    return found


def hex_colour(name: str, default: str, *, query: bool = False) -> tuple[int, int, int]:
    value = (_value(name, query=query) or default).lstrip("#")
    if len(value) != 6 or any(ch not in "0123456789abcdefABCDEF" for ch in value):
        raise bad_request("invalid_field", f"{name} must be a hex colour such as 638cce or #638cce, not {value!r}.")
    return int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16)


def dpi_field() -> int:
    return int(number("dpi", 300, low=MIN_DPI, high=MAX_DPI, whole=True))


def kb_field(*, default: int | None) -> int | None:
    if _value("kb") is None:
        return default
    return int(number("kb", 0, low=1, high=100_000, whole=True))


# -- the answer -------------------------------------------------------------------------------------


def data_url(data: bytes) -> str:
    return PREFIX + base64.b64encode(data).decode("ascii")


def answer(images: dict[str, bytes], ours: dict[str, object], timings: Timings) -> Response:
    """`{"status": true, <name>: data URL..., "pilotlight": ours}`; 413 over MAX_ANSWER_MB."""
    limit = current_service().settings.max_answer_bytes
    forms.refuse_larger_than(limit, sum(forms.base64_size(len(data)) for data in images.values()), fmt="png",
                             as_json=True)
    observability.observe_inference(timings)
    response = jsonify({"status": True, **{name: data_url(data) for name, data in images.items()},
                        "pilotlight": {**ours, "timings": timings.as_dict()}})
    response.headers["Server-Timing"] = timings.header()
    return response


def encode_sized(pixels: np.ndarray, *, kb: int | None, dpi: int) -> tuple[bytes, str]:
    """PNG at `dpi`, or with `kb` the best JPEG of at most `kb` KB (never padded up to it):
    (bytes, content type). PhotoRejected where the smallest JPEG is still larger."""
    encoded = encode_photo(pixels, fmt="png" if kb is None else "jpeg", dpi=dpi, max_kb=kb, field_name="kb", noun="image")
    return encoded.data, encoded.content_type


def asked(operation: str, **detail: object) -> dict[str, object]:
    """An edit the client asked for, as the report lists it."""
    return {"operation": operation, "asked": True, **detail}


# -- the routes -------------------------------------------------------------------------------------


@bp.post("/human_matting")
def human_matting() -> Response:
    service = current_service()
    timings = Timings()
    data = input_bytes()
    choice("human_matting_model", "hivision_modnet", MATTING_MODELS, REFUSED_MATTING)
    dpi = dpi_field()
    service.require_ready()
    with service.inference(timings):
        made = make_cutout(service, data, named=service.settings.portrait_matte, matting=None, only_mask=False,
                           background=None, timings=timings)
        with timings.stage("encode"):
            body = encode(made.pixels, "png", dpi=dpi)
        return answer({"image_base64": body}, {
            "model": made.model, "content_type": "image/png", "width": made.size[0], "height": made.size[1],
            "edits": [asked("remove_background")]}, timings)


def _id_spec(*, hd: bool, rgb_size: tuple[int, int]) -> tuple[PhotoSpec, PhotoSpec | None]:
    """The standard photo's spec (height, width px at dpi) and, with `hd`, one of the same print size
    at the upload's resolution (at least the standard's, at most 4000 px a side)."""
    height = int(number("height", 413, low=16, high=4000, whole=True))
    width = int(number("width", 295, low=16, high=4000, whole=True))
    dpi = dpi_field()
    try:
        standard = custom_spec(width_px=width, height_px=height, dpi=dpi)
        if not hd:
            return standard, None
        scale = max(1.0, min(rgb_size[0] / width, rgb_size[1] / height, 4000 / width, 4000 / height))
        return standard, custom_spec(width_mm=standard.width_mm, height_mm=standard.height_mm, dpi=dpi,
                                     width_px=round(width * scale), height_px=round(height * scale))
    except ValueError as exc:
        raise bad_request("invalid_size", str(exc)) from None


def _id_fields() -> tuple[bool, bool, list[str]]:
    """The /idphoto and /idphoto_crop fields: (hd, level the face, fields read but not applied)."""
    choice("face_detect_model", "mtcnn", FACE_MODELS, REFUSED_FACE)
    hd = forms.boolean("hd", True)
    level = forms.boolean("face_align", False) or forms.boolean("face_alignment", False)
    ignored = []
    for name, default in HEAD_FIELDS.items():
        if number(name, default, low=0.0, high=1.0) != default:
            ignored.append(name)  # our placement follows the spec's rules (head height in mm), not these
    return hd, level, ignored


def _make(data: bytes, *, own_alpha: bool, timings: Timings) -> Response:
    """The ID photo with its background kept, answered transparent (`own_alpha`: the upload's alpha,
    else the matte's); standard and, with hd, high-definition."""
    service = current_service()
    settings = service.settings
    hd, level, ignored = _id_fields()
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
        options = IdPhotoOptions(spec=spec, background=None, fmt="png", dpi=standard.dpi)
        photo = make_id_photo(rgb, detector=found[1], segmenter=segmenter, options=options,
                              max_side=settings.working_max_side, timings=timings,
                              landmarker=service.registry.landmarker(), fallback=fallback)
        del rgb
        with timings.stage("encode"):
            alpha = carry_onto(photo, rgba[:, :, 3]) if rgba is not None else photo.alpha
            if alpha is None:  # make_id_photo always sets it; an opaque answer rather than none
                alpha = np.full(photo.pixels.shape[:2], 255, np.uint8)
            images = _id_images(photo, alpha, standard, hd=high is not None)
        return answer(images, _id_report(photo, standard, ignored, own_alpha=own_alpha), timings)


def _id_images(photo: IdPhoto, alpha: np.ndarray, standard: PhotoSpec, *, hd: bool) -> dict[str, bytes]:
    size = (standard.width_px, standard.height_px)
    pixels = photo.pixels if not hd else resize_rgb(photo.pixels, size)
    small = alpha if not hd else resize_alpha(alpha, size)
    images = {"image_base64_standard": encode(cutout(pixels, small), "png", dpi=standard.dpi)}
    if hd:
        images["image_base64_hd"] = encode(cutout(photo.pixels, alpha), "png", dpi=standard.dpi)
    return images


def _id_report(photo: IdPhoto, standard: PhotoSpec, ignored: list[str], *, own_alpha: bool) -> dict[str, object]:
    # the transparency: the matte's, which removes the photographed background (an edit the client
    # asked for), or the upload's own alpha, carried through the crop (no new edit)
    transparent = [] if own_alpha else [asked("remove_background", source=photo.matted_by)]
    return {
        "model": photo.matted_by,
        "content_type": "image/png",
        "width": standard.width_px,
        "height": standard.height_px,
        "edits": [*photo.edits, *transparent],
        # judged on the photo with its photographed background, at the high-definition size when hd
        "compliance": photo.report(),
        "not_applied": ignored,
    }


@bp.post("/idphoto")
def idphoto() -> Response:
    timings = Timings()
    data = input_bytes()
    choice("human_matting_model", "modnet_photographic_portrait_matting", MATTING_MODELS, REFUSED_MATTING)
    for name in RETOUCH:
        if number(name, 0, low=-1000, high=1000) != 0:
            raise bad_request("invalid_field", f"{name} must be 0: this server does not retouch faces (authorities "
                              "refuse retouched ID photos).")
    return _make(data, own_alpha=False, timings=timings)


@bp.post("/idphoto_crop")
def idphoto_crop() -> Response:
    return _make(input_bytes(), own_alpha=True, timings=Timings())


@bp.post("/add_background")
def add_background() -> Response:
    service = current_service()
    timings = Timings()
    data = input_bytes()
    colour = hex_colour("color", "000000")
    kb, dpi = kb_field(default=None), dpi_field()
    render = RENDER[int(choice("render", "0", ("0", "1", "2"), {}))]
    service.require_ready()
    with service.inference(timings):
        with timings.stage("decode"):
            rgba = decode_rgba(data, max_pixels=service.settings.max_image_pixels)
        with timings.stage("composite"):
            height, width = rgba.shape[:2]
            backdrop = (colour if render == "pure_color" else vertical_gradient((width, height), colour, WHITE)
                        if render == "updown_gradient" else radial_gradient((width, height), colour, WHITE))
            pixels = flatten(rgba[:, :, :3], rgba[:, :, 3], backdrop)
            replaced = bool((rgba[:, :, 3] < 255).any())
            del rgba
        with timings.stage("encode"):
            body, content_type = encode_sized(pixels, kb=kb, dpi=dpi)
        edits = [asked("replace_background", render=render, colour="#{:02x}{:02x}{:02x}".format(*colour))] if replaced else []
        return answer({"image_base64": body}, {"content_type": content_type, "width": width, "height": height,
                                               "bytes": len(body), "edits": edits}, timings)


@bp.post("/generate_layout_photos")
def generate_layout_photos() -> Response:
    service = current_service()
    timings = Timings()
    data = input_bytes()
    height = int(number("height", 413, low=16, high=4000, whole=True))
    width = int(number("width", 295, low=16, high=4000, whole=True))
    kb, dpi = kb_field(default=None), dpi_field()
    paper = get_paper(LAYOUT_PAPER)
    try:
        layout = plan_sheet(paper=paper, photo_mm=(width / dpi * 25.4, height / dpi * 25.4), dpi=dpi)
    except ValueError as exc:
        raise bad_request("invalid_size", str(exc)) from None
    service.require_ready()
    with service.inference(timings):
        with timings.stage("decode"):
            rgb = decode(data, max_pixels=service.settings.max_image_pixels).rgb
        scaled = (rgb.shape[1], rgb.shape[0]) != (width, height)
        with timings.stage("sheet"):
            sheet = render_sheet(rgb if not scaled else resize_rgb(rgb, (width, height)), layout)
            del rgb
        with timings.stage("encode"):
            body, content_type = encode_sized(sheet, kb=kb, dpi=dpi)
        return answer({"image_base64": body}, {
            "content_type": content_type, "paper": paper.id, "copies": len(layout.positions),
            "sheet_px": list(layout.sheet_px), "edits": [asked("crop_scale")] if scaled else []}, timings)


@bp.post("/watermark")
def watermark() -> Response:
    service = current_service()
    timings = Timings()
    data = input_bytes()
    text = _value("text") or "Hello"
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
            body, content_type = encode_sized(pixels, kb=kb, dpi=dpi)
        return answer({"image_base64": body}, {"content_type": content_type, "edits": [asked("watermark", text=text)]},
                      timings)


@bp.post("/set_kb")
def set_kb() -> Response:
    service = current_service()
    timings = Timings()
    data = input_bytes()
    kb, dpi = kb_field(default=50), dpi_field()
    service.require_ready()
    with service.inference(timings):
        with timings.stage("decode"):
            rgb = decode(data, max_pixels=service.settings.max_image_pixels).rgb
        with timings.stage("encode"):
            body, content_type = encode_sized(rgb, kb=kb, dpi=dpi)
        return answer({"image_base64": body}, {"content_type": content_type, "bytes": len(body), "edits": []}, timings)
