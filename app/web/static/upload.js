// The photo and sending it: a file chosen, dropped or taken, checked before it is sent; the form sent
// to the JSON API (retries on a busy server, the device's cut-out as the fallback) and a person's
// words for every error.
import {
  $, ACCEPTED, CUTOUT_QUIET_TIMEOUT_MS, FORMATS_TEXT, MAX_RETRIES, SERVER_ONLY, apiKey, checkedFormat, coarse, currentSpec,
  data, hideError, kb, maxUploadBytes, mode, ondevice, phase, post, say, setBusy, showError, sleep, state, ui,
} from "./common.js";
import { backgroundValue, updateTarget } from "./form.js";
import { offerCutout, runOnDevice } from "./local.js";
import { clearResult, showResult } from "./results.js";

// ---------- the photo ----------
const fileError = $("file-error");
const chooseLabel = () => document.querySelector('label[for="file"]');

// A file that cannot be used: the page as before any photo (no preview, no old result, no old
// size), and the error beside the file picker, where the person looks.
function refuseFile(text) {
  state.file = null;
  if (state.originalUrl) URL.revokeObjectURL(state.originalUrl);
  state.originalUrl = null;
  state.originalSize = null;
  clearResult();
  ui.dropPreview.hidden = true;
  ui.dropPreview.removeAttribute("src");
  ui.originalImg.hidden = true;
  ui.originalImg.removeAttribute("src");
  ui.originalPlaceholder.hidden = false;
  ui.originalSize.textContent = "";
  ui.fileInfo.hidden = true;
  ui.fileInfo.textContent = "";
  chooseLabel().textContent = "Choose a photo";
  ui.dropHint.textContent = coarse ? "Use a photo of yourself:" : "Drag a photo here, or";
  updateTarget();
  say("");
  fileError.textContent = text;
  fileError.hidden = false;
  if (fileError.getBoundingClientRect().bottom > window.innerHeight || fileError.getBoundingClientRect().top < 0) {
    fileError.scrollIntoView({ block: "nearest" });
  }
}

// `start`: make the result at once (choosing a photo starts the work), except on the device, where
// the first run downloads the model: there the person presses the button.
export function chooseFile(file, { start = true } = {}) {
  hideError();
  fileError.hidden = true;
  if (!file) return Promise.resolve();
  if (!ACCEPTED.includes(file.type) && !SERVER_ONLY.test(file.name)) {
    refuseFile(`“${file.name}” is not a photo we can read. Choose a ${FORMATS_TEXT} image.`);
    return Promise.resolve();
  }
  if (file.size > maxUploadBytes) {
    refuseFile(`This photo is ${kb(file.size)}; the limit is ${data.max_upload_mb} MB. Choose a smaller photo, or a lower-resolution copy of it.`);
    return Promise.resolve();
  }
  const go = () => {
    if (!start || ui.localOnly.checked || state.file !== file) return;
    if (!state.busy) { submit(); return; }
    state.started = true; // the photo before is still being made: stop it, then make this one (refresh)
    again = true;
    if (state.xhr) state.xhr.abort();
  };
  state.file = file;
  state.started = false;
  state.face = "single";
  if (state.originalUrl) URL.revokeObjectURL(state.originalUrl);
  state.originalUrl = URL.createObjectURL(file);
  state.originalSize = null;
  clearResult();
  ui.dropPreview.src = state.originalUrl;
  ui.dropPreview.hidden = false;
  ui.dropPreview.alt = "Chosen photo";
  ui.dropHint.textContent = coarse ? "Use another photo:" : "Drag another photo here, or";
  chooseLabel().textContent = "Choose another photo";
  ui.fileInfo.hidden = false;
  ui.fileInfo.textContent = `${file.name} · ${kb(file.size)}`;
  ui.originalImg.src = state.originalUrl;
  ui.originalImg.hidden = false;
  ui.originalPlaceholder.hidden = true;
  return ui.originalImg.decode().then(() => {
    if (state.file !== file) return;
    const size = [ui.originalImg.naturalWidth, ui.originalImg.naturalHeight];
    state.originalSize = size;
    ui.originalSize.textContent = `(${size[0]} × ${size[1]} px)`;
    ui.fileInfo.textContent = `${file.name} · ${size[0]} × ${size[1]} px · ${kb(file.size)}`;
    if (Math.min(...size) < 400) say("This photo is quite small; the result may look soft. A larger photo gives a sharper result.");
    else if (ui.localOnly.checked) say(`Photo ready. Press “${ui.submit.textContent}”.`);
    updateTarget();
    go();
  }).catch(() => {
    if (state.file !== file) return;
    if (SERVER_ONLY.test(file.name) || /heic|heif|tiff|portable/.test(file.type)) {
      ui.originalImg.hidden = true;
      ui.originalPlaceholder.hidden = false;
      ui.dropPreview.hidden = true;
      say("This browser cannot preview this format, but the server reads it.");
      go();
      return;
    }
    refuseFile(`This browser cannot show “${file.name}”; it may be damaged or not a photo. Choose another photo.`);
  });
}

