// The form's choices: the spec list (search, grouped by country), the background swatches, the
// mode (ID photo or background only) and the empty result's size.
import { $, checkedFormat, checkedSpec, colourLabel, currentSpec, data, fold, form, mm, mode, state, ui } from "./common.js";
import { clearResult } from "./results.js";
import { updateLocalHelp } from "./local.js";

// ---------- spec list: search, grouped by country ----------
// Search: every word typed must start a word of the spec's name, id, country or sizes, so "us"
// finds the United States but not "Australian", and "35x45" finds the 35 x 45 mm photos.
const words = (text) => fold(text).replace(/(\d)\s*[x×*]\s*(?=\d)/g, "$1x").split(/[^a-z0-9.]+/).filter(Boolean);
function haystack(spec) {
  const country = data.countries[spec.country] || spec.country;
  return ` ${words([spec.name, spec.id, country, spec.country, `${mm(spec.width_mm)}x${mm(spec.height_mm)} mm`,
    `${spec.width_mm}x${spec.height_mm}`, `${spec.width_px}x${spec.height_px} px`].join(" ")).join(" ")}`;
}
const searchText = new Map(data.specs.map((spec) => [spec.id, haystack(spec)]));

export function renderSpecs() {
  const typed = words(ui.search.value);
  const before = currentSpec();
  let first = null;
  let count = 0;
  for (const group of ui.specList.querySelectorAll(".spec-group")) {
    let shown = 0;
    for (const item of group.querySelectorAll(".spec-item")) {
      const match = typed.every((word) => searchText.get(item.dataset.spec).includes(` ${word}`));
      item.hidden = !match;
      if (match) { shown += 1; first = first || item; }
    }
    group.hidden = !shown;
    count += shown;
  }
  if (!count) {
    ui.specCount.textContent = `No photo type matches “${ui.search.value.trim()}”. Try a country, a document or a size such as 35x45.`;
  } else if (typed.length) {
    ui.specCount.textContent = `${count} of ${data.specs.length} photo types match.`;
  } else {
    ui.specCount.textContent = "";
  }
  // The choice stays while it is listed; otherwise the first match is chosen (one match: that one).
  if (!currentSpec() && first) first.querySelector("input").checked = true;
  if (currentSpec() !== before) onSpecChange();
  revealChecked();
}

export function revealChecked() {
  const radio = checkedSpec();
  if (!radio || radio.closest(".spec-item").hidden) return;
  const item = radio.closest(".spec-item");
  const list = ui.specList;
  const top = item.offsetTop; // the list is the items' offsetParent (position: relative)
  if (top < list.scrollTop || top + item.offsetHeight > list.scrollTop + list.clientHeight) {
    list.scrollTop = Math.max(0, top - list.clientHeight / 3);
  }
}

export function onSpecChange() {
  const spec = currentSpec();
  if (!spec) {
    ui.specDetails.textContent = "";
    updateTarget();
    return;
  }
  const country = data.countries[spec.country] || spec.country;
  const parts = [
    `${spec.name} (${country}): ${mm(spec.width_mm)} × ${mm(spec.height_mm)} mm, ${spec.width_px} × ${spec.height_px} px at ${spec.dpi} dpi.`,
    `Background: ${spec.backgrounds.map((name) => colourLabel(name).toLowerCase()).join(" or ")}.`,
  ];
  if (spec.max_kb) parts.push(`Online forms take up to ${spec.max_kb} KB.`);
  ui.specDetails.textContent = parts.join(" ");
  ui.specDetails.title = `Source: ${spec.source}`;
  if (!state.maxKbTouched) ui.maxKb.value = spec.max_kb ? String(spec.max_kb) : "";
  updateSwatches();
  updateTarget();
}

// ---------- background swatches ----------
export function updateSwatches(reset = false) {
  const cutout = mode() === "cutout";
  const spec = currentSpec();
  const allowed = cutout || !spec ? null : new Set(spec.backgrounds);
  let checked = form.querySelector('input[name="background"]:checked');
  for (const label of ui.swatches.querySelectorAll(".swatch")) {
    const name = label.dataset.name;
    let show = true;
    if (name === "transparent") show = cutout;
    else if (name === "keep") show = !cutout;
    else if (name !== "custom") show = cutout || !allowed || allowed.has(name);
    label.hidden = !show;
    const text = label.querySelector("span");
    if (name === "keep" || name === "transparent" || name === "custom") continue;  // their own words
    if (allowed && spec && name === spec.default_background) text.textContent = `${colourLabel(name)} (usual)`;
    else text.textContent = colourLabel(name);
  }
  if (reset || !checked || checked.closest(".swatch").hidden) {
    const fallback = cutout ? "transparent" : (spec ? spec.default_background : "white");
    checked = ui.swatches.querySelector(`.swatch[data-name="${fallback}"] input`);
    checked.checked = true;
  }
  onBackgroundChange();
}

export function onBackgroundChange() {
  const checked = form.querySelector('input[name="background"]:checked');
  const custom = checked === ui.customRadio;
  ui.customRow.hidden = !custom;
  const spec = currentSpec();
  let help = "";
  if (mode() === "cutout") {
    if (checked.value === "" && checkedFormat() === "jpeg") help = "JPEG has no transparency: the background will be white. Choose PNG or WebP to keep it transparent.";
    else if (checked.value === "") help = "Transparent: you can place the cut-out on anything later.";
  } else if (custom && spec) {
    help = `${spec.name} rules ask for ${spec.backgrounds.map((name) => colourLabel(name).toLowerCase()).join(" or ")}; another colour may be refused.`;
  } else if (spec && spec.background_note) {
    // why the spec opens on its default (issue 33): the authority's stand on a replaced background
    help = checked.value === "keep" || !spec.background_refused ? spec.background_note
      : `${spec.background_note} A new background makes the photo fail that rule.`;
  }
  ui.backgroundHelp.textContent = help;
}

export function backgroundValue() {
  const checked = form.querySelector('input[name="background"]:checked');
  if (!checked) return "";
  return checked === ui.customRadio ? ui.customColour.value : checked.value;
}

// ---------- mode: ID photo or background only ----------
export function setMode() {
  const cutout = mode() === "cutout";
  $("spec-step").hidden = cutout;
  ui.maxKbRow.hidden = cutout;
  ui.maxKbHelp.hidden = cutout;
  ui.sheetRow.hidden = cutout;
  ui.gradientRow.hidden = cutout;
  form.querySelector('[data-format="webp"]').hidden = !cutout;
  const format = form.querySelector(`input[name="format"][value="${cutout ? "png" : "jpeg"}"]`);
  format.checked = true;
  ui.submit.textContent = cutout ? "Remove the background" : "Make my ID photo";
  updateLocalHelp();
  updateSwatches(true);
  updateTarget();
  clearResult();
  state.started = false; // the other mode's result: the person presses its button
}

export function updateTarget() {
  const spec = currentSpec();
  if (mode() === "cutout") {
    const size = state.originalSize;
    ui.target.style.aspectRatio = size ? `${size[0]} / ${size[1]}` : "3 / 4";
    ui.targetText.textContent = size ? `${size[0]} × ${size[1]} px` : "";
  } else if (spec) {
    ui.target.style.aspectRatio = `${spec.width_px} / ${spec.height_px}`;
    ui.targetText.textContent = `${spec.width_px} × ${spec.height_px} px`;
  } else {
    ui.target.style.aspectRatio = "3 / 4";
    ui.targetText.textContent = "";
  }
}
