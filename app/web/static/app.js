// pilotlight upload page: plain JavaScript, no dependencies. It sends the form to the JSON API
// (Accept: application/json), shows the answer and offers the exact bytes the server made for download.
// When the server cannot answer a cut-out (503, a failed or timed-out request), or the person asks
// to keep the photo on the device, ondevice.js (an ES module, imported only then) makes the cut-out
// in the browser with u2netp on onnxruntime-web; the page says so in words.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const data = JSON.parse($("page-data").textContent);
  const specs = new Map(data.specs.map((spec) => [spec.id, spec]));
  const maxUploadBytes = data.max_upload_mb * 1024 * 1024;
  const ACCEPTED = ["image/jpeg", "image/png", "image/webp", "image/heic", "image/heif", "image/avif", "image/tiff", "image/bmp",
    "image/x-portable-pixmap", "image/x-portable-graymap", "image/x-portable-bitmap", "image/x-portable-anymap"];
  // The server reads these; a browser may not show them (HEIC outside Safari, TIFF, PPM): no preview, still sent.
  const SERVER_ONLY = /\.(heic|heif|avif|tiff?|bmp|ppm|pgm|pbm|pnm)$/i;
  const FORMATS_TEXT = "JPEG, PNG, WebP, HEIC, AVIF, TIFF, BMP or PPM";
  const EXT = { "image/jpeg": "jpg", "image/png": "png", "image/webp": "webp" };
  const FORMAT_NAMES = { "image/jpeg": "JPEG", "image/png": "PNG", "image/webp": "WebP" };
  const MAX_RETRIES = 3;
  const CUTOUT_QUIET_TIMEOUT_MS = 30_000; // a cut-out request with no progress for this long: the device makes it
  const ondevice = data.ondevice; // null: this server does not offer the on-device cut-out

  const form = $("maker");
  const ui = {
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
  };

  const state = {
    file: null, originalUrl: null, originalSize: null, resultUrls: [], xhr: null, busy: false,
    face: "single", maxKbTouched: false, timer: null, timedOut: false,
  };

  // ---------- small helpers ----------
  const fold = (text) => text.normalize("NFD").replace(/[\u0300-\u036f]/g, "").toLowerCase();
  const mm = (value) => (Math.abs(value - Math.round(value)) < 0.25 ? String(Math.round(value)) : value.toFixed(1));
  const pct = (value, digits = 0) => `${(value * 100).toFixed(digits)}%`;
  const kb = (bytes) => (bytes < 1024 * 1024 ? `${Math.max(1, Math.round(bytes / 1024))} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`);
  const seconds = (value) => `${value < 10 ? value.toFixed(1) : Math.round(value)} s`;
  const mode = () => form.elements.mode.value;
  const checkedSpec = () => form.querySelector('input[name="spec"]:checked');
  const currentSpec = () => { const radio = checkedSpec(); return (radio && !radio.closest(".spec-item").hidden && specs.get(radio.value)) || null; };
  const coarse = window.matchMedia("(pointer: coarse)").matches;
  const checkedFormat = () => form.elements.format.value;
  const colourLabel = (name) => name.charAt(0).toUpperCase() + name.slice(1).replace(/-/g, " ");

  function slug(text) {
    const stem = fold(text.replace(/\.[^.]*$/, "")).replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 40);
    return stem || "photo";
  }

  function base64ToBlob(b64, type) {
    const binary = atob(b64);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
    return new Blob([bytes], { type });
  }

  function say(text) { ui.status.textContent = text; }

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

  function renderSpecs() {
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

  function revealChecked() {
    const radio = checkedSpec();
    if (!radio || radio.closest(".spec-item").hidden) return;
    const item = radio.closest(".spec-item");
    const list = ui.specList;
    const top = item.offsetTop; // the list is the items' offsetParent (position: relative)
    if (top < list.scrollTop || top + item.offsetHeight > list.scrollTop + list.clientHeight) {
      list.scrollTop = Math.max(0, top - list.clientHeight / 3);
    }
  }

  function onSpecChange() {
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
  function updateSwatches(reset = false) {
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

  function onBackgroundChange() {
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

  function backgroundValue() {
    const checked = form.querySelector('input[name="background"]:checked');
    if (!checked) return "";
    return checked === ui.customRadio ? ui.customColour.value : checked.value;
  }

  // ---------- mode: ID photo or background only ----------
  function setMode() {
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
  }

  function updateTarget() {
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

  // ---------- the photo ----------
  function chooseFile(file) {
    hideError();
    if (!file) return;
    if (!ACCEPTED.includes(file.type) && !SERVER_ONLY.test(file.name)) {
      showError(`“${file.name}” is not a photo we can read. Choose a ${FORMATS_TEXT} image.`);
      return;
    }
    if (file.size > maxUploadBytes) {
      showError(`This photo is ${kb(file.size)}; the limit is ${data.max_upload_mb} MB. Choose a smaller photo, or a lower-resolution copy of it.`);
      return;
    }
    state.file = file;
    state.face = "single";
    if (state.originalUrl) URL.revokeObjectURL(state.originalUrl);
    state.originalUrl = URL.createObjectURL(file);
    state.originalSize = null;
    clearResult();
    ui.dropPreview.src = state.originalUrl;
    ui.dropPreview.hidden = false;
    ui.dropPreview.alt = "Chosen photo";
    ui.dropHint.textContent = coarse ? "Use another photo:" : "Drag another photo here, or";
    document.querySelector('label[for="file"]').textContent = "Choose another photo";
    ui.fileInfo.hidden = false;
    ui.fileInfo.textContent = `${file.name} · ${kb(file.size)}`;
    ui.originalImg.src = state.originalUrl;
    ui.originalImg.hidden = false;
    ui.originalPlaceholder.hidden = true;
    ui.originalImg.decode().then(() => {
      const size = [ui.originalImg.naturalWidth, ui.originalImg.naturalHeight];
      state.originalSize = size;
      ui.originalSize.textContent = `(${size[0]} × ${size[1]} px)`;
      ui.fileInfo.textContent = `${file.name} · ${size[0]} × ${size[1]} px · ${kb(file.size)}`;
      if (Math.min(...size) < 400) say("This photo is quite small; the result may look soft. A larger photo gives a sharper result.");
      else say(mode() === "cutout" ? "Photo ready. Press “Remove the background”." : "Photo ready. Check the type of photo, then press “Make my ID photo”.");
      updateTarget();
    }).catch(() => {
      ui.originalImg.hidden = true;
      ui.originalPlaceholder.hidden = false;
      if (SERVER_ONLY.test(file.name) || /heic|heif|tiff|portable/.test(file.type)) {
        ui.dropPreview.hidden = true;
        say("This browser cannot preview this format, but the server reads it: go ahead.");
        return;
      }
      say("");
      showError("This browser cannot show that file; it may be damaged. Choose another photo.");
      state.file = null;
    });
  }

  function onFileInput(event) {
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

  // ---------- results ----------
  function clearResult() {
    for (const url of state.resultUrls) URL.revokeObjectURL(url);
    state.resultUrls = [];
    ui.resultImg.hidden = true;
    ui.resultImg.removeAttribute("src");
    ui.resultImg.classList.remove("checkered");
    ui.target.hidden = false;
    ui.resultCaption.textContent = mode() === "cutout" ? "The cut-out will appear here" : "Your ID photo will appear here";
    ui.verdict.hidden = true;
    ui.downloads.hidden = true;
    ui.downloadSheet.hidden = true;
    ui.meta.hidden = true;
    ui.report.hidden = true;
    ui.checksBlock.hidden = false;
    ui.sheetFigure.hidden = true;
    ui.sheetImg.removeAttribute("src");
  }

  function objectUrl(blob) {
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
    centre_x: (c) => [c.pass ? "Face centred" : "Face off centre", `centre line ${mmValue(c.value)} from the left edge; allowed ${mmBand(c.allowed)}`],
    eye_distance: (c) => [`Eyes ${mmValue(c.value)} apart`, `allowed ${mmBand(c.allowed)}`],
    yaw_degrees: (c) => [c.pass ? "Facing the camera" : c.pass === null ? "Head may be turned: check" : "Head turned", `turned ${Math.abs(c.value).toFixed(0)}°; allowed up to ${upTo(c.allowed)}°`],
    pitch_degrees: (c) => [c.pass ? "Looking straight ahead" : c.pass === null ? "Chin may be up or down: check" : "Chin up or down", `${Math.abs(c.value).toFixed(0)}° ${c.value > 0 ? "up" : "down"}; allowed up to ${upTo(c.allowed)}°`],
    roll_degrees: (c) => [c.pass ? "Head level" : c.pass === null ? "Head may be tilted: check" : "Head tilted", `tilted ${Math.abs(c.value).toFixed(1)}°; allowed up to ${upTo(c.allowed)}°`],
    canvas_extended: (c) => [c.advice ? "Canvas extended" : "Nothing added", c.advice || "the whole photo comes from your original"],
    background_uniformity: (c) => [c.pass ? "Plain, even background" : "Background not even", c.value == null ? "no background visible" : `variation ${Number(c.value).toFixed(1)}; allowed up to ${upTo(c.allowed)}`],
    background_clear: (c) => typeof c.value === "object" && c.value !== null
      ? [c.pass ? "Nothing and nobody behind you" : "Something or someone behind you", `${Math.round(100 * c.value.clutter)}% of your background holds something; ${c.value.other_faces} other face(s)`]
      : [c.pass ? "Nothing else beside the head" : "Someone or something beside the head", c.pass ? "the top corners are plain background" : `${Math.round(100 * c.value)}% of the top corners is not background`],
    background_colour: (c) => typeof c.value === "object" && c.value !== null
      ? [c.pass ? `Your background reads as ${colourLabel(c.value.nearest).toLowerCase()}` : "Your background is not an allowed colour", `nearest allowed: ${colourLabel(c.value.nearest).toLowerCase()} (lightness ${c.value.lightness}, hue off by ${c.value.hue})`]
      : [c.pass ? "Background colour allowed" : "Background colour not allowed", `off by ${Number(c.value).toFixed(1)}; allowed up to ${upTo(c.allowed)}`],
    background_even: (c) => [c.pass ? "Evenly lit background" : "Background unevenly lit", `light varies by ${Number(c.value).toFixed(0)}; allowed up to ${upTo(c.allowed)}`],
    background_shadow: (c) => [c.pass ? "No shadow behind the head" : "Shadow behind the head", `${Math.round(100 * c.value)}% darker beside the head`],
    photographed_frame: (c) => ["Nothing painted in", c.advice],
    face_resolution: (c) => [c.pass ? "Enough detail for print" : "Too little detail for print", `${Math.round(c.value)} px between the eyes in your original`],
    capture_sharpness: (c) => [c.pass ? "Sharp" : "Blurred", `sharpness ${Number(c.value).toFixed(1)}; at least ${atLeast(c.allowed)}`],
    capture_exposure: (c) => [c.pass ? "Well exposed" : "Too dark or washed out", `highlights ${Math.round(100 * c.value.highlights)}%, ${(100 * c.value.clipped_black).toFixed(1)}% clipped to black, ${(100 * c.value.washed_out).toFixed(1)}% washed out`],
    capture_lighting: (c) => [c.pass ? "Even light on the face" : "One side of the face in shadow", `the darker half has ${Math.round(100 * c.value)}% of the brighter half's light`],
    hands: (c) => [c.pass ? "Hands away from the head" : "Hand or arm near the head", c.pass ? "nothing but the head and shoulders" : "skin beside the head"],
    head_covering: (c) => [c.pass === true ? "No hat or head covering" : c.pass === false ? "Hat or head covering" : "Hat or hair? Check it yourself", c.allowed],
    eyeglasses: (c) => [c.kind === "info" ? "Glasses: allowed with conditions" : c.pass === true ? "No glasses" : c.pass === false ? "Glasses: take them off" : "Glasses? Check it yourself", c.allowed],
    outline_kept: (c) => [c.pass ? "Your outline is your own" : "Your outline was cut where another person was removed", c.pass ? "no straight cut along your hair or face" : `a straight cut ${Number(c.value).toFixed(1)} eye distances long; our rule`],
    arms_near_head: (c) => [c.pass ? "Nothing beside or above the head" : "Arm or hand beside the head", c.pass ? "the outline is the head and shoulders" : `${Number(c.value).toFixed(1)} eye distances squared of you outside your head and shoulders; no authority's words found: our rule`],
    eyes_open: (c) => [c.pass ? "Eyes open" : "Eyes may be closed", `${c.value} eyes seen open`],
    mouth_closed: (c) => c.pass === null
      ? ["Smile allowed", "this document allows a natural smile"]
      : [c.pass ? "Mouth closed" : "Mouth open", /smile is allowed/.test(c.allowed || "") ? "a natural smile is allowed, a gaping mouth is not" : "neutral expression, lips together"],
  };

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

  function renderChecks(compliance) {
    ui.checks.replaceChildren();
    for (const check of [editsLine(compliance), ...compliance.checks]) {
      const describe = check.title ? () => [check.title, check.detail]
        : check.kind === "not_checked" ? (c) => ["Not checked", c.advice]
        : check.kind === "edit" ? (c) => [`Edited: ${EDIT_WORDS[c.name.replace(/^edit_/, "")] || c.name}`, `refused by the authority (${c.allowed.replace(/^not allowed: /, "")})`]
        : CHECK_TEXT[check.name];
      // pass null: not a pass/fail line (information, or something we cannot check): neutral style
      const state = check.pass === true ? "pass" : check.pass === false ? "fail" : check.kind === "info" ? "info" : "unchecked";
      let title;
      let detail;
      try {
        [title, detail] = describe ? describe(check) : [check.name.replace(/_/g, " "), `${check.value} (allowed ${check.allowed})`];
      } catch (err) {
        [title, detail] = [check.name.replace(/_/g, " "), `${check.value} (allowed ${check.allowed})`];
      }
      // a failed line, or a pose the estimate cannot decide: say what to do
      if (check.advice && (check.pass === false || (check.pass === null && (check.kind === "pose" || check.kind === "rule")))) detail = `${detail}. ${check.advice}`;
      const item = document.createElement("li");
      item.className = state;
      const mark = document.createElement("span");
      mark.className = "mark";
      mark.setAttribute("aria-hidden", "true");
      mark.textContent = { pass: "✓", fail: "✗", info: "i", unchecked: "?" }[state];
      const body = document.createElement("span");
      const strong = document.createElement("strong");
      strong.textContent = title;
      const hidden = document.createElement("span");
      hidden.className = "visually-hidden";
      hidden.textContent = { pass: "Passed: ", fail: "Failed: ", info: "Note: ", unchecked: "Not checked: " }[state];
      const small = document.createElement("span");
      small.className = "detail";
      small.textContent = detail;
      body.append(hidden, strong, small);
      item.append(mark, body);
      ui.checks.append(item);
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
      const li = document.createElement("li");
      li.className = verdict;
      li.dataset.quality = item.name;
      const mark = document.createElement("span");
      mark.className = "mark";
      mark.setAttribute("aria-hidden", "true");
      mark.textContent = { pass: "✓", fail: "!", unknown: "?" }[verdict];
      const body = document.createElement("span");
      const hidden = document.createElement("span");
      hidden.className = "visually-hidden";
      hidden.textContent = { pass: "Good: ", fail: "Could be better: ", unknown: "Not checked: " }[verdict];
      const strong = document.createElement("strong");
      strong.textContent = item.label || item.name.replace(/_/g, " ");
      const small = document.createElement("span");
      small.className = "detail";
      if (item.value == null) {
        small.textContent = item.advice;
      } else {
        const show = QUALITY_VALUE[item.name] || ((v) => String(v));
        const measured = `${show(item.value)}; ${qualityLimit(item)}`;
        small.textContent = item.passed ? measured : `${measured}. ${item.advice}`;
      }
      small.title = (item.threshold && item.threshold.reason) || "";
      body.append(hidden, strong, small);
      li.append(mark, body);
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

  async function showImage(img, blob) {
    img.src = objectUrl(blob);
    try { await img.decode(); } catch (err) { /* shown as broken image; the download still works */ }
    img.width = img.naturalWidth;
    img.height = img.naturalHeight;
  }

  async function showResult(body, request, roundTrip) {
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
      const good = body.compliance && body.compliance.compliant;
      ui.verdict.textContent = good
        ? `✓ Meets the ${spec.name} rules we can measure.`
        : "Some checks failed (see below). A photo taken straight on, in even light, against a plain wall usually passes.";
      ui.verdict.className = `verdict ${good ? "good" : "bad"}`;
      ui.verdict.hidden = false;
      renderChecks(body.compliance);
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

  // ---------- errors a person can act on ----------
  function humanError(status, error, request) {
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

  function showError(text, action) {
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

  function hideError() { ui.error.hidden = true; }

  // ---------- sending ----------
  function setBusy(busy) {
    state.busy = busy;
    ui.submit.disabled = busy;
    ui.progress.hidden = !busy;
    ui.status.classList.toggle("visually-hidden", busy); // the bar says it; screen readers still hear it
    ui.output.classList.toggle("busy", busy);
    ui.output.setAttribute("aria-busy", String(busy));
    if (!busy && state.timer) { clearInterval(state.timer); state.timer = null; }
  }

  function phase(text, fraction) {
    if (fraction == null) ui.progressBar.removeAttribute("value");
    else ui.progressBar.value = Math.round(fraction * 100);
    ui.progressText.textContent = text;
  }

  // API_KEYS: the key is asked for once, when the API answers 401, and kept in this tab's session
  // storage only; every API call sends it as a Bearer token.
  const KEY_ITEM = "pilotlight.apiKey";
  function apiKey(ask) {
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
  function post(url, formData, started, quietTimeout = 0) {
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
        const tick = () => phase(`${request_label()}… ${Math.round((performance.now() - started) / 1000)} s`, null);
        tick();
        if (!state.timer) state.timer = setInterval(tick, 1000);
      };
      xhr.upload.onprogress = (event) => {
        stillAlive();
        if (event.lengthComputable && !uploaded) phase(`Uploading… ${Math.round((event.loaded / event.total) * 100)}%`, event.loaded / event.total);
      };
      xhr.upload.onload = () => {
        uploaded = true;
        say(`${request_label()}…`);
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

  let request_label = () => "Working";
  const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

  async function submit(event) {
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
    request_label = () => (cutout ? "Removing the background" : `Making your ${spec.name} photo`);
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
        ui.outputHeading.focus();
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
    }
  }

  // ---------- on this device ----------
  const DEVICE_WORDS = {
    busy: "Made on your device: the server was busy.",
    unreachable: "Made on your device: the server could not be reached.",
    timeout: "Made on your device: the server took too long to answer.",
    local: "Made on your device: your photo never left it.",
  };
  const ID_PHOTO_NEEDS_SERVER = "This is the cut-out only: the ID photo needs the server (it finds your face, sizes and places it to the spec's rules and checks the result).";

  function updateLocalHelp() {
    if (!ondevice) return;
    const cutout = mode() === "cutout";
    ui.localHelp.textContent = ui.localOnly.checked
      ? (cutout
        ? "Nothing is uploaded: the cut-out is made in this browser with a smaller model than the server's (edges are coarser). The first time, the browser downloads it (about " + kb(ondevice.runtime.size + ondevice.wasm.size + ondevice.model.size) + ") and keeps it."
        : "Nothing is uploaded, so only the cut-out can be made here. The ID photo, the print sheet and the checks need the server: switch this off to make them.")
      : "Nothing leaves your device: the cut-out is made in this browser. ID photos need the server.";
    ui.submit.textContent = ui.localOnly.checked ? "Remove the background on this device" : (cutout ? "Remove the background" : "Make my ID photo");
  }

  function offerCutout(request, reason) {
    return ["Cut out the background on this device", () => { hideError(); runOnDevice(request, reason); }];
  }

  const hexToRgb = (hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));

  function deviceBackground(request) {
    if (request.mode !== "cutout" || !request.background) return request.mode === "cutout" && request.format === "jpeg" ? [255, 255, 255] : null;
    if (request.background.startsWith("#")) return hexToRgb(request.background);
    return data.colours[request.background] ? hexToRgb(data.colours[request.background]) : [255, 255, 255];
  }

  async function runOnDevice(request, reason) {
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
      const type = idPhoto ? "image/png" : `image/${request.format}`;
      const blob = await device.encode(device.compose(result, deviceBackground(request)), type);
      setBusy(false);
      await showDeviceResult(blob, result, request, reason);
      say(`${DEVICE_WORDS[reason]}${idPhoto ? ` ${ID_PHOTO_NEEDS_SERVER}` : ""}`);
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
    ui.verdict.textContent = `${DEVICE_WORDS[reason]}${idPhoto ? ` ${ID_PHOTO_NEEDS_SERVER}` : ""}`;
    ui.verdict.className = "verdict device";
    ui.verdict.hidden = false;
    ui.downloadPhoto.href = ui.resultImg.src;
    ui.downloadPhoto.download = name;
    ui.downloadPhoto.textContent = `Download cut-out (${name})`;
    ui.downloads.hidden = false;
    ui.meta.textContent = `${result.width} × ${result.height} px · ${FORMAT_NAMES[blob.type] || blob.type} · ${kb(blob.size)} · made on your device in ${seconds(result.ms / 1000)} (u2netp, ${result.stats.threads} thread${result.stats.threads === 1 ? "" : "s"}).`;
    ui.meta.hidden = false;
    renderDeviceTimings(result);
    ui.checksBlock.hidden = true;
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
})();