// A choice changed (the background, the photo type, the gradient, the format) while a result is
// shown: the result is made again at once from the photo already chosen, with no button to press.
// The server makes it again (it keeps no upload and no matte between requests: nothing of the photo
// is stored), so the report's background lines judge the new choice too. One at a time: a change
// while one is being made is made once that one is done.
let again = false;
let refreshTimer = null;
export function refresh() {
  if (!state.file || !state.started) return;
  clearTimeout(refreshTimer);
  refreshTimer = setTimeout(() => {
    if (state.busy) { again = true; return; }
    submit(null, { quiet: true });
  }, 400);
}

export function onFileInput(event) {
  const file = event.target.files && event.target.files[0];
  chooseFile(file);
  event.target.value = ""; // choosing the same file again still fires "change"
}

// Drag and drop: the zone, and anywhere on the page (a photo dropped beside the zone must not
// make the browser navigate away from the page).
let dragDepth = 0;
const hasFiles = (event) => event.dataTransfer && Array.from(event.dataTransfer.types || []).includes("Files");
window.addEventListener("dragenter", (event) => {
  if (!hasFiles(event)) return;
  event.preventDefault();
  dragDepth += 1;
  document.body.classList.add("dragging");
});
window.addEventListener("dragover", (event) => {
  if (!hasFiles(event)) return;
  event.preventDefault();
  event.dataTransfer.dropEffect = "copy";
});
window.addEventListener("dragleave", () => {
  dragDepth = Math.max(0, dragDepth - 1);
  if (!dragDepth) document.body.classList.remove("dragging");
});
window.addEventListener("drop", (event) => {
  if (!hasFiles(event)) return;
  event.preventDefault();
  dragDepth = 0;
  document.body.classList.remove("dragging");
  chooseFile(event.dataTransfer.files[0]);
});

export function humanError(status, error, request) {
  const code = error && error.code;
  const message = (error && error.message) || "";
  switch (code) {
    case "face_count":
      return {
        text: `We found ${error.faces} faces; choose a photo with just you in it.`,
        action: request.mode === "idphoto" ? ["Use the biggest face instead", () => { state.face = "largest"; submit(); }] : null,
      };
    case "no_face":
      return { text: "We couldn't find a face in this photo. Choose one where your face is clearly visible, looking at the camera." };
    case "photo_cut_off":
      return {
        text: {
          bottom: "The photo is cut off above your chin. Choose one that shows your whole face and your shoulders.",
          top: "The photo is cut off above your head. Choose one with some space above your hair.",
          left: "The photo is cut off too close to the side of your head. Choose one with space on both sides of your head.",
          right: "The photo is cut off too close to the side of your head. Choose one with space on both sides of your head.",
        }[error.edge] || message,
      };
    case "max_kb_unreachable":
      return {
        text: request.format === "png"
          ? `A PNG of this photo can't be as small as ${request.maxKb} KB (it is at least ${Math.ceil(error.smallest_kb)} KB). Choose JPEG, or raise the size limit.`
          : `This photo can't be made as small as ${request.maxKb} KB; the smallest we can make is ${Math.ceil(error.smallest_kb)} KB. Raise the size limit or leave it empty.`,
      };
    case "payload_too_large":
      return { text: `This photo is too large to send (the limit is ${data.max_upload_mb} MB). Choose a smaller photo.` };
    case "image_too_large":
      return { text: "This photo has too many pixels for the server. Choose a smaller copy of it (for example, one sent by a messaging app)." };
    case "unsupported_media_type":
      return { text: `This file isn't a photo we can read. Choose a ${FORMATS_TEXT} image.` };
    case "invalid_image":
    case "empty_image":
      return { text: "This photo looks damaged or empty. Choose another one." };
    case "busy":
      return { text: "The server is busy with other photos right now. Please try again in a moment." };
    case "not_ready":
      return { text: "The server is still starting up. Please try again in a few seconds." };
    case "sheet_does_not_fit":
      return { text: "This photo size does not fit on that paper. Choose a larger paper size." };
    default:
      if (message) return { text: message };
      return { text: status >= 500 ? "Something went wrong on the server. Please try again." : `The request failed (HTTP ${status}).` };
  }
}

