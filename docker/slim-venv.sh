#!/bin/sh
# Cut a built virtual environment down to what the server runs (used by the Dockerfile's builder).
# Each cut is checked by the image's own smoke test (.ci/container-test.sh): every endpoint,
# alpha matting included, runs against the slimmed environment.
#   slim-venv.sh VENV
set -eu
VENV=$1
SITE=$(echo "$VENV"/lib/python3.*/site-packages)

# Test suites, C sources and headers: never imported at run time (type stubs stay: scikit-image
# reads its .pyi files to build its lazy imports).
find "$SITE" -depth -type d \( -name tests -o -name __pycache__ \) -exec rm -rf {} +
rm -rf "$SITE"/onnx/backend/test "$SITE"/numpy/_core/include
find "$SITE" -type f \( -name '*.pyx' -o -name '*.pxd' -o -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.cc' \
  -o -name '*.hpp' -o -name '*.proto' \) -delete

# SciPy subpackages that nothing on the request path imports (checked with sys.modules after
# every endpoint ran: constants, fft, linalg, ndimage, optimize (the ID photo's placement, HiGHS),
# sparse, spatial, special and _lib are used).
for sub in stats io signal interpolate integrate odr cluster datasets differentiate misc fftpack; do
  rm -rf "$SITE/scipy/$sub"
done
# networkx (scikit-image's graph functions) and the packaging tools are not used at run time.
rm -rf "$SITE"/networkx "$SITE"/pip "$SITE"/setuptools "$SITE"/pkg_resources "$SITE"/_distutils_hack \
  "$SITE"/distutils-precedence.pth "$VENV"/bin/pip*

# insightface's desktop GUI (needs Qt, never installed), its privateframe CLI application and its
# command-line tools: `import insightface` and the model classes import none of them.
rm -rf "$SITE"/insightface/gui "$SITE"/insightface/app/privateframe "$SITE"/insightface/commands

# scikit-image's sample images, except the astronaut (the warm-up portrait).
find "$SITE"/skimage/data -maxdepth 1 -type f \( -name '*.png' -o -name '*.jpg' -o -name '*.tif*' -o -name '*.npy' -o -name '*.npz' -o -name '*.gif' \) ! -name astronaut.png -delete

# onnxruntime's C-API library: the Python module (onnxruntime_pybind11_state) has the runtime built
# in and does not load it (ldd: not needed; /proc/PID/maps of a worker that ran every endpoint:
# never mapped): the largest single cut (docs/deploy.md). Its transformer-optimisation and tools
# packages are for offline model work (the int8 recipe uses onnxruntime.quantization: kept).
rm -f "$SITE"/onnxruntime/capi/libonnxruntime.so.*
rm -rf "$SITE"/onnxruntime/transformers "$SITE"/onnxruntime/tools
# numba's CUDA target (pymatting's kernels are CPU-only njit; `import numba` does not import it).
rm -rf "$SITE"/numba/cuda
# scikit-image subpackages nothing imports (its lazy loader imports a subpackage on first use;
# sys.modules after every endpoint ran, HEIC and alpha matting included: transform, data, io, util,
# color, draw, exposure, filters (not its rank filters), measure and morphology are used).
rm -rf "$SITE"/skimage/feature "$SITE"/skimage/restoration "$SITE"/skimage/segmentation "$SITE"/skimage/graph \
  "$SITE"/skimage/registration "$SITE"/skimage/future "$SITE"/skimage/metrics "$SITE"/skimage/filters/rank
# OpenCV's Haar cascades, except the eye cascade (app/imaging/expression.py).
find "$SITE"/cv2/data -name '*.xml' ! -name haarcascade_eye.xml -delete

# Never imported at run time: Cython's typed special functions (for `cimport`), numba's TBB and
# OpenMP thread pools (app/native_threads.py selects its workqueue layer), numpy's SIMD test module,
# onnx's reference evaluator. (numpy's f2py stays: scipy's array API layer does `from numpy import *`.)
rm -f "$SITE"/scipy/special/cython_special.* "$SITE"/numba/np/ufunc/tbbpool*.so "$SITE"/numba/np/ufunc/omppool*.so \
  "$SITE"/numpy/_core/_simd*.so
rm -rf "$SITE"/onnx/reference
# scipy's sparse-graph routines (sys.modules after every endpoint: never imported), insightface's
# sample photos (read only by its demos' get_image), numba's ahead-of-time compiler, and type
# stubs: no interpreter reads a .pyi, except scikit-image's lazy loader, which reads its own.
rm -rf "$SITE"/scipy/sparse/csgraph "$SITE"/insightface/data/images "$SITE"/numba/pycc "$SITE"/onnx/backend \
  "$SITE"/onnxruntime/backend "$SITE"/numpy/_core/_*_tests.*.so
find "$SITE" -name '*.pyi' -not -path "$SITE/skimage/*" -delete
# Identical files in two packages (scipy's wheel repeats numpy's gfortran and quadmath): one copy,
# hard-linked, so the layer holds it once.
"$VENV"/bin/python - "$SITE" <<'PY'
import hashlib, os, sys
seen = {}
for folder, _, files in sorted(os.walk(sys.argv[1])):
    for name in sorted(files):
        path = os.path.join(folder, name)
        if os.path.islink(path) or os.path.getsize(path) < 65536:
            continue
        with open(path, "rb") as handle:
            key = (os.path.getsize(path), hashlib.sha256(handle.read()).hexdigest())
        if key in seen:
            os.unlink(path)
            os.link(seen[key], path)
        else:
            seen[key] = path
PY

# llvmlite's LLVM library carries ~19 MB of symbols it does not need. (Only this one: the
# auditwheel-patched libraries in *.libs/ stop loading once stripped.)
strip --strip-unneeded "$SITE"/llvmlite/binding/libllvmlite.so
