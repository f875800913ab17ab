// On this device: the cut-out made in the browser (ondevice.js, imported only when needed) when the
// person keeps the photo on the device or the server cannot answer, and its result.
import { $, EXT, FORMAT_NAMES, colourLabel, currentSpec, data, hideError, kb, mm, mode, ondevice, phase, say, seconds, setBusy, showError, slug, state, ui } from "./common.js";
import { clearResult, showImage } from "./results.js";
import { showNote } from "./verdict.js";

// ---------- on this device ----------
const DEVICE_WORDS = {
  busy: "Made on your device: the server was busy.",
  unreachable: "Made on your device: the server could not be reached.",
  timeout: "Made on your device: the server took too long to answer.",
  local: "Made on your device: your photo never left it.",
};
const ID_PHOTO_NEEDS_SERVER = "This is the cut-out only: the ID photo needs the server (it finds your face, sizes and places it to the spec's rules and checks the result).";

// What the cut-out made here for an ID photo is, said plainly: the chosen colour is honoured, the
// spec's size cannot be (placing the head to the rules needs the server's face and landmark models).
function idPhotoWords(request, result) {
  const spec = currentSpec();
  const colour = request.background === "keep" ? "with a transparent background (your own background is not kept here)"
    : request.background.startsWith("#") ? `on the colour you picked (${request.background})`
    : `on ${colourLabel(request.background).toLowerCase()}`;
  const size = spec ? `It is not sized to the ${spec.name} rules (${mm(spec.width_mm)} × ${mm(spec.height_mm)} mm): ` : "";
  return `${ID_PHOTO_NEEDS_SERVER} ${size}this is your whole photo, ${result.width} × ${result.height} px, ${colour}.`;
}

export function updateLocalHelp() {
  if (!ondevice) return;
  const cutout = mode() === "cutout";
  ui.localHelp.textContent = ui.localOnly.checked
    ? (cutout
      ? "Nothing is uploaded: the cut-out is made in this browser with a smaller model than the server's (edges are coarser). The first time, the browser downloads it (about " + kb(ondevice.runtime.size + ondevice.wasm.size + ondevice.model.size) + ") and keeps it."
      : "Nothing is uploaded, so only the cut-out can be made here: on the background colour you choose, but not sized to the photo type's rules (placing your head needs the server, which finds your face). The ID photo, the print sheet and the checks need the server: switch this off to make them.")
    : "Nothing leaves your device: the cut-out is made in this browser. ID photos need the server.";
  ui.submit.textContent = ui.localOnly.checked ? "Remove the background on this device" : (cutout ? "Remove the background" : "Make my ID photo");
}

export function offerCutout(request, reason) {
  return ["Cut out the background on this device", () => { hideError(); runOnDevice(request, reason); }];
}

const hexToRgb = (hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));

function deviceBackground(request) {
  if (request.mode !== "cutout" && (!request.background || request.background === "keep")) return null;
  if (!request.background) return request.format === "jpeg" ? [255, 255, 255] : null;
  if (request.background.startsWith("#")) return hexToRgb(request.background);
  return data.colours[request.background] ? hexToRgb(data.colours[request.background]) : [255, 255, 255];
}

export async function runOnDevice(request, reason) {
  const idPhoto = request.mode !== "cutout";
  if (!ondevice) {
    showError(`${reason === "busy" ? "The server is busy" : "The server could not be reached"}, and this server does not offer the cut-out on your device. Please try again in a moment.`);
    return;
  }
  clearResult();
  setBusy(true);
  ui.cancel.hidden = true; // a run in WebAssembly cannot be stopped half-way
  phase("Preparing the on-device model…", null);
  say(reason === "local" ? "Working on your device…" : `${reason === "busy" ? "The server is busy" : "The server can't answer"}: making the cut-out on your device…`);
  try {
    const device = await import(ondevice.module);
    const result = await device.cutout(state.file, ondevice, { onPhase: (text) => phase(text, null) });
    const type = idPhoto && !deviceBackground(request) ? "image/png" : `image/${request.format}`;
    const blob = await device.encode(device.compose(result, deviceBackground(request)), type);
    setBusy(false);
    await showDeviceResult(blob, result, request, reason);
    say(`${DEVICE_WORDS[reason]}${idPhoto ? ` ${idPhotoWords(request, result)}` : ""}`);
    ui.outputHeading.focus();
  } catch (err) {
    setBusy(false);
    say("");
    showError(`The cut-out on this device failed (${err.message}).${reason === "local" ? " Switch off “Keep my photo on this device” to use the server." : " Please try again in a moment."}`);
  } finally {
    ui.cancel.hidden = false;
    if (state.busy) setBusy(false);
  }
}

async function showDeviceResult(blob, result, request, reason) {
  const idPhoto = request.mode !== "cutout";
  const ext = EXT[blob.type] || "png";
  const name = `${slug(request.fileName)}-cutout-${result.width}x${result.height}.${ext}`;
  ui.resultCaption.textContent = "Background removed on your device";
  ui.resultImg.classList.toggle("checkered", !deviceBackground(request));
  ui.resultImg.alt = "Your photo with the background removed";
  await showImage(ui.resultImg, blob);
  ui.target.hidden = true;
  ui.resultImg.hidden = false;
  showNote(`${DEVICE_WORDS[reason]}${idPhoto ? ` ${idPhotoWords(request, result)}` : ""}`);
  ui.downloadPhoto.href = ui.resultImg.src;
  ui.downloadPhoto.download = name;
  ui.downloadPhoto.textContent = `Download cut-out (${name})`;
  ui.downloads.hidden = false;
  ui.meta.textContent = `${result.width} × ${result.height} px · ${FORMAT_NAMES[blob.type] || blob.type} · ${kb(blob.size)} · made on your device in ${seconds(result.ms / 1000)} (u2netp, ${result.stats.threads} thread${result.stats.threads === 1 ? "" : "s"}).`;
  ui.meta.hidden = false;
  renderDeviceTimings(result);
  ui.checksBlock.hidden = true;
  $("report-summary").textContent = "How long each step took on your device";
  ui.report.hidden = false;
}

function renderDeviceTimings(result) {
  const { stats } = result;
  const runs = stats.runs;
  const rows = [
    ["download_bytes", stats.fromCache ? "runtime and model, from the browser's cache" : "runtime and model downloaded", stats.downloadBytes, kb(stats.downloadBytes)],
    ["network_bytes", "of which over the network", stats.transferBytes, kb(stats.transferBytes)],
    ["load_ms", "fetch and check (sha256) the runtime and model", stats.loadMs, `${(stats.loadMs / 1000).toFixed(2)} s`],
    ["session_ms", "start the model", stats.sessionMs, `${(stats.sessionMs / 1000).toFixed(2)} s`],
    ["first_run_ms", "first cut-out on this device", runs[0].ms, `${(runs[0].ms / 1000).toFixed(2)} s`],
  ];
  if (runs.length > 1) rows.push(["warm_run_ms", "this cut-out (model warm)", result.ms, `${(result.ms / 1000).toFixed(2)} s`]);
  rows.push(["infer_ms", "of which the model itself", result.inferMs, `${(result.inferMs / 1000).toFixed(2)} s`]);
  ui.timings.replaceChildren();
  for (const [key, label, value, text] of rows) {
    const tr = document.createElement("tr");
    tr.dataset.key = key;
    tr.dataset.value = String(value);
    const name = document.createElement("td");
    name.textContent = label;
    const cell = document.createElement("td");
    cell.textContent = text;
    tr.append(name, cell);
    ui.timings.append(tr);
  }
}
