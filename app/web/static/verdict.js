// The verdict a person reads first (issue 52, item 7): one plain sentence on the photo, the ONE thing
// to do next with the button that does it (take it again here with the camera, or keep your own
// background), and the failed lines in plain words, failures first. The full report, passes and
// measurements, stays folded below it (results.js). No API words: no field names, no raw measures,
// no web addresses; the background lines that fail together are said once, as one thing.
import { $, checkItem, colourLabel, ui } from "./common.js";

const verdictUi = {
  text: $("verdict-text"), next: $("verdict-next"), camera: $("verdict-camera"), action: $("verdict-action"),
  problems: $("problems"),
};

const BACKGROUND_REASON = {
  background_uniformity: "not plain",
  background_even: "unevenly lit",
  background_shadow: "your shadow falls on it",
  background_clear: "something or someone is in it",
};
// lines a new photo taken here, with the camera's live guidance, can put right
const CAMERA_FIXES = new Set([
  "head_height", "crown_margin", "chin_margin", "eye_line", "head_width", "side_margin", "centre_x", "eye_distance",
  "yaw_degrees", "pitch_degrees", "roll_degrees", "face_resolution", "capture_sharpness", "capture_exposure",
  "capture_lighting", "eyes_open", "mouth_closed", "hands", "arms_near_head", "canvas_extended", "face_count",
]);

const cameraAvailable = () => Boolean(navigator.mediaDevices && navigator.mediaDevices.getUserMedia);
const sentence = (text) => { const t = String(text || "").trim(); return t && !/[.!?]$/.test(t) ? `${t}.` : t; };
const capital = (text) => (text ? text.charAt(0).toUpperCase() + text.slice(1) : text);

// The API's words made a person's: the form field's name, the sources' addresses (the folded report
// keeps them, wrapped), the authority's quote (ditto).
export function plainWords(text) {
  return String(text || "")
    .replace(/\s*\(background=keep\)/g, " (choose “My own” as the background)")
    .replace(/\s*\(a copy at https?:\/\/[^)\s]*\)/g, "");
}

function plainAdvice(check) {
  const advice = plainWords(check.advice);
  if (check.kind === "edit") { // "The authority refuses ...: “quote” (title, url). Instead, do this."
    const instead = /Instead, (.*)$/.exec(advice);
    return instead ? sentence(capital(instead[1])) : "";
  }
  return sentence(advice.replace(/\s*\([^()]*https?:\/\/[^)]*\)/g, ""));
}

function wallAdvice(checks) {
  for (const check of checks) {
    const match = /(Stand in front of [^.]*)/.exec(check.advice || "");
    if (match) return sentence(match[1]);
  }
  return "";
}

function colourNames(spec) {
  return spec.backgrounds.map((name) => colourLabel(name).toLowerCase()).join(" or ");
}

// What failed, in plain words: [{state, title, detail}], the background's lines as one.
function problems(compliance, spec, titleOf) {
  const out = [];
  const background = compliance.checks.filter((c) => c.pass === false && (c.name in BACKGROUND_REASON || c.name === "background_colour"));
  let backgroundSaid = false;
  for (const check of compliance.checks) {
    if (check.pass === false && background.includes(check)) {
      if (backgroundSaid) continue;
      backgroundSaid = true;
      const reasons = background.map((c) => (c.name === "background_colour" ? `not ${colourNames(spec)}` : BACKGROUND_REASON[c.name]));
      out.push({ state: "fail", title: `Your background: ${reasons.join(", ")}`, detail: wallAdvice(background) || plainAdvice(background[0]) });
    } else if (check.pass === false) {
      out.push({ state: "fail", title: titleOf(check), detail: plainAdvice(check) });
    }
  }
  for (const check of compliance.checks) { // a measure that cannot decide: the person checks it
    if (check.pass === null && (check.kind === "pose" || check.kind === "rule")) {
      out.push({ state: "unchecked", title: titleOf(check), detail: plainAdvice(check) });
    }
  }
  return out;
}

