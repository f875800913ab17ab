// pilotlight's page, the entry module: it wires the concerns together. Plain JavaScript ES modules,
// no dependencies, no build step: common.js (data, elements, helpers), form.js (spec list, swatches,
// mode), upload.js (the photo and sending it), results.js (the answer; verdict.js its plain verdict
// first), local.js (the cut-out on this device, through ondevice.js), camera.js and guidance.js (the
// camera with live guidance).
// Every module is served at a URL that names the assets' version, so their relative imports are
// versioned too and cached as immutable.
import { $, checkedSpec, coarse, currentSpec, data, form, mode, ondevice, specs, state, ui } from "./common.js";
import { onBackgroundChange, onSpecChange, renderSpecs, revealChecked, setMode } from "./form.js";
import { updateLocalHelp } from "./local.js";
import { clearResult } from "./results.js";
import { onFileInput, refresh, submit } from "./upload.js";
import { openCamera, wireCamera } from "./camera.js";

// ---------- wiring ----------
ui.file.addEventListener("change", onFileInput);
ui.camera.addEventListener("change", onFileInput);
ui.search.addEventListener("input", renderSpecs);
ui.search.addEventListener("keydown", (event) => {
  if (event.key === "Enter" || event.key === "ArrowDown") {
    event.preventDefault(); // Enter here must not send the form
    const radio = currentSpec() ? checkedSpec() : null;
    if (radio) radio.focus();
  }
});
ui.specList.addEventListener("change", onSpecChange);
for (const radio of form.elements.mode) radio.addEventListener("change", setMode);
for (const radio of form.elements.format) radio.addEventListener("change", onBackgroundChange);
ui.swatches.addEventListener("change", onBackgroundChange);
ui.customColour.addEventListener("input", () => {
  ui.customDot.setAttribute("fill", ui.customColour.value);
  ui.customRadio.checked = true;
  onBackgroundChange();
});
// A result on the page follows the choices: a new photo type, background or file format makes it again
// from the photo already chosen (upload.js: refresh), with no button to press.
ui.specList.addEventListener("change", refresh);
ui.swatches.addEventListener("change", refresh);
ui.customColour.addEventListener("change", refresh);
ui.gradient.addEventListener("change", refresh);
for (const radio of form.elements.format) radio.addEventListener("change", refresh);
ui.search.addEventListener("input", () => { if (mode() === "idphoto" && currentSpec() && currentSpec() !== state.lastSpec) refresh(); });
// The verdict's "take it again with the camera": the camera, with its live guidance, in view.
$("verdict-camera").addEventListener("click", async () => {
  await openCamera();
  ui.cameraPanel.scrollIntoView({ block: "start" });
});
ui.maxKb.addEventListener("input", () => { state.maxKbTouched = true; });
ui.sheet.addEventListener("change", () => { ui.paper.disabled = !ui.sheet.checked; });
ui.cancel.addEventListener("click", () => { if (state.xhr) state.xhr.abort(); });
ui.localOnly.addEventListener("change", () => { updateLocalHelp(); clearResult(); });
form.addEventListener("submit", submit);

// Enhance the plain form: the custom colour only works with JavaScript.
ui.swatches.querySelector('.swatch[data-name="custom"]').hidden = false;
ui.paper.disabled = !ui.sheet.checked;
// The on-device switch only where this server offers the runtime and the model.
ui.localRow.hidden = !ondevice;
updateLocalHelp();

// A first guess at the spec from the browser's region (en-US -> US passport), unless the
// address names one (/?spec=uk-passport).
const wanted = new URLSearchParams(window.location.search).get("spec");
const pickSpec = (id) => { form.querySelector(`input[name="spec"][value="${id}"]`).checked = true; };
if (wanted && specs.has(wanted)) {
  pickSpec(wanted);
} else {
  const regions = (navigator.languages || [navigator.language || ""]).map((tag) => (tag.split("-")[1] || "").toUpperCase());
  for (const region of regions) {
    const local = data.specs.filter((spec) => spec.country === (region === "UK" ? "GB" : region));
    const pick = local.find((spec) => /passport/i.test(spec.name)) || local[0];
    if (pick) { pickSpec(pick.id); break; }
  }
}
if (form.elements.mode.value !== "idphoto") setMode(); // the browser restored the other mode
onSpecChange();
revealChecked();
ui.dropHint.textContent = coarse ? "Use a photo of yourself:" : "Drag a photo here, or";
wireCamera();
