"""What an authority says of editing a photo (`EditPolicy`), and an edit the pipeline made (`Edit`).

Pure data: the policy comes from the spec's data files; an `Edit` is one operation on one photo,
with whether it applies to this spec and these options and what it did. The report's `edits`
list is made of `Edit` values (`Edit.record`), never of names looked up again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .rules import Source

# --- edits: what the authority says of changing a photo --------------------------------------
#
# What each spec's authority says about editing a photo, and what pilotlight does by default.
#
# Formatting, not fabrication: most authorities refuse a photo that software has changed. For each of
# five operations a spec records the authority's answer with its words (`Source`), or says that the
# authority does not address it (and what a careful studio does then), or that no authority stands
# behind the spec at all (the CV photo, plain print sizes, a custom size):
#
# - `crop_scale`: selecting and resizing photographed pixels;
# - `level`: in-plane rotation of the photographed pixels;
# - `replace_background`: the person cut out and put on a new background;
# - `extend_canvas`: pixels beyond the photographed frame (background and clothing painted in);
# - `adjust_tone`: brightness, contrast or colour.
#
# `apply` is what the ID photo pipeline does when the request does not ask otherwise: an allowed
# edit (or one no authority governs) is applied, a forbidden one never is, and a silent one as the
# data's `apply` says. A request may still ask for a forbidden edit (`background=white` on a spec
# that forbids replacing it): the photo is made and its report fails with an "edit" line.

KEEP_BACKGROUND = "keep"  # background=keep: the photographed background, cropped with the person
EDIT_OPERATIONS = ("crop_scale", "level", "replace_background", "extend_canvas", "adjust_tone")
POLICIES = ("allowed", "forbidden", "silent", "no_authority")
OPERATION_WORDS = {
    "crop_scale": "cropping and scaling the photo",
    "level": "straightening (rotating) the photo",
    "replace_background": "replacing the background",
    "extend_canvas": "painting in background and clothing beyond the photographed frame",
    "adjust_tone": "changing brightness, contrast or colour",
}


@dataclass(frozen=True)
class EditPolicy:
    """One operation of one spec.

    `policy`: "allowed" or "forbidden" (each with the authority's `source`), "silent" (the authority
    does not address it; `source` may give its general words, `note` says what we chose and why),
    or "no_authority" (no authority stands behind the spec). `apply`: whether the pipeline applies
    the operation by default. `source_key`: the source's key in the spec data, for reports.
    `instead`: the authority's own route where the edit is refused or not spoken of (a person's words).
    """

    operation: str
    policy: str
    apply: bool
    source: Source | None = None
    source_key: str | None = None
    note: str = ""
    instead: str = ""

    def __post_init__(self) -> None:
        if self.operation not in EDIT_OPERATIONS:
            raise ValueError(f"unknown edit operation {self.operation!r} (one of {', '.join(EDIT_OPERATIONS)})")
        if self.policy not in POLICIES:
            raise ValueError(f"{self.operation}: policy must be one of {', '.join(POLICIES)}, not {self.policy!r}")
        if self.policy in ("allowed", "forbidden") and self.source is None:
            raise ValueError(f"{self.operation}: an {self.policy} edit needs the authority's source")
        if self.policy == "no_authority" and self.source is not None:
            raise ValueError(f"{self.operation}: no_authority takes no source")
        if self.policy == "forbidden" and self.apply:
            raise ValueError(f"{self.operation}: a forbidden edit is never applied by default")
        if self.policy in ("allowed", "no_authority") and not self.apply:
            raise ValueError(f"{self.operation}: an {self.policy} edit is applied (apply = true)")
        if self.policy == "silent" and not self.note.strip():
            raise ValueError(f"{self.operation}: a silent policy needs a note saying what we chose and why")
        if (self.source is None) != (self.source_key is None):
            raise ValueError(f"{self.operation}: source and source_key go together")

    @property
    def allowed(self) -> bool | None:
        """True or False where the authority says so; None where it is silent or there is none."""
        return {"allowed": True, "forbidden": False}.get(self.policy)

    def to_dict(self) -> dict[str, Any]:
        return {"operation": self.operation, "policy": self.policy, "allowed": self.allowed, "apply": self.apply,
                "source": self.source_key, "note": self.note, "instead": self.instead,
                "source_detail": None if self.source is None else self.source.to_dict()}


NO_AUTHORITY_NOTE = "No authority stands behind this format: the edit is applied on request."


def no_authority() -> dict[str, EditPolicy]:
    """Every operation applied: the policy of a spec no authority stands behind (a custom size)."""
    return {operation: EditPolicy(operation, "no_authority", True, note=NO_AUTHORITY_NOTE) for operation in EDIT_OPERATIONS}


def edit_policy_from_dict(data: dict[str, Any]) -> EditPolicy:
    """The inverse of EditPolicy.to_dict."""
    detail = data.get("source_detail")
    return EditPolicy(operation=data["operation"], policy=data["policy"], apply=data["apply"],
                      source=None if detail is None else Source.from_dict(detail), source_key=data["source"],
                      note=data.get("note", ""), instead=data.get("instead", ""))


@dataclass(frozen=True)
class Edit:
    """One operation on one photo, as a value: the spec's `policy` for it, whether it `applies` to
    this spec and these options (the pipeline may make it), and whether it was `done` (it changed
    the photo's pixels). The report lists the edits done (`record`), in the order they touched the
    pixels; the compliance report judges their policies."""

    policy: EditPolicy
    applies: bool
    done: bool = False

    @property
    def operation(self) -> str:
        return self.policy.operation

    def did(self, done: bool = True) -> "Edit":
        """This edit, done (or not) on the photo; an edit that does not apply is never done."""
        return Edit(self.policy, self.applies, done=bool(done) and self.applies)

    def record(self) -> dict[str, object]:
        """The report's line: the operation, whether the authority allows it, the source's key."""
        return {"operation": self.operation, "allowed": self.policy.allowed, "source": self.policy.source_key}
