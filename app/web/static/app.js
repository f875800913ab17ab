// pilotlight upload page: plain JavaScript, no dependencies. It sends the form to the JSON API
// (Accept: application/json), shows the answer and offers the exact bytes the server made for download.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const data = JSON.parse($("page-data").textContent);
  const specs = new Map(data.specs.map((spec) => [spec.id, spec]));
  const maxUploadBytes = data.max_upload_mb * 1024 * 1024;
  const ACCEPTED = ["image/jpeg", "image/png", "image/webp"];
  const EXT = { "image/jpeg": "jpg", "image/png": "png", "image/webp": "webp" };
  const FORMAT_NAMES = { "image/jpeg": "JPEG", "image/png": "PNG", "image/webp": "WebP" };
  const MAX_RETRIES = 3;

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
  };

  const state = {
    file: null, originalUrl: null, originalSize: null, resultUrls: [], xhr: null, busy: false,
    face: "single", maxKbTouched: false, timer: null,
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
      else if (name !== "custom") show = cutout || !allowed || allowed.has(name);
      label.hidden = !show;
      const text = label.querySelector("span");
      if (allowed && spec && name === spec.default_background) text.textContent = `${colourLabel(name)} (usual)`;
      else if (name !== "transparent" && name !== "custom") text.textContent = colourLabel(name);
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
    if (!ACCEPTED.includes(file.type)) {
      showError(`“${file.name}” is not a photo we can read. Choose a JPEG, PNG or WebP image${/heic|heif/i.test(file.type + file.name) ? " (on an iPhone: Settings › Camera › Formats › Most Compatible, or share the photo as JPEG)" : ""}.`);
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
  const bandText = (allowed) => { const b = band(allowed); return b ? `${pct(b[0])}–${pct(b[1])}` : allowed; };

  const CHECK_TEXT = {
    pixel_size: (c) => [`Size ${String(c.value).replace("x", " × ")} px`, c.pass ? "exactly the required size" : `must be ${c.allowed} px`],
    dpi: (c) => [`Print resolution ${c.value == null ? "missing" : `${c.value} dpi`}`, c.pass ? "written into the file" : `must be ${c.allowed} dpi`],
    face_count: (c) => [c.value === 1 ? "One face" : `${c.value} faces`, c.pass ? "found again on the finished photo" : "the photo must show exactly one face"],
    head_height_ratio: (c) => [`Head size: ${c.value == null ? "could not be measured" : `${pct(c.value)} of the height`}`, `chin to top of head; allowed ${bandText(c.allowed)}`],
    eye_line_ratio: (c) => [`Eyes at ${pct(c.value)} of the height`, `measured from the bottom; allowed ${bandText(c.allowed)}`],
    horizontal_offset: (c) => [c.pass ? "Face centred" : "Face off centre", `off by ${pct(c.value, 1)} of the width; allowed up to ${pct(upTo(c.allowed) ?? 0)}`],
    roll_degrees: (c) => [c.pass ? "Head level" : "Head tilted", `tilted ${Math.abs(c.value).toFixed(1)}°; allowed up to ${upTo(c.allowed)}°`],
    background_uniformity: (c) => [c.pass ? "Plain, even background" : "Background not even", c.value == null ? "no background visible" : `variation ${Number(c.value).toFixed(1)}; allowed up to ${upTo(c.allowed)}`],
    background_colour: (c) => [c.pass ? "Background colour as chosen" : "Background colour differs", `off by ${Number(c.value).toFixed(1)}; allowed up to ${upTo(c.allowed)}`],
  };

  function renderChecks(compliance) {
    ui.checks.replaceChildren();
    for (const check of compliance.checks) {
      const describe = CHECK_TEXT[check.name];
      let title;
      let detail;
      try {
        [title, detail] = describe ? describe(check) : [check.name.replace(/_/g, " "), `${check.value} (allowed ${check.allowed})`];
      } catch (err) {
        [title, detail] = [check.name.replace(/_/g, " "), `${check.value} (allowed ${check.allowed})`];
      }
      const item = document.createElement("li");
      item.className = check.pass ? "pass" : "fail";
      const mark = document.createElement("span");
      mark.className = "mark";
      mark.setAttribute("aria-hidden", "true");
      mark.textContent = check.pass ? "✓" : "✗";
      const body = document.createElement("span");
      const strong = document.createElement("strong");
      strong.textContent = title;
      const hidden = document.createElement("span");
      hidden.className = "visually-hidden";
      hidden.textContent = check.pass ? "Passed: " : "Failed: ";
      const small = document.createElement("span");
      small.className = "detail";
      small.textContent = detail;
      body.append(hidden, strong, small);
      item.append(mark, body);
      ui.checks.append(item);
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
        return { text: "This file isn't a photo we can read. Choose a JPEG, PNG or WebP image." };
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

  function post(url, formData, started) {
    if (state.timer) { clearInterval(state.timer); state.timer = null; } // a retry uploads again
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      state.xhr = xhr;
      xhr.open("POST", url);
      xhr.setRequestHeader("Accept", "application/json");
      const key = apiKey(false);
      if (key) xhr.setRequestHeader("Authorization", `Bearer ${key}`);
      xhr.responseType = "json";
      let uploaded = false;
      const working = () => {
        const tick = () => phase(`${request_label()}… ${Math.round((performance.now() - started) / 1000)} s`, null);
        tick();
        if (!state.timer) state.timer = setInterval(tick, 1000);
      };
      xhr.upload.onprogress = (event) => {
        if (event.lengthComputable && !uploaded) phase(`Uploading… ${Math.round((event.loaded / event.total) * 100)}%`, event.loaded / event.total);
      };
      xhr.upload.onload = () => { uploaded = true; say(`${request_label()}…`); working(); };
      xhr.onprogress = (event) => {
        if (event.lengthComputable && event.total > 200000) phase(`Receiving… ${Math.round((event.loaded / event.total) * 100)}%`, event.loaded / event.total);
      };
      xhr.onload = () => resolve({ status: xhr.status, body: xhr.response, retryAfter: Number(xhr.getResponseHeader("Retry-After")) || 0 });
      xhr.onerror = () => reject(new Error("network"));
      xhr.onabort = () => reject(new Error("abort"));
      xhr.send(formData);
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
    setBusy(true);
    phase("Uploading…", 0);
    say("Uploading your photo…");
    const started = performance.now();
    try {
      let answer;
      for (let attempt = 0; ; attempt += 1) {
        answer = await post(url, formData, started);
        const code = answer.body && answer.body.error && answer.body.error.code;
        if (answer.status === 401 && attempt < MAX_RETRIES && apiKey(true)) continue;
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
      } else {
        setBusy(false);
        const problem = humanError(answer.status, answer.body && answer.body.error, request);
        say("");
        showError(problem.text, problem.action);
      }
    } catch (err) {
      setBusy(false);
      if (err.message === "abort") {
        say("Cancelled.");
      } else {
        say("");
        showError("We couldn't reach the server. Check your connection and try again.", ["Try again", () => submit()]);
      }
    } finally {
      state.xhr = null;
      if (state.busy) setBusy(false);
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
  form.addEventListener("submit", submit);

  // Enhance the plain form: the custom colour only works with JavaScript.
  ui.swatches.querySelector('.swatch[data-name="custom"]').hidden = false;
  ui.paper.disabled = !ui.sheet.checked;

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
