// The page's shared parts: its data (page-data), its elements, its state, and the small helpers
// every concern uses (formatting, the status line, the error box, the progress bar, the API key and
// the upload with progress). No concern of its own; imported by every other module.
export const $ = (id) => document.getElementById(id);
export const data = JSON.parse($("page-data").textContent);
export const specs = new Map(data.specs.map((spec) => [spec.id, spec]));
export const maxUploadBytes = data.max_upload_mb * 1024 * 1024;
export const ACCEPTED = ["image/jpeg", "image/png", "image/webp", "image/heic", "image/heif", "image/avif", "image/tiff", "image/bmp",
  "image/x-portable-pixmap", "image/x-portable-graymap", "image/x-portable-bitmap", "image/x-portable-anymap"];
// The server reads these; a browser may not show them (HEIC outside Safari, TIFF, PPM): no preview, still sent.
export const SERVER_ONLY = /\.(heic|heif|avif|tiff?|bmp|ppm|pgm|pbm|pnm)$/i;
export const FORMATS_TEXT = "JPEG, PNG, WebP, HEIC, AVIF, TIFF, BMP or PPM";
export const EXT = { "image/jpeg": "jpg", "image/png": "png", "image/webp": "webp" };
export const FORMAT_NAMES = { "image/jpeg": "JPEG", "image/png": "PNG", "image/webp": "WebP" };
export const MAX_RETRIES = 3;
export const CUTOUT_QUIET_TIMEOUT_MS = 30_000; // a cut-out request with no progress for this long: the device makes it
export const ondevice = data.ondevice; // null: this server does not offer the on-device cut-out

export const form = $("maker");
export const ui = {
  file: $("file"), camera: $("camera"), drop: $("drop"), dropPreview: $("drop-preview"), dropHint: $("drop-hint"),
  fileInfo: $("file-info"), search: $("spec-search"), specList: $("spec-list"), specCount: $("spec-count"),
  specDetails: $("spec-details"), swatches: $("swatches"), customRow: $("custom-row"), customColour: $("custom-colour"),
  customDot: $("custom-dot"), customRadio: $("custom-radio"), backgroundHelp: $("background-help"),
  gradient: $("gradient"), gradientRow: $("gradient-row"), maxKb: $("max-kb"), maxKbRow: $("max-kb-row"),
  maxKbHelp: $("max-kb-help"), sheet: $("sheet"), sheetRow: $("sheet-row"), paper: $("paper"), submit: $("submit"),
  progress: $("progress"), progressBar: $("progress-bar"), progressText: $("progress-text"), cancel: $("cancel"),
  status: $("status"), error: $("error"), errorText: $("error-text"), errorAction: $("error-action"),
  output: $("output"), outputHeading: $("output-heading"), verdict: $("verdict"),
  originalImg: $("original-img"), originalPlaceholder: $("original-placeholder"), originalSize: $("original-size"),
  target: $("target"), targetText: $("target-text"), resultImg: $("result-img"), resultCaption: $("result-caption"),
  downloads: $("downloads"), downloadPhoto: $("download-photo"), downloadSheet: $("download-sheet"),
  meta: $("result-meta"), report: $("report"), checks: $("checks"), timings: $("timings"),
  sheetFigure: $("sheet-figure"), sheetImg: $("sheet-img"), sheetCaption: $("sheet-caption"),
  localRow: $("local-row"), localOnly: $("local-only"), localHelp: $("local-help"), checksBlock: $("checks-block"),
  cameraStart: $("camera-start"), cameraPanel: $("camera-panel"), viewfinder: $("viewfinder"), video: $("camera-video"),
  outline: $("camera-outline"), outlineHead: $("outline-head"), outlineEyes: $("outline-eyes"), count: $("camera-count"),
  shutter: $("camera-shutter"), switchCamera: $("camera-switch"), stopCamera: $("camera-stop"), auto: $("camera-auto"),
  selfTimer: $("camera-timer"), guidanceSay: $("guidance-say"), guidanceLines: $("guidance-lines"), guidanceNote: $("guidance-note"),
};

export const state = {
  file: null, originalUrl: null, originalSize: null, resultUrls: [], xhr: null, busy: false,
  face: "single", maxKbTouched: false, started: false, lastSpec: null, timer: null, timedOut: false, requestLabel: () => "Working",
};

// ---------- small helpers ----------
export const fold = (text) => text.normalize("NFD").replace(/[\u0300-\u036f]/g, "").toLowerCase();
export const mm = (value) => (Math.abs(value - Math.round(value)) < 0.25 ? String(Math.round(value)) : value.toFixed(1));
export const pct = (value, digits = 0) => `${(value * 100).toFixed(digits)}%`;
export const kb = (bytes) => (bytes < 1024 * 1024 ? `${Math.max(1, Math.round(bytes / 1024))} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`);
export const seconds = (value) => `${value < 10 ? value.toFixed(1) : Math.round(value)} s`;
export const mode = () => form.elements.mode.value;
export const checkedSpec = () => form.querySelector('input[name="spec"]:checked');
export const currentSpec = () => { const radio = checkedSpec(); return (radio && !radio.closest(".spec-item").hidden && specs.get(radio.value)) || null; };
export const coarse = window.matchMedia("(pointer: coarse)").matches;
export const checkedFormat = () => form.elements.format.value;
export const colourLabel = (name) => name.charAt(0).toUpperCase() + name.slice(1).replace(/-/g, " ");

