// The result: the photo, its downloads, the verdict first (verdict.js), then folded away the
// compliance report's lines, the capture quality and the time per step.
import { $, EXT, FORMAT_NAMES, base64ToBlob, checkItem, colourLabel, kb, lineTitle, mm, mode, pct, seconds, slug, state, ui } from "./common.js";
import { plainWords, showVerdict } from "./verdict.js";

// ---------- results ----------
export function clearResult() {
  for (const url of state.resultUrls) URL.revokeObjectURL(url);
  state.resultUrls = [];
  ui.resultImg.hidden = true;
  ui.resultImg.removeAttribute("src");
  ui.resultImg.classList.remove("checkered");
  ui.target.hidden = false;
  ui.resultCaption.textContent = mode() === "cutout" ? "The cut-out will appear here" : "Your ID photo will appear here";
  ui.verdict.hidden = true;
  $("report-details").open = false;
  ui.downloads.hidden = true;
  ui.downloadSheet.hidden = true;
  ui.meta.hidden = true;
  ui.report.hidden = true;
  ui.checksBlock.hidden = false;
  $("report-summary").textContent = "Every check and measurement";
  ui.sheetFigure.hidden = true;
  ui.sheetImg.removeAttribute("src");
}

export function objectUrl(blob) {
  const url = URL.createObjectURL(blob);
  state.resultUrls.push(url);
  return url;
}

function band(allowed) {
  const match = /^([\d.]+)-([\d.]+)$/.exec(allowed || "");
  return match ? [parseFloat(match[1]), parseFloat(match[2])] : null;
}
function upTo(allowed) {
  const match = /^<=\s*([\d.]+)/.exec(allowed || "");
  return match ? parseFloat(match[1]) : null;
}
function atLeast(allowed) {
  const match = /^>=\s*([\d.]+)/.exec(allowed || "");
  return match ? parseFloat(match[1]) : null;
}
const bandText = (allowed) => { const b = band(allowed); return b ? `${pct(b[0])}–${pct(b[1])}` : allowed; };

const mmValue = (value) => (value == null ? "(could not be measured)" : `${Number(value).toFixed(1)} mm`);
const mmBand = (allowed) => String(allowed).replace(/ \(.*\)$/, "");

