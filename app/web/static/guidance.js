// Live guidance: several times a second, the outline's view of the camera, downscaled, goes to the
// server's live check (POST /api/v1/idphoto/check: the report's lines a person can still change, in
// the report's own words, most important first), and the answer is shown as text in a live region
// (never colour alone). When every line has held for HOLD_MS, onReady() is called (auto-capture).
// With "Keep my photo on this device" on, no frame leaves the device: only the light is judged here,
// and the page says which lines it cannot judge. A busy server (503) slows the guidance down and the
// page says so; a server that cannot answer stops it, said too, and the shutter still works.
import { apiKey, checkItem, lineTitle, ui } from "./common.js";

const EVERY_MS = 250; // 4 updates a second
const SLOWEST_MS = 2000; // a busy server: at most this long between checks
const STOPPED_RETRY_MS = 5000;
const HOLD_MS = 1000; // every line held this long: the photo is taken
const FRAME_HEIGHT = 320; // px of the frame sent (the outline's view)
const REQUEST_TIMEOUT_MS = 4000;
const DEVICE_LINES = ["capture_exposure"];
const SERVER_ONLY_LINES = ["distance", "centre_x", "yaw_degrees", "roll_degrees", "capture_lighting", "background_uniformity", "eyes_open", "mouth_closed"];

let session = null;

// The outline: the largest rectangle of the spec's shape inside the camera's frame, centred
// (x, y, w, h in the frame's pixels).
export function outlineBox(width, height, spec) {
  const aspect = spec.width_px / spec.height_px;
  if (width / height > aspect) {
    const w = Math.round(height * aspect);
    return { x: Math.round((width - w) / 2), y: 0, w, h: height };
  }
  const h = Math.round(width / aspect);
  return { x: 0, y: Math.round((height - h) / 2), w: width, h };
}

function frameBlob(video, spec) {
  const box = outlineBox(video.videoWidth, video.videoHeight, spec);
  const canvas = document.createElement("canvas");
  canvas.height = FRAME_HEIGHT;
  canvas.width = Math.round((FRAME_HEIGHT * box.w) / box.h);
  const context = canvas.getContext("2d", { willReadFrequently: true });
  context.drawImage(video, box.x, box.y, box.w, box.h, 0, 0, canvas.width, canvas.height);
  return { canvas, context, blob: new Promise((resolve) => { canvas.toBlob(resolve, "image/jpeg", 0.8); }) };
}

// On the device: the light on the outline's middle (where the face is), too dark or washed out.
function deviceLines(context, canvas) {
  const { width, height } = canvas;
  const pixels = context.getImageData(Math.round(width * 0.25), Math.round(height * 0.2), Math.round(width * 0.5), Math.round(height * 0.5)).data;
  let sum = 0;
  let bright = 0;
  let dark = 0;
  const count = pixels.length / 4;
  for (let i = 0; i < pixels.length; i += 4) {
    const luma = 0.299 * pixels[i] + 0.587 * pixels[i + 1] + 0.114 * pixels[i + 2];
    sum += luma;
    if (luma >= 247) bright += 1;
    if (luma <= 8) dark += 1;
  }
  const mean = sum / count / 255;
  const good = mean >= 0.25 && mean <= 0.92 && bright / count <= 0.05 && dark / count <= 0.02;
  return [{ name: "capture_exposure", pass: good, title: lineTitle("capture_exposure", good),
    advice: good ? null : (mean < 0.25 || dark / count > 0.02 ? "Find more light: face a window or a lamp" : "Too much light on the face: step out of direct sun") }];
}

const holds = (line) => line.pass === true || (line.name === "mouth_closed" && line.pass === null);

function render(lines, note) {
  const failing = lines.filter((line) => !holds(line));
  const say = failing.length ? (failing[0].advice || failing[0].title) : "Hold still: every check passes.";
  if (ui.guidanceSay.textContent !== say) ui.guidanceSay.textContent = say; // announced only when it changes
  const list = ui.guidanceLines;
  list.replaceChildren();
  for (const line of [...failing, ...lines.filter(holds)]) {
    const state = holds(line) ? "hold" : line.pass === false ? "fix" : "unknown";
    const item = checkItem({
      state,
      mark: { hold: "✓", fix: "✗", unknown: "?" }[state],
      said: { hold: "Good: ", fix: "To fix: ", unknown: "Check: " }[state],
      title: line.title,
      detail: state !== "hold" ? line.advice : "",
    });
    item.dataset.line = line.name;
    list.append(item);
  }
  ui.guidanceNote.textContent = note || "";
}

