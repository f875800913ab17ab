// pilotlight's on-device cut-out: u2netp run by onnxruntime-web (WebAssembly, SIMD, threads when the
// page is cross-origin isolated), with the server's own pre- and post-processing ported from rembg
// (U2netSession.predict and BaseSession.normalize) and Pillow's resampling, so the browser's mask is
// the server's. Loaded by app.js only when it is needed (the fallback, or "Keep my photo on this
// device"); the runtime, the wasm and the model come from this server, versioned URLs cached as
// immutable, and each is checked against its sha256 before use; the wasm and the model are then kept
// in the browser's Cache Storage.
//
// The assets argument is page-data's "ondevice": {runtime, wasm, model: {url, sha256, integrity,
// size}, working_max_side}.

const MEAN = [0.485, 0.456, 0.406];
const STD = [0.229, 0.224, 0.225];
const SIDE = 320; // u2netp's input: 1 x 3 x 320 x 320, RGB
const PRECISION_BITS = 32 - 8 - 2; // Pillow's fixed-point resampling (Resample.c)

let loading = null; // one load per page: {ort, session, stats}
const stats = { downloadBytes: 0, transferBytes: 0, fromCache: false, loadMs: 0, sessionMs: 0, threads: 1, runs: [] };

// ---------- integrity ----------
async function sha256Hex(buffer) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", buffer));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

// The wasm and the model are kept in the Cache Storage under their versioned URLs (a new file is a
// new URL; older entries are dropped): the HTTP cache alone would not do, as browsers skip entries
// this large in some modes (private windows keep a small in-memory cache). Where there is no Cache
// Storage (a page not served over HTTPS or from localhost), the HTTP cache's immutable entries.
const CACHE_NAME = "pilotlight-ondevice";

async function openCache(keep) {
  if (!window.caches) return null;
  try {
    const cache = await caches.open(CACHE_NAME);
    const wanted = new Set(keep.map((file) => new URL(file.url, window.location.href).href));
    for (const request of await cache.keys()) if (!wanted.has(request.url)) await cache.delete(request);
    return cache;
  } catch (err) {
    return null; // storage refused (quota, policy): the network and the HTTP cache still work
  }
}

async function fetchVerified(file, cache) {
  let response = cache ? await cache.match(file.url) : undefined;
  const cached = Boolean(response);
  if (!response) {
    response = await fetch(file.url, { credentials: "same-origin" });
    if (!response.ok) throw new Error(`${file.url}: HTTP ${response.status}`);
  }
  const buffer = await response.arrayBuffer();
  if ((await sha256Hex(buffer)) !== file.sha256) {
    if (cache) await cache.delete(file.url);
    throw new Error(`${file.url}: the sha256 does not match; not used`);
  }
  if (cache && !cached) {
    try {
      await cache.put(file.url, new Response(buffer, { headers: { "Content-Type": response.headers.get("Content-Type") || "" } }));
    } catch (err) { /* full storage: used this time, fetched again next time */ }
  }
  stats.downloadBytes += buffer.byteLength;
  if (!cached) stats.transferBytes += transferred(file.url);
  return buffer;
}

// The runtime is an ES module: preload it with its Subresource Integrity, so the module the import
// below gets is the one whose hash the browser checked (a mismatch fails the preload and the import).
function preloadModule(file) {
  return new Promise((resolve, reject) => {
    const link = document.createElement("link");
    link.rel = "modulepreload";
    link.href = file.url;
    link.integrity = file.integrity;
    link.onload = () => resolve();
    link.onerror = () => reject(new Error(`${file.url}: failed its integrity check or did not load`));
    document.head.append(link);
  });
}

function transferred(url) {
  const entry = performance.getEntriesByName(new URL(url, window.location.href).href).pop();
  return entry ? entry.transferSize : 0;
}

async function load(assets) {
  const started = performance.now();
  await preloadModule(assets.runtime);
  const ort = await import(assets.runtime.url);
  stats.downloadBytes += assets.runtime.size;
  stats.transferBytes += transferred(assets.runtime.url);
  const cache = await openCache([assets.wasm, assets.model]);
  const [wasm, model] = await Promise.all([fetchVerified(assets.wasm, cache), fetchVerified(assets.model, cache)]);
  stats.fromCache = stats.transferBytes === 0;
  stats.loadMs = performance.now() - started;
  ort.env.wasm.wasmBinary = wasm; // the verified bytes: the runtime fetches nothing itself
  // Threads need SharedArrayBuffer, which browsers give only to cross-origin isolated pages.
  stats.threads = window.crossOriginIsolated ? Math.max(1, Math.min(4, navigator.hardwareConcurrency || 1)) : 1;
  ort.env.wasm.numThreads = stats.threads;
  const sessionStarted = performance.now();
  const session = await ort.InferenceSession.create(new Uint8Array(model), {
    executionProviders: ["wasm"],
    graphOptimizationLevel: "all",
  });
  stats.sessionMs = performance.now() - sessionStarted;
  return { ort, session };
}