// The one thing to do next: {next, camera, action}.
function nextStep(compliance, spec, request) {
  const failed = compliance.checks.filter((c) => c.pass === false);
  const has = (name) => failed.some((c) => c.name === name);
  const kept = request.background === "keep";
  const wall = `stand before a plain ${colourNames(spec)} wall, a step away from it, lit evenly from the front`;
  if (has("edit_crop_scale")) { // no photo made here can pass: every one is cropped to size
    const line = failed.find((c) => c.name === "edit_crop_scale");
    return { next: `The authority does not accept a photo that was cropped or resized, and every ID photo made here is. ${plainAdvice(line)}`, camera: false };
  }
  if (has("edit_replace_background")) {
    return {
      next: `The authority does not accept a new background: choose “My own”, then ${wall}, and take the photo again here, with the camera.`,
      camera: true, action: ["Keep my own background", keepOwnBackground],
    };
  }
  if (kept && failed.some((c) => c.name.startsWith("background_"))) {
    return { next: `${capital(wall)}, and take the photo again here, with the camera: it tells you live when all is right.`, camera: true };
  }
  if (failed.some((c) => CAMERA_FIXES.has(c.name))) { // what to change is listed below the button
    return { next: "Take the photo again here, with the camera: it tells you live what to change, and takes it when all is right.", camera: true };
  }
  if (failed.length) return { next: plainAdvice(failed[0]), camera: false };
  return { next: "Check the lines marked “?” yourself before you send the photo.", camera: false };
}

function keepOwnBackground() {
  const keep = ui.swatches.querySelector('.swatch[data-name="keep"] input');
  keep.checked = true;
  keep.dispatchEvent(new Event("change", { bubbles: true })); // the result is made again at once (app.js)
}

function renderProblems(items) {
  const list = verdictUi.problems;
  list.replaceChildren();
  list.hidden = !items.length;
  for (const item of items) {
    list.append(checkItem({
      state: item.state,
      mark: item.state === "fail" ? "✗" : "?",
      said: item.state === "fail" ? "To change: " : "Check yourself: ",
      title: item.title,
      detail: item.detail,
    }));
  }
}

function setAction(button, action) {
  button.hidden = !action;
  button.onclick = action ? action[1] : null;
  if (action) button.textContent = action[0];
}

// The verdict of a server's ID photo. `titleOf(check)`: a line's title in the report's words.
export function showVerdict(body, request, titleOf) {
  const spec = body.spec;
  const compliance = body.compliance;
  const good = Boolean(compliance && compliance.compliant);
  ui.verdict.hidden = false;
  ui.verdict.className = `verdict ${good ? "good" : "bad"}`;
  if (good) {
    verdictUi.text.textContent = `✓ Your photo meets the ${spec.name} rules we can measure.`;
    verdictUi.next.textContent = "Download it below. Before you send it, check the few things no measure can judge (in the full report).";
    verdictUi.next.hidden = false;
    setAction(verdictUi.camera, null);
    setAction(verdictUi.action, null);
    renderProblems([]);
    return;
  }
  const items = problems(compliance, spec, titleOf);
  const fails = items.filter((item) => item.state === "fail").length;
  verdictUi.text.textContent = fails
    ? `Not yet: this photo does not meet the ${spec.name} rules (${fails === 1 ? "one thing" : `${fails} things`} to change).`
    : `Almost: we could not decide ${items.length === 1 ? "one line" : `${items.length} lines`} of the ${spec.name} rules; check ${items.length === 1 ? "it" : "them"} yourself.`;
  const step = nextStep(compliance, spec, request);
  verdictUi.next.textContent = step.next;
  verdictUi.next.hidden = !step.next;
  setAction(verdictUi.camera, step.camera && cameraAvailable() ? ["Take it again with the camera", null] : null);
  verdictUi.camera.onclick = null; // app.js opens the camera (camera.js imports this module's importers)
  setAction(verdictUi.action, step.action || null);
  renderProblems(items);
}

// A verdict of plain words only (the cut-out made on the device).
export function showNote(text, className = "device") {
  ui.verdict.hidden = false;
  ui.verdict.className = `verdict ${className}`;
  verdictUi.text.textContent = text;
  verdictUi.next.hidden = true;
  setAction(verdictUi.camera, null);
  setAction(verdictUi.action, null);
  renderProblems([]);
}
