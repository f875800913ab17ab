"""POST /api/v1/remove-background: a cut-out (transparent PNG) or a photo on a new background."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from flask import Blueprint, Response

from ..errors import bad_request
from ..imageio import decode, encode, normalise_format
from ..imaging.compose import RGB
from ..imaging.resample import resize_rgb
from ..models.manifest import Role
from ..models.segmentation import AlphaMatting, matting_budget
from ..models.portrait import PortraitMatte
from ..pipelines.cutout import compose, cut_out
from ..pipelines.matte_choice import default_matte
from ..service import Service, current_service
from ..specs import parse_colour
from ..timings import Timings
from ..warmup import WarmupRequest
from . import forms

bp = Blueprint("background", __name__, url_prefix="/api/v1")


def warmup_requests(service: Service) -> list[WarmupRequest]:
    return [
        WarmupRequest("/api/v1/remove-background", {"model": name}, (name,))
        for name in service.registry.names(Role.SEGMENTATION)
    ]


@bp.post("/remove-background")
def remove_background() -> Response:
    service = current_service()
    settings = service.settings
    timings = Timings()
    data = forms.image_bytes()
    model_name = forms.text("model")
    fmt = normalise_format(forms.text("format"), default="png")
    only_mask = forms.boolean("only_mask")
    background_value = forms.text("background")
    try:
        background = None if background_value is None else parse_colour(background_value)
    except ValueError as exc:
        raise bad_request("invalid_background", str(exc)) from None
    matting = None
    if forms.boolean("alpha_matting"):
        matting = AlphaMatting(
            foreground_threshold=forms.integer("alpha_matting_foreground_threshold", 240, low=0, high=255),
            background_threshold=forms.integer("alpha_matting_background_threshold", 10, low=0, high=255),
            erode_size=forms.integer("alpha_matting_erode_size", 10, low=0, high=100),
            max_unknown_px=matting_budget(settings.timeout, configured=settings.max_matting_px),
        )
    named = choose_model(service, model_name, matting)
    # decode, model, encode and the answer inside the slot: a worker holds one photo's pixels at a
    # time, whatever the requests queued behind it (they hold only their bytes), and the watchdog
    # times it all
    with service.inference(timings):
        made = make_cutout(service, data, named=named, matting=matting, only_mask=only_mask, background=background,
                           timings=timings)
        pixels, used, size, photo_size = made.pixels, made.model, made.size, made.photo_size
        del made
        with timings.stage("encode"):
            body = encode(pixels, fmt)
        del pixels
        kind = "mask" if only_mask else "cutout"
        extra: dict[str, object] = {"width": size[0], "height": size[1], "model": used, "kind": kind}
        if size != photo_size:
            extra["scaled_from"] = list(photo_size)  # over MAX_CUTOUT_PIXELS
        response = forms.image_response(
            body,
            fmt,
            timings=timings,
            filename=f"{kind}-{size[0]}x{size[1]}.{'jpg' if fmt == 'jpeg' else fmt}",
            extra=extra,
        )
    if "scaled_from" in extra:
        response.headers["X-Scaled-From"] = "{}x{}".format(*photo_size)
    return response


def choose_model(service: Service, model_name: str | None, matting: AlphaMatting | None) -> str | None:
    """The segmentation model a cut-out names (None: the photo decides, once decoded), after waiting
    for the models (`require_ready`: the fast 503). 400 for a model not loaded, or alpha matting
    asked of a model that predicts the alpha itself."""
    service.require_ready()
    settings, registry = service.settings, service.registry
    loaded = registry.names(Role.SEGMENTATION)
    if model_name is not None and model_name not in loaded:
        raise bad_request("unknown_model", f"model must be one of the loaded segmentation models: {', '.join(loaded)}.")
    if model_name is not None and matting is not None and isinstance(registry.segmenter(model_name), PortraitMatte):
        raise bad_request("alpha_matting_not_applicable", f"alpha_matting refines a salient-object mask into an alpha; "
                          f"{model_name} predicts the alpha itself. Send it without alpha_matting, or with model="
                          f"{settings.segmentation_model}.")
    # no model named: alpha matting refines the general model's mask; otherwise the photo decides
    # (a face: the portrait matte), once it is decoded
    return model_name or (settings.segmentation_model if matting is not None else None)


@dataclass(frozen=True)
class Cutout:
    """A cut-out's pixels ((H, W) mask, (H, W, 3) RGB on a colour, or (H, W, 4) RGBA), the model that
    matted it, its size and the photo's (px; they differ over MAX_CUTOUT_PIXELS)."""

    pixels: np.ndarray
    model: str
    size: tuple[int, int]
    photo_size: tuple[int, int]


def make_cutout(service: Service, data: bytes, *, named: str | None, matting: AlphaMatting | None,
                only_mask: bool, background: RGB | None, timings: Timings, smooth: bool = False,
                decontaminate: bool = False) -> Cutout:
    """Decode the upload, matte it (`named`, or the photo's choice: `default_matte`) and compose the
    answer's pixels. Call it inside the request's inference slot (`service.inference`)."""
    settings, registry = service.settings, service.registry
    with timings.stage("decode"):
        image = decode(data, max_pixels=settings.max_image_pixels)
        photo_size, rgb = (image.width, image.height), image.rgb
        del image  # `rgb` is then the photo's one reference: it goes before the answer is encoded
        size = answer_size(*photo_size, max_pixels=settings.max_cutout_pixels)
        if size != photo_size:
            rgb = resize_rgb(rgb, size)  # the answer's size, before any work on the pixels
    if named is None:
        found = registry.face_detector()
        matte, used = default_matte(rgb, detector=None if found is None else found[1],
                                    portrait=registry.segmenter(settings.portrait_matte),
                                    general=registry.segmenter(settings.segmentation_model),
                                    max_side=settings.working_max_side, timings=timings)
        del rgb
        with timings.stage("compose"):
            pixels = compose(matte, only_mask=only_mask, background=background, smooth=smooth)
        del matte
    else:
        used = named
        pixels = cut_out(rgb, segmenter=registry.segmenter(named), max_side=settings.working_max_side,
                         timings=timings, alpha_matting=matting, only_mask=only_mask, background=background,
                         smooth=smooth, decontaminate=decontaminate)
        del rgb
    timings.models["segment"] = used
    return Cutout(pixels, used, size, photo_size)


def answer_size(width: int, height: int, *, max_pixels: int) -> tuple[int, int]:
    """(width, height) of a cut-out's answer: the photo's own, or scaled down (aspect kept) to at most
    `max_pixels` (MAX_CUTOUT_PIXELS)."""
    if width * height <= max_pixels:
        return width, height
    scale = (max_pixels / (width * height)) ** 0.5
    return max(1, int(width * scale)), max(1, int(height * scale))