const CHECK_TEXT = {
  pixel_size: (c) => [`Size ${String(c.value).replace("x", " × ")} px`, c.pass ? "exactly the required size" : `must be ${c.allowed} px`],
  dpi: (c) => [`Print resolution ${c.value == null ? "missing" : `${c.value} dpi`}`, c.pass ? "written into the file" : `must be ${c.allowed} dpi`],
  face_count: (c) => [c.value === 1 ? "One face" : `${c.value} faces`, c.pass ? "found again on the finished photo" : "the photo must show exactly one face"],
  head_height: (c) => [`Head size ${mmValue(c.value)}`, `chin to top of head; allowed ${mmBand(c.allowed)}`],
  crown_margin: (c) => [`Space above the head ${mmValue(c.value)}`, `allowed ${mmBand(c.allowed)}`],
  chin_margin: (c) => [`Space below the chin ${mmValue(c.value)}`, `allowed ${mmBand(c.allowed)}`],
  eye_line: (c) => [`Eyes ${mmValue(c.value)} above the bottom edge`, `allowed ${mmBand(c.allowed)}`],
  head_width: (c) => [`Head width ${mmValue(c.value)}`, `allowed ${mmBand(c.allowed)}`],
  side_margin: (c) => [`Space beside the head ${mmValue(c.value)}`, `allowed ${mmBand(c.allowed)}`],
  centre_x: (c) => [lineTitle("centre_x", c.pass), `centre line ${mmValue(c.value)} from the left edge; allowed ${mmBand(c.allowed)}`],
  eye_distance: (c) => [`Eyes ${mmValue(c.value)} apart`, `allowed ${mmBand(c.allowed)}`],
  yaw_degrees: (c) => [lineTitle("yaw_degrees", c.pass), `turned ${Math.abs(c.value).toFixed(0)}°; allowed up to ${upTo(c.allowed)}°`],
  pitch_degrees: (c) => [lineTitle("pitch_degrees", c.pass), `${Math.abs(c.value).toFixed(0)}° ${c.value > 0 ? "up" : "down"}; allowed up to ${upTo(c.allowed)}°`],
  roll_degrees: (c) => [lineTitle("roll_degrees", c.pass), `tilted ${Math.abs(c.value).toFixed(1)}°; allowed up to ${upTo(c.allowed)}°`],
  canvas_extended: (c) => [c.advice ? "Canvas extended" : "Nothing added", c.advice || "the whole photo comes from your original"],
  background_uniformity: (c) => [lineTitle("background_uniformity", c.pass), c.value == null ? "no background visible" : `variation ${Number(c.value).toFixed(1)}; allowed up to ${upTo(c.allowed)}`],
  background_clear: (c) => typeof c.value === "object" && c.value !== null
    ? [c.pass ? "Nothing and nobody behind you" : "Something or someone behind you", `${Math.round(100 * c.value.clutter)}% of your background holds something; ${c.value.other_faces} other face(s)`]
    : [c.pass ? "Nothing else beside the head" : "Someone or something beside the head", c.pass ? "the top corners are plain background" : `${Math.round(100 * c.value)}% of the top corners is not background`],
  background_colour: (c) => typeof c.value === "object" && c.value !== null
    ? [c.pass ? `Your background reads as ${colourLabel(c.value.nearest).toLowerCase()}` : "Your background is not an allowed colour", colourWords(c)]
    : [c.pass ? "Background colour allowed" : "Background colour not allowed", `off by ${Number(c.value).toFixed(1)}; allowed up to ${upTo(c.allowed)}`],
  background_even: (c) => [lineTitle("background_even", c.pass), `light varies by ${Number(c.value).toFixed(0)}; allowed up to ${upTo(c.allowed)}`],
  background_shadow: (c) => [c.pass ? "No shadow behind the head" : "Shadow behind the head", `${Math.round(100 * c.value)}% darker beside the head`],
  photographed_frame: (c) => ["Nothing painted in", c.advice],
  face_resolution: (c) => [c.pass ? "Enough detail for print" : "Too little detail for print", `${Math.round(c.value)} px between the eyes in your original`],
  capture_sharpness: (c) => [c.pass ? "Sharp" : "Blurred", `sharpness ${Number(c.value).toFixed(1)}; at least ${atLeast(c.allowed)}`],
  capture_exposure: (c) => [lineTitle("capture_exposure", c.pass), `highlights ${Math.round(100 * c.value.highlights)}%, ${(100 * c.value.clipped_black).toFixed(1)}% clipped to black, ${(100 * c.value.washed_out).toFixed(1)}% washed out`],
  capture_lighting: (c) => [lineTitle("capture_lighting", c.pass), `the darker half has ${Math.round(100 * c.value)}% of the brighter half's light`],
  hands: (c) => [c.pass ? "Hands away from the head" : "Hand or arm near the head", c.pass ? "nothing but the head and shoulders" : "skin beside the head"],
  head_covering: (c) => [c.pass === true ? "No hat or head covering" : c.pass === false ? "Hat or head covering" : "Hat or hair? Check it yourself", c.allowed],
  eyeglasses: (c) => [c.kind === "info" ? "Glasses: allowed with conditions" : c.pass === true ? "No glasses" : c.pass === false ? "Glasses: take them off" : "Glasses? Check it yourself", c.allowed],
  outline_kept: (c) => [c.pass ? "Your outline is your own" : "Your outline was cut where another person was removed", c.pass ? "no straight cut along your hair or face" : `a straight cut ${Number(c.value).toFixed(1)} eye distances long; our rule`],
  arms_near_head: (c) => [c.pass ? "Nothing beside or above the head" : "Arm or hand beside the head", c.pass ? "the outline is the head and shoulders" : `${Number(c.value).toFixed(1)} eye distances squared of you outside your head and shoulders; no authority's words found: our rule`],
  eyes_open: (c) => [lineTitle("eyes_open", c.pass), `${c.value} eyes seen open`],
  mouth_closed: (c) => c.pass === null
    ? [lineTitle("mouth_closed", null), "this document allows a natural smile"]
    : [lineTitle("mouth_closed", c.pass), /smile is allowed/.test(c.allowed || "") ? "a natural smile is allowed, a gaping mouth is not" : "neutral expression, lips together"],
};

// the kept wall's colour against the nearest allowed one, in words (the measures' limits: compliance.py)
function colourWords(c) {
  const name = colourLabel(c.value.nearest).toLowerCase();
  if (c.pass) return `closest to ${name}, within what a camera makes of a ${name} wall`;
  const parts = [];
  if (c.value.lightness < -70) parts.push(`much darker than ${name}`);
  else if (c.value.lightness > 40) parts.push(`much lighter than ${name}`);
  if (c.value.hue > 10) parts.push(`a different tint from ${name}`);
  return `${parts.join(", and ") || `too far from ${name}`}; the nearest allowed colour is ${name}`;
}

// what was done to the photographed pixels (issue 33: formatting, not fabrication)
const EDIT_WORDS = {
  crop_scale: "cropped and scaled", level: "straightened", replace_background: "background replaced",
  extend_canvas: "background and clothing painted in beyond your photo", adjust_tone: "tone adjusted",
};