export function slug(text) {
  const stem = fold(text.replace(/\.[^.]*$/, "")).replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 40);
  return stem || "photo";
}

export function base64ToBlob(b64, type) {
  const binary = atob(b64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  return new Blob([bytes], { type });
}

export function say(text) { ui.status.textContent = text; }

export function showError(text, action) {
  ui.errorText.textContent = text;
  ui.error.hidden = false;
  if (action) {
    ui.errorAction.textContent = action[0];
    ui.errorAction.onclick = action[1];
    ui.errorAction.hidden = false;
  } else {
    ui.errorAction.hidden = true;
    ui.errorAction.onclick = null;
  }
  if (ui.error.getBoundingClientRect().bottom > window.innerHeight) ui.error.scrollIntoView({ block: "nearest", behavior: "smooth" });
}

export function hideError() { ui.error.hidden = true; }

// ---------- sending ----------
export function setBusy(busy) {
  state.busy = busy;
  ui.submit.disabled = busy;
  ui.progress.hidden = !busy;
  ui.status.classList.toggle("visually-hidden", busy); // the bar says it; screen readers still hear it
  ui.output.classList.toggle("busy", busy);
  ui.output.setAttribute("aria-busy", String(busy));
  if (!busy && state.timer) { clearInterval(state.timer); state.timer = null; }
}

export function phase(text, fraction) {
  if (fraction == null) ui.progressBar.removeAttribute("value");
  else ui.progressBar.value = Math.round(fraction * 100);
  ui.progressText.textContent = text;
}

// API_KEYS: the key is asked for once, when the API answers 401, and kept in this tab's session
// storage only; every API call sends it as a Bearer token.
export const KEY_ITEM = "pilotlight.apiKey";
export function apiKey(ask) {
  let key = null;
  try { key = sessionStorage.getItem(KEY_ITEM); } catch (err) { key = null; }
  if (ask) {
    key = (window.prompt("This server needs an API key. Paste your key (it is kept in this tab only):") || "").trim() || null;
    try { if (key) sessionStorage.setItem(KEY_ITEM, key); else sessionStorage.removeItem(KEY_ITEM); } catch (err) { key = null; }
  }
  return key;
}

// quietTimeout (ms, 0: none): give up ("timeout") when neither the upload nor the answer has moved
// for that long: a stalled upload, or a server that took the photo and never answers.
export function post(url, formData, started, quietTimeout = 0) {
  if (state.timer) { clearInterval(state.timer); state.timer = null; } // a retry uploads again
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    state.xhr = xhr;
    state.timedOut = false;
    xhr.open("POST", url);
    xhr.setRequestHeader("Accept", "application/json");
    const key = apiKey(false);
    if (key) xhr.setRequestHeader("Authorization", `Bearer ${key}`);
    xhr.responseType = "json";
    let uploaded = false;
    let quiet = null;
    const stillAlive = () => {
      clearTimeout(quiet);
      if (quietTimeout) quiet = setTimeout(() => { state.timedOut = true; xhr.abort(); }, quietTimeout);
    };
    const working = () => {
      const tick = () => phase(`${state.requestLabel()}… ${Math.round((performance.now() - started) / 1000)} s`, null);
      tick();
      if (!state.timer) state.timer = setInterval(tick, 1000);
    };
    xhr.upload.onprogress = (event) => {
      stillAlive();
      if (event.lengthComputable && !uploaded) phase(`Uploading… ${Math.round((event.loaded / event.total) * 100)}%`, event.loaded / event.total);
    };
    xhr.upload.onload = () => {
      uploaded = true;
      say(`${state.requestLabel()}…`);
      working();
      stillAlive();
    };
    xhr.onprogress = (event) => {
      stillAlive();
      if (event.lengthComputable && event.total > 200000) phase(`Receiving… ${Math.round((event.loaded / event.total) * 100)}%`, event.loaded / event.total);
    };
    xhr.onloadend = () => clearTimeout(quiet);
    xhr.onload = () => resolve({ status: xhr.status, body: xhr.response, retryAfter: Number(xhr.getResponseHeader("Retry-After")) || 0 });
    xhr.onerror = () => reject(new Error("network"));
    xhr.onabort = () => reject(new Error(state.timedOut ? "timeout" : "abort"));
    xhr.send(formData);
    stillAlive();
  });
}


export const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

// The report's words for a line (the server's, in page-data: the result and the live guidance share them).
export function lineTitle(name, passed) {
  const titles = data.lines[name];
  if (passed === null || passed === undefined) return titles.check || titles.fail;
  return passed ? titles.pass : titles.fail;
}

// One line of a checklist, as every list on the page shows it (the report's checks, the capture
// quality, the live guidance, the verdict's problems): a mark that screen readers skip, the line's
// state said in words for them instead, its title, and its detail when there is one.
export function checkItem({ state, mark, said, title, detail = "", detailTitle = "" }) {
  const item = document.createElement("li");
  item.className = state;
  const markSpan = Object.assign(document.createElement("span"), { className: "mark", textContent: mark });
  markSpan.setAttribute("aria-hidden", "true");
  const body = document.createElement("span");
  body.append(Object.assign(document.createElement("span"), { className: "visually-hidden", textContent: said }),
    Object.assign(document.createElement("strong"), { textContent: title }));
  if (detail) {
    const small = Object.assign(document.createElement("span"), { className: "detail", textContent: detail });
    if (detailTitle) small.title = detailTitle;
    body.append(small);
  }
  item.append(markSpan, body);
  return item;
}
