"""`rembg s`'s routes, as rembg 2.0.86's server reads them: POST /api/remove (and GET, refused).

A client of `rembg s` changes its base URL and nothing else. The request is read as rembg reads it:
a multipart `file`; the form fields `model`, `a`, `af`, `ab`, `ae`, `om`, `ppm`, `dc`, `vm`; the query
fields `bgc` (`R,G,B,A`) and `extras` (JSON). The answer is what rembg answers: 200, `image/png`, an
RGBA cut-out (`bgc`: laid over that colour, still RGBA), or an `L` mask (`om`). The cut-out is made
by the same step as POST /api/v1/remove-background (`background.make_cutout`), in the same slot.

Where rembg differs, we say so rather than pretend (README, "Coming from rembg or HivisionIDPhotos"):
- `model`: every name rembg knows is accepted. A model this server loads runs as itself; any other
  runs the nearest model loaded (a human or portrait model: the portrait matte; u2netp and u2net:
  each other; the rest: the general model), `X-Model` names the model that ran and
  `X-Pilotlight-Not-Applied` says what was substituted. No `model`: the photo decides (a face: the
  portrait matte, otherwise the general model), where rembg would run `bria-rmbg`. A name rembg
  does not know either: 400 listing the ones served.
- `dc` estimates the colours under soft edges (the portrait matte always does); `vm` (ViTMatte) is
  not shipped: 400. `extras` configures rembg's sessions (API keys, model paths, SAM prompts): read
  by nothing here, so ignored (as rembg ignores JSON it cannot read), and said in the header.
- `GET /api/remove?url=` fetches nothing (no request ever leaves this server): 400, upload the file.
- Errors carry rembg's `detail` beside the service's own `error` object.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from .. import observability
from ..errors import bad_request, describe
from ..imageio import encode
from ..imaging.compose import over_colour
from ..models.manifest import Role
from ..models.portrait import PortraitMatte
from ..models.segmentation import AlphaMatting, matting_budget
from ..service import Service, current_service
from ..timings import Timings
from . import forms
from .background import choose_model, make_cutout

bp = Blueprint("rembg", __name__)
NOT_APPLIED_HEADER = "X-Pilotlight-Not-Applied"  # what was asked and not done, in words

# rembg 2.0.86's model names (rembg.sessions.sessions_names), each answered here
REMBG_MODELS = ("birefnet-general", "birefnet-general-lite", "birefnet-general-fp16", "birefnet-portrait",
                "birefnet-dis", "birefnet-hrsod", "birefnet-cod", "birefnet-massive", "isnet-anime", "dis_custom",
                "isnet-general-use", "sam", "silueta", "u2net_cloth_seg", "u2net_custom", "u2net_human_seg", "u2net",
                "u2netp", "bria-rmbg", "ben_custom", "withoutbg", "atlascloud")
PORTRAIT_ALIASES = ("u2net_human_seg", "birefnet-portrait")  # a person's matte: the portrait matte, where loaded
SIBLINGS = {"u2netp": "u2net", "u2net": "u2netp"}  # one architecture, two sizes


def served_models(service: Service) -> dict[str, str]:
    """The `model` names this server answers to, each with the loaded model that runs for it: our
    own names as themselves, and every rembg name (the nearest model loaded where it is not)."""
    registry, settings = service.registry, service.settings
    loaded = registry.names(Role.SEGMENTATION)
    portrait = settings.portrait_matte
    has_portrait = portrait in registry and isinstance(registry.segmenter(portrait), PortraitMatte)
    names = {}
    for name in REMBG_MODELS:
        if name in PORTRAIT_ALIASES and has_portrait:
            names[name] = portrait
        elif SIBLINGS.get(name) in loaded and name not in loaded:
            names[name] = SIBLINGS[name]
        else:
            names[name] = settings.segmentation_model
    names.update({name: name for name in loaded})
    return names


@bp.errorhandler(Exception)
def _error(exc: Exception) -> Response:
    """The service's error, with rembg's (FastAPI's) `detail` beside it."""
    failure = describe(exc, max_upload_mb=current_service().settings.max_upload_mb)
    response = jsonify({"detail": failure.message, "error": {"code": failure.code, "message": failure.message,
                                                             **failure.details}})
    response.status_code = failure.status
    response.headers.update(failure.headers)
    return response


@bp.get("/api/remove")
def remove_from_url() -> Response:
    raise bad_request("url_not_fetched", "This server fetches nothing from a URL: POST the image to /api/remove "
                      "as the multipart file field 'file'.")


def _query_colour() -> tuple[int, int, int, int] | None:
    value = request.args.get("bgc")
    if value is None or not value.strip():
        return None
    try:
        parts = tuple(int(part) for part in value.split(","))
    except ValueError:
        parts = ()
    if len(parts) not in (3, 4) or not all(0 <= part <= 255 for part in parts):
        raise bad_request("invalid_field", f"bgc must be R,G,B,A (each 0-255), e.g. 255,255,255,255, not {value!r}.")
    return parts if len(parts) == 4 else (*parts, 255)  # type: ignore[return-value]


def _query_extras(not_applied: list[str]) -> None:
    """rembg passes `extras` to its session (keys, model paths, prompts) and skips JSON it cannot
    read; nothing here reads them, so they are ignored, and said so when any were sent."""
    value = request.args.get("extras")
    if value is None or not value.strip() or value.strip() == "{}":
        return
    not_applied.append("extras ignored: they configure rembg's own sessions, and no session here reads them")


@bp.post("/api/remove")
def remove() -> Response:
    service = current_service()
    settings = service.settings
    timings = Timings()
    data = forms.image_bytes("file")
    not_applied: list[str] = []
    background = _query_colour()
    _query_extras(not_applied)
    only_mask = forms.boolean("om")
    smooth = forms.boolean("ppm")
    decontaminate = forms.boolean("dc")
    if forms.boolean("vm"):
        raise bad_request("invalid_field", "vm (ViTMatte edge refinement) is not shipped here; send vm=false. "
                          "The portrait matte (model=u2net_human_seg, or no model) keeps hair.")
    matting = None
    thresholds = (forms.integer("af", 240, low=0, high=255), forms.integer("ab", 10, low=0, high=255),
                  forms.integer("ae", 10, low=0, high=100))
    if forms.boolean("a"):
        matting = AlphaMatting(foreground_threshold=thresholds[0], background_threshold=thresholds[1],
                               erode_size=thresholds[2],
                               max_unknown_px=matting_budget(settings.timeout, configured=settings.max_matting_px))
    asked = forms.text("model")
    service.require_ready()
    served = served_models(service)
    if asked is not None and asked not in served:
        raise bad_request("unknown_model", f"model {asked!r} is neither rembg's nor this server's; this server "
                          f"serves: {', '.join(sorted(served))}.")
    runs = None if asked is None else served[asked]
    if asked is not None and runs != asked:
        not_applied.append(f"model={asked} is not shipped here; {runs} ran instead")
        if matting is not None and isinstance(service.registry.segmenter(runs), PortraitMatte):
            matting = None  # rembg's alpha matting refines a hard mask; the portrait matte predicts the alpha
            not_applied.append(f"a=true not applied: {runs} predicts the alpha itself")
    named = choose_model(service, runs, matting)
    with service.inference(timings):
        made = make_cutout(service, data, named=named, matting=matting, only_mask=only_mask, background=None,
                           timings=timings, smooth=smooth, decontaminate=decontaminate)
        pixels, used = made.pixels, made.model
        del made
        if background is not None and not only_mask:
            with timings.stage("background"):
                pixels = over_colour(pixels, background)
        with timings.stage("encode"):
            body = encode(pixels, "png")
        del pixels
        forms.refuse_larger_than(settings.max_answer_bytes, len(body), fmt="png", as_json=False)
    observability.observe_inference(timings)
    response = Response(body, mimetype="image/png")
    response.headers["Server-Timing"] = timings.header()
    response.headers["X-Model"] = used
    if not_applied:
        response.headers[NOT_APPLIED_HEADER] = "; ".join(not_applied)
    return response