function editsLine(compliance) {
  const edits = compliance.edits || [];
  const words = edits.map((e) => EDIT_WORDS[e.operation] || e.operation).join("; ");
  const share = Math.round(100 * (compliance.unphotographed_share || 0));
  const refused = edits.filter((e) => e.allowed === false).length;
  return {
    name: "edits", kind: "info", pass: null, value: null, allowed: "",
    title: "What we did to your photo", detail: `${words || "nothing"}${share ? `: ${share}% of the pixels were not photographed` : ": every pixel is from your photo"}${refused ? `; ${refused} of these the authority refuses (below)` : ""}`,
  };
}

// [title, detail] of a report line, in a person's words
function describeCheck(check) {
  const describe = check.title ? () => [check.title, check.detail]
    : check.kind === "not_checked" ? (c) => [c.advice, ""] // its advice says what we cannot check
    : check.kind === "edit" ? (c) => [`Edited: ${EDIT_WORDS[c.name.replace(/^edit_/, "")] || c.name}`, `refused by the authority (${c.allowed.replace(/^not allowed: /, "")})`]
    : CHECK_TEXT[check.name];
  const fallback = () => [check.name.replace(/_/g, " "), `${check.value} (allowed ${check.allowed})`];
  try {
    return describe ? describe(check) : fallback();
  } catch (err) {
    return fallback();
  }
}

export const checkTitle = (check) => describeCheck(check)[0];

export function renderChecks(compliance) {
  ui.checks.replaceChildren();
  const lines = [editsLine(compliance), ...compliance.checks];
  // failures first, then what could not be decided, then passes and information
  const rank = (c) => (c.pass === false ? 0 : c.pass === null && c.kind !== "info" ? 1 : 2);
  lines.sort((a, b) => rank(a) - rank(b));
  for (const check of lines) {
    // pass null: not a pass/fail line (information, or something we cannot check): neutral style
    const state = check.pass === true ? "pass" : check.pass === false ? "fail" : check.kind === "info" ? "info" : "unchecked";
    let [title, detail] = describeCheck(check);
    // a failed line, or a pose the estimate cannot decide: say what to do
    if (check.advice && (check.pass === false || (check.pass === null && (check.kind === "pose" || check.kind === "rule")))) detail = `${detail}. ${check.advice}`;
    detail = plainWords(detail);
    ui.checks.append(checkItem({
      state,
      mark: { pass: "✓", fail: "✗", info: "i", unchecked: "?" }[state],
      said: { pass: "Passed: ", fail: "Failed: ", info: "Note: ", unchecked: "Check yourself: " }[state],
      title,
      detail,
    }));
  }
}

// ---------- capture quality (advice on the uploaded photo; never part of the verdict) ----------
const QUALITY_VALUE = {
  sharpness: (v) => v.toFixed(2),
  under_exposure: (v) => `${pct(v, 1)} clipped to black`,
  over_exposure: (v) => `${pct(v, 1)} washed out`,
  luminance: (v) => pct(v),
  highlights: (v) => pct(v),
  dynamic_range: (v) => `${v.toFixed(1)} bits`,
  illumination_uniformity: (v) => `darker side at ${pct(v)}`,
  compression: (v) => `blockiness ${v.toFixed(2)}`,
};

function qualityLimit(item) {
  const t = item.threshold || {};
  const show = QUALITY_VALUE[item.name] || ((v) => String(v));
  const strip = (text) => text.replace(/ (too dark|washed out|bits)$/, "").replace(/^(darker side at|blockiness) /, "");
  if (t.min != null && t.max != null) return `allowed ${strip(show(t.min))}–${strip(show(t.max))}`;
  if (t.min != null) return `at least ${strip(show(t.min))}`;
  if (t.max != null) return `at most ${strip(show(t.max))}`;
  return "";
}

function renderQuality(items) {
  let section = $("quality");
  if (!section) {
    section = document.createElement("section");
    section.id = "quality";
    section.setAttribute("aria-labelledby", "quality-heading");
    const heading = document.createElement("h3");
    heading.id = "quality-heading";
    heading.textContent = "Capture quality of your photo";
    const note = document.createElement("p");
    note.className = "quality-note";
    note.textContent = "Advice from the photo you sent (ISO/IEC 29794-5 measures); it does not change the checks above.";
    const list = document.createElement("ul");
    list.className = "checklist quality";
    section.append(heading, note, list);
    ui.checks.after(section);
  }
  const list = section.querySelector("ul");
  list.replaceChildren();
  section.hidden = !items || !items.length;
  for (const item of items || []) {
    const verdict = item.passed === true ? "pass" : item.passed === false ? "fail" : "unknown";
    let detail = item.advice;
    if (item.value != null) {
      const show = QUALITY_VALUE[item.name] || ((v) => String(v));
      const measured = `${show(item.value)}; ${qualityLimit(item)}`;
      detail = item.passed ? measured : `${measured}. ${item.advice}`;
    }
    const li = checkItem({
      state: verdict,
      mark: { pass: "✓", fail: "!", unknown: "?" }[verdict],
      said: { pass: "Good: ", fail: "Could be better: ", unknown: "Not measured: " }[verdict],
      title: item.label || item.name.replace(/_/g, " "),
      detail,
      detailTitle: (item.threshold && item.threshold.reason) || "",
    });
    li.dataset.quality = item.name;
    list.append(li);
  }
}