/** Download (or take from the browser's cache), verify and start the runtime and the model once. */
export function prepare(assets) {
  if (!loading) {
    loading = load(assets).catch((err) => { loading = null; throw err; });
  }
  return loading;
}

// ---------- Pillow's resampling (Resample.c), ported ----------
const sinc = (x) => { if (x === 0) return 1; const px = x * Math.PI; return Math.sin(px) / px; };
const FILTERS = {
  lanczos: { support: 3, weight: (x) => (x >= -3 && x < 3 ? sinc(x) * sinc(x / 3) : 0) },
  bilinear: { support: 1, weight: (x) => { const a = Math.abs(x); return a < 1 ? 1 - a : 0; } },
};

function coefficients(inSize, outSize, filter) {
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = filter.support * filterScale;
  const ksize = Math.ceil(support) * 2 + 1;
  const bounds = new Int32Array(outSize * 2);
  const kk = new Float64Array(outSize * ksize);
  for (let xx = 0; xx < outSize; xx += 1) {
    const center = (xx + 0.5) * scale;
    const ss = 1 / filterScale;
    let xmin = Math.trunc(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    let xmax = Math.trunc(center + support + 0.5);
    if (xmax > inSize) xmax = inSize;
    xmax -= xmin;
    let ww = 0;
    const base = xx * ksize;
    for (let x = 0; x < xmax; x += 1) {
      const w = filter.weight((x + xmin - center + 0.5) * ss);
      kk[base + x] = w;
      ww += w;
    }
    for (let x = 0; x < xmax; x += 1) if (ww !== 0) kk[base + x] /= ww;
    bounds[xx * 2] = xmin;
    bounds[xx * 2 + 1] = xmax;
  }
  // normalize_coeffs_8bpc: doubles to fixed point, rounded half away from zero
  const fixed = new Int32Array(kk.length);
  for (let i = 0; i < kk.length; i += 1) {
    fixed[i] = kk[i] < 0 ? Math.trunc(-0.5 + kk[i] * (1 << PRECISION_BITS)) : Math.trunc(0.5 + kk[i] * (1 << PRECISION_BITS));
  }
  return { bounds, kk: fixed, ksize };
}

const clip8 = (value) => (value >= 255 * (1 << PRECISION_BITS) ? 255 : value <= 0 ? 0 : Math.floor(value / (1 << PRECISION_BITS)));

// One pass along x (horizontal) or y, 8 bits per channel, `channels` interleaved.
function pass(src, width, height, channels, outSize, horizontal, filter) {
  const { bounds, kk, ksize } = coefficients(horizontal ? width : height, outSize, filter);
  const outW = horizontal ? outSize : width;
  const outH = horizontal ? height : outSize;
  const out = new Uint8ClampedArray(outW * outH * channels);
  const half = 1 << (PRECISION_BITS - 1);
  for (let y = 0; y < outH; y += 1) {
    for (let x = 0; x < outW; x += 1) {
      const xx = horizontal ? x : y;
      const min = bounds[xx * 2];
      const count = bounds[xx * 2 + 1];
      const k = xx * ksize;
      for (let c = 0; c < channels; c += 1) {
        let sum = half;
        if (horizontal) {
          let at = (y * width + min) * channels + c;
          for (let i = 0; i < count; i += 1, at += channels) sum += src[at] * kk[k + i];
        } else {
          let at = (min * width + x) * channels + c;
          const step = width * channels;
          for (let i = 0; i < count; i += 1, at += step) sum += src[at] * kk[k + i];
        }
        out[(y * outW + x) * channels + c] = clip8(sum);
      }
    }
  }
  return out;
}

/** Image.resize((outW, outH), filter) for 8-bit pixels: the horizontal pass first, as Pillow does. */
export function resize(src, width, height, channels, outW, outH, filterName = "lanczos") {
  const filter = FILTERS[filterName];
  let data = src;
  let w = width;
  if (outW !== width) { data = pass(data, w, height, channels, outW, true, filter); w = outW; }
  if (outH !== height) data = pass(data, w, height, channels, outH, false, filter);
  return data === src ? Uint8ClampedArray.from(src) : data;
}

// ---------- rembg's u2net pre- and post-processing ----------
/** (H x W RGB, uint8) -> 1 x 3 x 320 x 320 float32: Lanczos to 320 x 320, / max pixel, mean/std. */
export function preprocess(rgb, width, height) {
  const small = resize(rgb, width, height, 3, SIDE, SIDE);
  let max = 0;
  for (let i = 0; i < small.length; i += 1) if (small[i] > max) max = small[i];
  const divisor = Math.max(max, 1e-6);
  const plane = SIDE * SIDE;
  const tensor = new Float32Array(3 * plane);
  for (let i = 0; i < plane; i += 1) {
    for (let c = 0; c < 3; c += 1) tensor[c * plane + i] = (small[i * 3 + c] / divisor - MEAN[c]) / STD[c];
  }
  return tensor;
}

/** The first output's channel 0 (320 x 320), min-max normalised, x 255 truncated to uint8 (float32
 * arithmetic, as numpy does it on the float32 output), then Lanczos back to width x height. */
export function postprocess(pred, width, height) {
  const f = Math.fround;
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < SIDE * SIDE; i += 1) { if (pred[i] < min) min = pred[i]; if (pred[i] > max) max = pred[i]; }
  const range = f(max - min);
  const mask = new Uint8ClampedArray(SIDE * SIDE);
  for (let i = 0; i < mask.length; i += 1) {
    const value = Math.min(Math.max(f(f(pred[i] - min) / range), 0), 1);
    mask[i] = Math.trunc(f(value * 255));
  }
  return resize(mask, SIDE, SIDE, 1, width, height);
}

