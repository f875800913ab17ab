// The camera: the phone's or laptop's camera (front or back, switchable), a mirrored preview with the
// chosen spec's outline over it (the head's band and the eye line at the spec's proportions, from
// its head_height and eye_line), live guidance (guidance.js), a self-timer, and the photo taken from
// the stream's full-resolution frame (not mirrored, not the guidance's small frame), then made into
// the ID photo as an upload is. Refused permission, no camera or no secure page: a clear message and
// the upload path.
import { currentSpec, hideError, mode, say, showError, state, ui } from "./common.js";
import { outlineBox, startGuidance, stopGuidance } from "./guidance.js";
import { chooseFile, submit } from "./upload.js";

const TIMER_S = 5;
const CROWN_TO_EYES = 0.47; // of the head's height (chin to crown): where the eyes sit from the top
const HEAD_WIDTH = 0.74; // the head's outline width, of its height
const camera = { stream: null, facing: "user", countdown: null, taking: false };

function drawOutline() {
  const spec = currentSpec();
  const video = ui.video;
  if (!spec || !video.videoWidth) return;
  ui.viewfinder.style.aspectRatio = `${video.videoWidth} / ${video.videoHeight}`;
  const box = outlineBox(video.videoWidth, video.videoHeight, spec);
  ui.outline.style.width = `${(100 * box.w) / video.videoWidth}%`;
  ui.outline.style.height = `${(100 * box.h) / video.videoHeight}%`;
  ui.outline.style.top = `${(100 * box.y) / video.videoHeight}%`;
  const head = (spec.head_height.min + spec.head_height.max) / 2; // of the photo's height
  const eyes = spec.eye_line ? 1 - (spec.eye_line.min + spec.eye_line.max) / 2 : 0.1 + CROWN_TO_EYES * head; // from the top
  const top = eyes - CROWN_TO_EYES * head;
  const aspect = spec.width_px / spec.height_px;
  ui.outlineHead.style.top = `${100 * top}%`;
  ui.outlineHead.style.height = `${100 * head}%`;
  ui.outlineHead.style.width = `${(100 * head * HEAD_WIDTH) / aspect}%`;
  const band = spec.eye_line ? [1 - spec.eye_line.max, 1 - spec.eye_line.min] : [eyes - 0.01, eyes + 0.01];
  ui.outlineEyes.style.top = `${100 * band[0]}%`;
  ui.outlineEyes.style.height = `${Math.max(0.5, 100 * (band[1] - band[0]))}%`;
}

function cameraProblem(err) {
  if (!window.isSecureContext) {
    return "The camera needs a secure page (an https:// address; http://localhost works too). Choose a photo instead, or open this page over HTTPS.";
  }
  switch (err && err.name) {
    case "NotAllowedError":
    case "SecurityError":
      return "The camera was not allowed. To use it, allow the camera for this site in your browser's settings; or choose a photo instead.";
    case "NotFoundError":
    case "OverconstrainedError":
      return "No camera was found on this device. Choose a photo instead.";
    case "NotReadableError":
      return "The camera is in use by another app, or could not start. Close the other app and try again, or choose a photo instead.";
    default:
      return "The camera could not start. Choose a photo instead.";
  }
}

async function openStream() {
  if (camera.stream) for (const track of camera.stream.getTracks()) track.stop();
  camera.stream = await navigator.mediaDevices.getUserMedia({
    audio: false,
    video: { facingMode: { ideal: camera.facing }, width: { ideal: 1920 }, height: { ideal: 1920 } },
  });
  ui.video.srcObject = camera.stream;
  ui.video.classList.toggle("mirrored", camera.facing === "user"); // the preview only: the photo is not mirrored
  ui.video.setAttribute("aria-label", camera.facing === "user" ? "Camera preview (mirrored, like a mirror)" : "Camera preview");
  await ui.video.play();
  drawOutline();
}