function renderTimings(timings, roundTrip) {
  ui.timings.replaceChildren();
  const rows = Object.entries(timings || {});
  rows.push(["total on the server", rows.reduce((sum, [, value]) => sum + value, 0)]);
  rows.push(["with upload and download", roundTrip]);
  for (const [stage, value] of rows) {
    const tr = document.createElement("tr");
    const name = document.createElement("td");
    name.textContent = stage;
    const time = document.createElement("td");
    time.textContent = `${value.toFixed(2)} s`;
    tr.append(name, time);
    ui.timings.append(tr);
  }
}

export async function showImage(img, blob) {
  img.src = objectUrl(blob);
  try { await img.decode(); } catch (err) { /* shown as broken image; the download still works */ }
  img.width = img.naturalWidth;
  img.height = img.naturalHeight;
}

export async function showResult(body, request, roundTrip) {
  clearResult();
  const serverTime = Object.values(body.timings || {}).reduce((sum, value) => sum + value, 0);
  const type = body.content_type;
  const ext = EXT[type] || "bin";
  const format = FORMAT_NAMES[type] || type;
  const photoB64 = request.sheet ? body.photo : body.image;
  const photo = base64ToBlob(photoB64, type);
  const width = request.sheet ? body.spec.width_px : body.width;
  const height = request.sheet ? body.spec.height_px : body.height;
  let name;
  let alt;
  let meta;
  if (request.mode === "cutout") {
    name = `${slug(request.fileName)}-${body.kind || "cutout"}-${width}x${height}.${ext}`;
    alt = "Your photo with the background removed";
    meta = `${width} × ${height} px · ${format} · ${kb(photo.size)} · made in ${seconds(serverTime)}`;
    ui.resultCaption.textContent = "Background removed";
    ui.resultImg.classList.toggle("checkered", !request.background);
  } else {
    const spec = body.spec;
    name = `${spec.id}-${width}x${height}.${ext}`;
    alt = `Your ${spec.name} photo`;
    const dpi = body.dpi || spec.dpi;
    meta = `${width} × ${height} px · ${mm(spec.width_mm)} × ${mm(spec.height_mm)} mm at ${dpi} dpi · ${format} · ${kb(photo.size)} · made in ${seconds(serverTime)}`;
    ui.resultCaption.textContent = spec.name;
    showVerdict(body, request, checkTitle);
    renderChecks(body.compliance);
    const judged = body.compliance.checks.filter((c) => c.kind !== "info" && c.kind !== "not_checked");
    $("report-summary").textContent = `The full report: ${judged.filter((c) => c.pass === true).length} of ${judged.length} checks passed, with every measurement`;
    renderQuality(body.quality);
    renderTimings(body.timings, roundTrip);
    ui.report.hidden = false;
  }
  ui.resultImg.alt = alt;
  await showImage(ui.resultImg, photo);
  ui.target.hidden = true;
  ui.resultImg.hidden = false;
  ui.downloadPhoto.href = ui.resultImg.src;
  ui.downloadPhoto.download = name;
  ui.downloadPhoto.textContent = `Download ${request.mode === "cutout" ? "cut-out" : "photo"} (${name})`;
  ui.downloads.hidden = false;
  ui.meta.textContent = `${meta} (${seconds(roundTrip)} with the upload).`;
  ui.meta.hidden = false;
  if (request.sheet) {
    const sheet = base64ToBlob(body.image, type);
    const sheetName = `${body.spec.id}-${width}x${height}-sheet-${body.paper.id}-${body.copies}x.${ext}`;
    ui.sheetImg.alt = `Print sheet: ${body.copies} copies on ${body.paper.name} paper`;
    await showImage(ui.sheetImg, sheet);
    ui.sheetCaption.textContent = `Print sheet: ${body.copies} copies on ${body.paper.name} paper, ${body.sheet_px[0]} × ${body.sheet_px[1]} px at ${body.dpi} dpi · ${kb(sheet.size)}. Print it at 100% (no "fit to page"), then cut along the corner marks.`;
    ui.sheetFigure.hidden = false;
    ui.downloadSheet.href = ui.sheetImg.src;
    ui.downloadSheet.download = sheetName;
    ui.downloadSheet.textContent = `Download print sheet (${sheetName})`;
    ui.downloadSheet.hidden = false;
  }
}