async function askServer(blob, spec, signal) {
  const form = new FormData();
  form.append("image", blob, "frame.jpg");
  form.append("spec", spec.id);
  const kept = document.querySelector('input[name="background"]:checked');
  if (kept) form.append("background", kept.value === "keep" ? "keep" : "new"); // the wall is judged where it is kept
  const headers = { Accept: "application/json" };
  const key = apiKey(false);
  if (key) headers.Authorization = `Bearer ${key}`;
  const answer = await fetch("/api/v1/idphoto/check", { method: "POST", body: form, headers, signal });
  let body = null;
  try { body = await answer.json(); } catch (err) { body = null; }
  return { status: answer.status, body, retryAfter: Number(answer.headers.get("Retry-After")) || 0 };
}

// Start guiding `video` for the spec `currentSpec()` returns; `onReady()` when every line has held
// for HOLD_MS (only where the server judges: on the device, not every line can be judged).
export function startGuidance(video, currentSpec, { onReady, onDevice }) {
  stopGuidance();
  const me = { stopped: false, timer: null, delay: EVERY_MS, readySince: null, failures: 0, controller: null };
  session = me;
  ui.guidanceSay.textContent = "Starting the guidance…";
  const tick = async () => {
    if (me.stopped) return;
    const spec = currentSpec();
    if (!video.videoWidth || !spec) { me.timer = setTimeout(tick, EVERY_MS); return; }
    const { canvas, context, blob } = frameBlob(video, spec);
    if (onDevice()) {
      me.readySince = null;
      render(deviceLines(context, canvas), `Your photo stays on this device, so only the light is judged here. Distance, centring, tilt, turn, the light's evenness, the wall, eyes and mouth need the server: check them yourself, or switch off “Keep my photo on this device”. Press “Take the photo” when ready.`);
      me.timer = setTimeout(tick, EVERY_MS);
      return;
    }
    let note = "";
    try {
      me.controller = new AbortController();
      const timeout = setTimeout(() => me.controller.abort(), REQUEST_TIMEOUT_MS);
      const answer = await askServer(await blob, spec, me.controller.signal);
      clearTimeout(timeout);
      if (me.stopped) return;
      if (answer.status === 200 && answer.body && answer.body.lines) {
        me.failures = 0;
        me.delay = Math.max(EVERY_MS, me.delay / 2);
        if (me.delay > EVERY_MS) note = "The server is busy: the guidance updates less often for now.";
        const ready = answer.body.ready;
        render(answer.body.lines, note);
        if (!ready) me.readySince = null;
        else if (me.readySince === null) me.readySince = performance.now();
        else if (performance.now() - me.readySince >= HOLD_MS) { me.readySince = null; onReady(); }
      } else if (answer.status === 503 || answer.status === 429) {
        me.readySince = null;
        me.delay = Math.min(SLOWEST_MS, Math.max(me.delay * 2, (answer.retryAfter || 0) * 1000));
        ui.guidanceNote.textContent = `The server is busy: the guidance slows down (every ${(me.delay / 1000).toFixed(1)} s) until it has room. You can still take the photo.`;
      } else {
        throw new Error(answer.body && answer.body.error ? answer.body.error.message : `HTTP ${answer.status}`);
      }
    } catch (err) {
      if (me.stopped) return;
      me.failures += 1;
      me.readySince = null;
      if (me.failures >= 3) {
        me.delay = STOPPED_RETRY_MS;
        ui.guidanceSay.textContent = "The guidance has stopped: the server cannot answer. You can still press “Take the photo”; we try again every few seconds.";
      }
    }
    me.timer = setTimeout(tick, me.delay);
  };
  me.timer = setTimeout(tick, 0);
}

export function stopGuidance() {
  if (!session) return;
  session.stopped = true;
  clearTimeout(session.timer);
  if (session.controller) session.controller.abort();
  session = null;
}

export const LINES_JUDGED = { device: DEVICE_LINES, serverOnly: SERVER_ONLY_LINES };