export async function openCamera() {
  hideError();
  if (mode() !== "idphoto") { // the camera's guidance is for ID photos
    form_idphoto();
  }
  if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
    showError(cameraProblem(null));
    document.querySelector('label[for="file"]').scrollIntoView({ block: "nearest" });
    return;
  }
  ui.cameraPanel.hidden = false;
  ui.cameraStart.hidden = true;
  try {
    await openStream();
  } catch (err) {
    closeCamera();
    showError(cameraProblem(err));
    ui.file.focus();
    return;
  }
  ui.shutter.focus();
  startGuidance(ui.video, currentSpec, { onReady: () => { if (ui.auto.checked) takePhoto(); }, onDevice: () => ui.localOnly.checked });
}

function form_idphoto() {
  const radio = document.querySelector('input[name="mode"][value="idphoto"]');
  radio.checked = true;
  radio.dispatchEvent(new Event("change", { bubbles: true }));
}

export function closeCamera() {
  stopGuidance();
  clearInterval(camera.countdown);
  camera.countdown = null;
  ui.count.textContent = "";
  if (camera.stream) for (const track of camera.stream.getTracks()) track.stop();
  camera.stream = null;
  ui.video.srcObject = null;
  ui.cameraPanel.hidden = true;
  ui.cameraStart.hidden = false;
  ui.guidanceLines.replaceChildren();
  ui.guidanceSay.textContent = "";
  ui.guidanceNote.textContent = "";
}

async function switchCamera() {
  camera.facing = camera.facing === "user" ? "environment" : "user";
  try {
    await openStream();
    say(camera.facing === "user" ? "Front camera." : "Back camera.");
  } catch (err) {
    camera.facing = camera.facing === "user" ? "environment" : "user";
    say("This device has no other camera.");
    try { await openStream(); } catch (again) { closeCamera(); showError(cameraProblem(again)); }
  }
}

// The full-resolution frame of the stream, as the camera records it (not mirrored).
function grabFrame() {
  const video = ui.video;
  const canvas = document.createElement("canvas");
  canvas.width = video.videoWidth;
  canvas.height = video.videoHeight;
  canvas.getContext("2d").drawImage(video, 0, 0);
  return new Promise((resolve) => { canvas.toBlob(resolve, "image/jpeg", 0.95); });
}

async function capture() {
  if (camera.taking || !camera.stream) return;
  camera.taking = true;
  try {
    const blob = await grabFrame();
    const stamp = new Date().toISOString().slice(0, 19).replace(/[:T]/g, "-");
    const file = new File([blob], `camera-${stamp}.jpg`, { type: "image/jpeg" });
    closeCamera();
    say("Photo taken: making your ID photo…");
    await chooseFile(file, { start: false });
    if (state.file === file) await submit();
  } finally {
    camera.taking = false;
  }
}

export function takePhoto() {
  if (camera.countdown || camera.taking) return;
  if (!ui.selfTimer.checked) { capture(); return; }
  let left = TIMER_S;
  ui.count.textContent = String(left);
  ui.guidanceSay.textContent = `Taking the photo in ${left} seconds.`;
  camera.countdown = setInterval(() => {
    left -= 1;
    if (left > 0) {
      ui.count.textContent = String(left);
      ui.guidanceSay.textContent = `${left}…`;
      return;
    }
    clearInterval(camera.countdown);
    camera.countdown = null;
    ui.count.textContent = "";
    capture();
  }, 1000);
}

export function wireCamera() {
  ui.cameraStart.hidden = false; // with JavaScript only
  ui.cameraStart.addEventListener("click", openCamera);
  ui.shutter.addEventListener("click", takePhoto);
  ui.switchCamera.addEventListener("click", switchCamera);
  ui.stopCamera.addEventListener("click", () => { closeCamera(); ui.cameraStart.focus(); });
  ui.cameraPanel.addEventListener("keydown", (event) => { if (event.key === "Escape") { closeCamera(); ui.cameraStart.focus(); } });
  ui.video.addEventListener("loadedmetadata", drawOutline);
  ui.specList.addEventListener("change", drawOutline);
}
