"""The per-spec corpus table (issue 45's debt, issue 51 item 6): each pair of a corpus run counted as an
authority would count it, from the rows `python -m bench.idphoto --corpus ... --json OUT` writes.

    .venv/bin/python -m bench.verdicts OUT.json [BEFORE.json]   # with BEFORE, the specs both runs made

Per portrait label by eye (tests/support/corpus.py `expect`) and the independent inspector's verdict:
* **right**: frontal ("photo"): the service calls the photo compliant and the inspector passes it, or
  the service fails a line the inspector or the labels by eye confirm (bench.idphoto's `justified`);
  "turned": a pose line fails; "hands": the hands line fails; "refused:<edge>": refused at that edge.
* **false assurance**: the service calls the photo compliant (no line failed or undecided) where the
  inspector fails it (frontal), or where the label says the pose, the hands or the edge is wrong.
* **over-cautious**: a frontal photo the inspector passes that the service leaves undecided, or fails
  on a line nothing confirms; a turned head whose pose line is only undecided; a whole head refused.
* **honest fail**: the rest: the service does not pass the photo, and the inspector or the label
  agrees it is not compliant, but the service names no line that says why (a cause we miss).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from tests.support.corpus import PORTRAITS

POSE_LINES = {"yaw_degrees", "pitch_degrees", "roll_degrees"}
CONFIRMED_BY = {"head_height": "head_height_ratio", "eye_line": "eye_line_ratio", "crown_margin": "crown_margin_mm",
                "chin_margin": "chin_margin_mm", "roll_degrees": "roll_degrees", "face_count": "face_count"}
CAPTURE_LINE = {"dim": "capture_exposure", "side-lit": "capture_lighting", "blurred": "capture_sharpness"}
KINDS = ("right", "false assurance", "over-cautious", "honest fail")


def undecided(row: dict) -> list[str]:
    if "service_undecided" in row:
        return row["service_undecided"]
    return [c["name"] for c in row.get("service_checks", []) if c["pass"] is None
            and c["kind"] not in ("info", "not_checked", "edit")]


def justified(row: dict, label: dict) -> set[str]:
    """Failed lines the labels by eye or the inspector confirm (as bench.idphoto judges them)."""
    allowed = {"face_resolution"}
    if label["mouth"] == "open":
        allowed.add("mouth_closed")
    if label["eyes"] == "closed":
        allowed.add("eyes_open")
    if label["capture"] in CAPTURE_LINE:
        allowed.add(CAPTURE_LINE[label["capture"]])
    if label["covering"]:
        allowed.add("head_covering")  # a hat or cap fails every spec (issue 51's count)
    if label["glasses"] and row["spec"].startswith("us-"):
        allowed.add("eyeglasses")  # glasses fail the US specs (issue 51's count)
    allowed.update(line for line, rule in CONFIRMED_BY.items() if rule in row.get("inspector_failed", []))
    return allowed


def verdict(row: dict) -> str:
    """One of KINDS for a pair (see the module docstring)."""
    found = {p.name: p for p in PORTRAITS}.get(row["portrait"])
    expect = found.expect if found else row.get("expect", "photo")
    label = {"mouth": found.mouth if found else "closed", "eyes": found.eyes if found else "open",
             "capture": found.capture if found else "good",
             "covering": bool(found and any(word in found.notes for word in (" cap", " hat"))),
             "glasses": bool(found and "glasses" in found.notes)}
    if expect.startswith("refused"):
        if row["status"] == "refused":
            return "right" if f"refused:{row.get('edge')}" == expect else "honest fail"
        called = not row["service_failed"] and not undecided(row)
        return "false assurance" if called else "honest fail"
    if row["status"] != "made":
        return "over-cautious"
    failed, open_lines = set(row["service_failed"]), set(undecided(row))
    called = not failed and not open_lines
    if expect == "turned":
        if failed & POSE_LINES:
            return "right"
        return "false assurance" if called else "over-cautious" if open_lines & POSE_LINES else "honest fail"
    if expect == "hands":
        if "hands" in failed:
            return "right"
        return "false assurance" if called else "honest fail"
    inspector_fails = bool(row.get("inspector_failed"))
    if called:  # a hat or cap fails every spec, glasses the US specs, whatever the inspector says
        wrong = inspector_fails or label["covering"] or (label["glasses"] and row["spec"].startswith("us-"))
        return "false assurance" if wrong else "right"
    reasons = justified(row, label)
    if failed and failed <= reasons and (failed & (set(CONFIRMED_BY) | {"head_covering", "eyeglasses"}) or not inspector_fails):
        return "right"
    return "honest fail" if inspector_fails else "over-cautious"


def per_spec(rows: list[dict]) -> dict[str, Counter]:
    table: dict[str, Counter] = {}
    for row in rows:
        kind = verdict(row)
        for key in (row["spec"], "all"):
            table.setdefault(key, Counter())[kind] += 1
    return table


def print_table(after: list[dict], before: list[dict] | None = None) -> None:
    now = per_spec(after)
    then = per_spec(before) if before else {}
    head = " | ".join(f"{k} (before -> after)" if before else k for k in KINDS)
    sys.stdout.write(f"| spec | pairs | {head} |\n|---|---|" + "---|" * len(KINDS) + "\n")
    specs = [s for s in now if s != "all" and (not before or s in then)]
    if before and set(now) != set(then):  # compare like with like: the specs both runs made
        now = per_spec([row for row in after if row["spec"] in specs])
    for spec_id in specs + ["all"]:
        cells = []
        for kind in KINDS:
            cells.append(f"{then.get(spec_id, Counter())[kind]} -> {now[spec_id][kind]}" if before else str(now[spec_id][kind]))
        sys.stdout.write(f"| {spec_id} | {sum(now[spec_id].values())} | " + " | ".join(cells) + " |\n")


def main() -> None:
    after = json.loads(Path(sys.argv[1]).read_text())["pairs"]
    before = json.loads(Path(sys.argv[2]).read_text())["pairs"] if len(sys.argv) > 2 else None
    print_table(after, before)


if __name__ == "__main__":
    main()