// `quiet`: made again after a changed choice (refresh): the focus stays on the choice.
export async function submit(event, { quiet = false } = {}) {
  if (event) event.preventDefault();
  if (state.busy) return;
  hideError();
  if (!state.file) {
    showError("Choose a photo first: drag it onto the page, or press “Choose a photo”.");
    ui.file.focus();
    return;
  }
  const cutout = mode() === "cutout";
  const spec = currentSpec();
  if (!cutout && !spec) {
    showError("Choose which photo you need from the list (clear the search to see them all).");
    ui.search.focus();
    return;
  }
  const maxKbText = ui.maxKb.value.trim();
  if (!cutout && maxKbText && !(Number.isInteger(Number(maxKbText)) && Number(maxKbText) >= 1)) {
    showError("The largest file size must be a whole number of KB, such as 240 (or leave it empty).");
    ui.maxKb.focus();
    return;
  }
  const request = {
    mode: mode(), format: checkedFormat(), background: backgroundValue(), maxKb: maxKbText,
    sheet: !cutout && ui.sheet.checked, fileName: state.file.name,
  };
  const formData = new FormData();
  formData.append("image", state.file, state.file.name);
  formData.append("format", request.format);
  if (request.background) formData.append("background", request.background);
  let url = "/api/v1/remove-background";
  if (!cutout) {
    url = request.sheet ? "/api/v1/idphoto/sheet" : "/api/v1/idphoto";
    formData.append("spec", spec.id);
    formData.append("face", state.face);
    formData.append("background_style", ui.gradient.checked ? "gradient" : "solid");
    if (request.maxKb) formData.append("max_kb", request.maxKb);
    if (request.sheet) formData.append("paper", ui.paper.value);
  }
  state.requestLabel = () => (cutout ? "Removing the background" : `Making your ${spec.name} photo`);
  state.started = true; // from now on, a changed choice makes the result again (refresh)
  state.lastSpec = spec;
  if (ui.localOnly.checked) {
    await runOnDevice(request, "local");
    return;
  }
  setBusy(true);
  phase("Uploading…", 0);
  say("Uploading your photo…");
  const started = performance.now();
  try {
    let answer;
    for (let attempt = 0; ; attempt += 1) {
      answer = await post(url, formData, started, cutout && ondevice ? CUTOUT_QUIET_TIMEOUT_MS : 0);
      const code = answer.body && answer.body.error && answer.body.error.code;
      if (answer.status === 401 && attempt < MAX_RETRIES && apiKey(true)) continue;
      // A cut-out does not wait for a busy server: the device makes it at once (when it can).
      if (answer.status === 503 && cutout && ondevice) break;
      if (answer.status === 503 && (code === "busy" || code === "not_ready") && attempt < MAX_RETRIES) {
        const wait = Math.min(Math.max(answer.retryAfter, 1), 10);
        say(code === "busy" ? `The server is busy; trying again in ${wait} s…` : `The server is still starting; trying again in ${wait} s…`);
        phase(`Waiting ${wait} s for the server…`, null);
        await sleep(wait * 1000);
        continue;
      }
      break;
    }
    const roundTrip = (performance.now() - started) / 1000;
    if (answer.status === 200 && answer.body && answer.body.image) {
      setBusy(false);
      await showResult(answer.body, request, roundTrip);
      say(cutout ? "Done: the background is removed." : "Done: your photo is ready to download.");
      if (!quiet) ui.outputHeading.focus();
    } else if (answer.status === 503 && cutout && ondevice) {
      setBusy(false);
      await runOnDevice(request, "busy");
    } else {
      setBusy(false);
      const problem = humanError(answer.status, answer.body && answer.body.error, request);
      say("");
      if (answer.status === 503 && ondevice) problem.action = offerCutout(request, "busy");
      showError(problem.text, problem.action);
    }
  } catch (err) {
    setBusy(false);
    if (err.message === "abort") {
      say("Cancelled.");
    } else if (cutout && ondevice) {
      await runOnDevice(request, err.message === "timeout" ? "timeout" : "unreachable");
    } else {
      say("");
      if (ondevice) { // the ID photo
        showError("We couldn't reach the server, so we can't make the ID photo: finding your face and placing it to the rules needs the server. We can still cut out the background on this device.", offerCutout(request, "unreachable"));
      } else {
        showError("We couldn't reach the server. Check your connection and try again.", ["Try again", () => submit()]);
      }
    }
  } finally {
    state.xhr = null;
    if (state.busy) setBusy(false);
    if (again) { again = false; refresh(); }
  }
}