// ---------- the photo ----------
async function decode(file) {
  // Orientation from EXIF, as the server does; no colour management (Pillow ignores ICC profiles).
  const bitmap = await createImageBitmap(file, { imageOrientation: "from-image", colorSpaceConversion: "none", premultiplyAlpha: "none" });
  const canvas = document.createElement("canvas");
  canvas.width = bitmap.width;
  canvas.height = bitmap.height;
  const context = canvas.getContext("2d", { willReadFrequently: true });
  context.drawImage(bitmap, 0, 0);
  bitmap.close();
  const rgba = context.getImageData(0, 0, canvas.width, canvas.height).data;
  const rgb = new Uint8ClampedArray(canvas.width * canvas.height * 3);
  for (let i = 0, j = 0; i < rgba.length; i += 4, j += 3) { rgb[j] = rgba[i]; rgb[j + 1] = rgba[i + 1]; rgb[j + 2] = rgba[i + 2]; }
  return { rgb, width: canvas.width, height: canvas.height };
}

function workingSize(width, height, maxSide) {
  const long = Math.max(width, height);
  if (long <= maxSide) return [width, height];
  const scale = maxSide / long;
  return [Math.max(1, Math.round(width * scale)), Math.max(1, Math.round(height * scale))];
}

/**
 * Cut out the person in `file` (a JPEG, PNG or WebP Blob) on this device.
 * Returns {alpha: Uint8ClampedArray (H x W, 255 = person), rgb (H x W x 3), width, height, ms,
 * first: whether this was the first run of the page, stats}. Like the server, a photo whose long
 * side exceeds working_max_side is segmented at that size and its alpha scaled back (bilinear).
 */
export async function cutout(file, assets, { onPhase = () => {} } = {}) {
  onPhase(loading ? "Starting the on-device model…" : "Downloading the on-device model (once; the browser keeps it)…");
  const { ort, session } = await prepare(assets);
  onPhase("Cutting out on your device…");
  const started = performance.now();
  const photo = await decode(file);
  const [workW, workH] = workingSize(photo.width, photo.height, assets.working_max_side || 2048);
  const working = workW === photo.width ? photo.rgb : resize(photo.rgb, photo.width, photo.height, 3, workW, workH);
  const input = new ort.Tensor("float32", preprocess(working, workW, workH), [1, 3, SIDE, SIDE]);
  const inferStarted = performance.now();
  const outputs = await session.run({ [session.inputNames[0]]: input });
  const inferMs = performance.now() - inferStarted;
  const pred = outputs[session.outputNames[0]].data;
  let alpha = postprocess(pred, workW, workH);
  for (const name of session.outputNames) outputs[name].dispose?.();
  if (workW !== photo.width) alpha = resize(alpha, workW, workH, 1, photo.width, photo.height, "bilinear");
  const ms = performance.now() - started;
  stats.runs.push({ ms, inferMs });
  return { alpha, rgb: photo.rgb, width: photo.width, height: photo.height, ms, inferMs, first: stats.runs.length === 1, stats: { ...stats, runs: [...stats.runs] } };
}

/**
 * RGBA pixels of the cut-out: the photo's colours under the alpha (fully transparent pixels RGB 0, as
 * the server writes them), or flattened onto `background` ([r, g, b]) when one is given.
 */
export function compose(result, background = null) {
  const { alpha, rgb, width, height } = result;
  const out = new Uint8ClampedArray(width * height * 4);
  for (let i = 0, j = 0, k = 0; i < alpha.length; i += 1, j += 3, k += 4) {
    const a = alpha[i];
    if (background) {
      const t = a / 255;
      out[k] = rgb[j] * t + background[0] * (1 - t);
      out[k + 1] = rgb[j + 1] * t + background[1] * (1 - t);
      out[k + 2] = rgb[j + 2] * t + background[2] * (1 - t);
      out[k + 3] = 255;
    } else if (a) {
      out[k] = rgb[j]; out[k + 1] = rgb[j + 1]; out[k + 2] = rgb[j + 2]; out[k + 3] = a;
    }
  }
  return new ImageData(out, width, height);
}

/** Encode ImageData as `type` (image/png, image/jpeg, image/webp) in a Blob. */
export function encode(imageData, type) {
  const canvas = document.createElement("canvas");
  canvas.width = imageData.width;
  canvas.height = imageData.height;
  canvas.getContext("2d").putImageData(imageData, 0, 0);
  return new Promise((resolve, reject) => {
    canvas.toBlob((blob) => (blob ? resolve(blob) : reject(new Error("this browser cannot encode that format"))), type, 0.92);
  });
}
