"""The report's words for people: advice, rule labels, the sources of the capture thresholds, what
to do instead of a refused edit. Data and small formatters only; `compliance` decides which apply.
"""

from __future__ import annotations

CORNERS_ADVICE = "Someone or something else is beside your head: use a photo with no one else in it and a plain wall behind you."
NOT_CHECKED = (
    "We cannot check glasses for glare or tinted lenses, nor a head covering's shadow on the face: make sure there is none",
    "We cannot check that your expression is neutral and your mouth closed: make sure it is",
)
NOT_CHECKED_EYES = "We cannot check that your eyes are open: make sure they are"
HANDS_ADVICE = "Lower your arms: hands must not be near your head."
MOUTH_ADVICE = "Close your mouth: a neutral expression, lips together, no teeth showing."
GAPING_ADVICE = "A natural smile is allowed, an open mouth is not: relax your jaw and close your lips a little."
ADVICE = {
    "yaw_degrees": "Face the camera squarely",
    "pitch_degrees": "Look straight at the camera: chin neither up nor down",
    "roll_degrees": "Keep your head level",
    "head_height": "The head could not be sized to the rule: use a photo taken from further away, head and shoulders in view",
    "crown_margin": "The space above the head is outside the rule",
    "chin_margin": "The space below the chin is outside the rule",
    "eye_line": "The eyes sit outside the rule's height",
    "head_width": "The head's width is outside the rule",
    "side_margin": "The head is too close to a side edge",
    "centre_x": "The face is off centre: face the camera squarely",
    "eye_distance": "The eye distance is outside the rule",
}
RULE_LABEL = {
    "head_height": "chin to crown",
    "crown_margin": "top edge to crown",
    "chin_margin": "chin to bottom edge",
    "eye_line": "eye line above the bottom edge",
    "head_width": "head width",
    "side_margin": "head to the nearer side edge",
    "centre_x": "left edge to the face's centre line",
    "eye_distance": "eye to eye",
}


def mm_band_text(low: float | None, high: float | None) -> str:
    if low is None:
        return f"<= {high:.1f} mm"
    if high is None:
        return f">= {low:.1f} mm"
    return f"{low:.1f}-{high:.1f} mm"



UNCERTAIN_ADVICE = ("Within our measuring uncertainty (+-{u:.1f} mm) of the rule's limit, so we cannot tell: "
                    "check it yourself, or take the photo again a little further away")



CAPTURE_SOURCES = {
    "sharpness": "HM Passport Office, 'Passport photographs' leaflet (a copy at "
                 "https://www.scribd.com/doc/92433973/Passport-Photographs): the photographs must \"be in sharp focus "
                 "and clear\"",
    "exposure": "ANSI/NIST-ITL 1-2011, E.3.6 'No saturation' (a copy at https://yumpu.com/en/document/view/42300191/"
                "acknowledgements-for-ansi-nist-itl-1-2011-nist-visual-image-/514): \"there shall be no saturation "
                "(over or under exposure) on the face\"",
    "lighting": "HM Passport Office, the same leaflet: \"free from shadows\"; ISO/IEC 19794-5 as adopted in GOST R "
                "ISO/IEC 19794-5-2013, table C.8 (a copy at https://ajdocs.ru/gsp/34565/97) measures the uniformity "
                "of the light as the difference of exposure between the right and the left half of the face",
}

WALL_ADVICE = "Stand in front of a plain {colour} wall, a step away from it, lit evenly from the front"


def wall_advice(allowed: dict[str, tuple[int, int, int]]) -> str:
    names = " or ".join(name.replace("-", " ") for name in allowed)
    return WALL_ADVICE.format(colour=names)



INSTEAD = {
    "crop_scale": "have the photo taken at the required size",
    "level": "hold your head level when the photo is taken",
    "replace_background": "keep your own background (background=keep) and take the photo in front of a plain wall of "
                          "an allowed colour, a step away from it, lit from the front",
    "extend_canvas": "take the photo from a step further away, with your shoulders in view, or send the uncropped "
                     "original",
    "adjust_tone": "take the photo in even, bright light",
}



FRAME_ADVICE = "take the photo from a step further away, with your shoulders in view, or send the uncropped original"
EDGE_WORDS = {"top": "above the head", "bottom": "below", "left": "at the left", "right": "at the right"}


def missing_words(missing_mm: dict[str, float]) -> str:
    return ", ".join(f"{mm:.1f} mm {EDGE_WORDS[edge]}" for edge, mm in missing_mm.items())



EYES_ADVICE = "Open your eyes: look at the camera with both eyes open."


CUT_MESSAGES = {
    "bottom": "The photo is cut off above the chin; use one that shows your whole face and some of your shoulders.",
    "top": "The photo is cut off through the top of the head; use one that shows all of your hair.",
    "left": "The photo is cut off through the left of the head; use one that shows your whole head.",
    "right": "The photo is cut off through the right of the head; use one that shows your whole head.",
}


# The words of the report's lines a person reads (pass, fail, and where the measure cannot decide,
# check): the page's result shows them and the camera's live guidance says them, so the live verdict
# and the final one agree. The page reads them from its page data; nothing else writes them.
LINE_TITLES = {
    "face_count": {"pass": "One face", "fail": "Exactly one face, please"},
    "distance": {"pass": "Right distance", "fail": "Too far from the camera", "close": "Too close to the camera"},
    "centre_x": {"pass": "Face centred", "fail": "Face off centre"},
    "eye_line": {"pass": "Eyes on the eye line", "fail": "Eyes off the eye line"},
    "yaw_degrees": {"pass": "Facing the camera", "fail": "Head turned", "check": "Head may be turned: check"},
    "pitch_degrees": {"pass": "Looking straight ahead", "fail": "Chin up or down", "check": "Chin may be up or down: check"},
    "roll_degrees": {"pass": "Head level", "fail": "Head tilted", "check": "Head may be tilted: check"},
    "capture_lighting": {"pass": "Even light on the face", "fail": "One side of the face in shadow"},
    "capture_exposure": {"pass": "Well exposed", "fail": "Too dark or washed out"},
    "background_uniformity": {"pass": "Plain, even background", "fail": "Background not even"},
    "background_even": {"pass": "Evenly lit background", "fail": "Background unevenly lit"},
    "eyes_open": {"pass": "Eyes open", "fail": "Eyes may be closed"},
    "mouth_closed": {"pass": "Mouth closed", "fail": "Mouth open", "check": "Smile allowed"},
}

# The live guidance's own advice, for what only a camera can still change (the report's other
# advice is the report's own: ADVICE, EYES_ADVICE, MOUTH_ADVICE, the capture lines', wall_advice).
LIVE_ADVICE = {
    "no_face": "Look at the camera: we cannot see your face yet",
    "faces": "Only you in the picture: ask anyone else to step out of it",
    "far": "Come closer to the camera, until your head fills the outline",
    "close": "Step back from the camera, until your whole head fits the outline",
    "centre": "Move so your face is in the middle of the outline",
    "eye_line": "Bring your eyes to the eye line: raise or lower the camera to eye level",
}


def line_title(name: str, passed: bool | None, *, variant: str | None = None) -> str:
    """The words of a report line for a person: `variant` names one of its own (distance: "close")."""
    titles = LINE_TITLES[name]
    if variant is not None:
        return titles[variant]
    if passed is None:
        return titles.get("check", titles["fail"])
    return titles["pass" if passed else "fail"]
