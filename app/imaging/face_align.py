"""Face geometry without models: alignment, warps, paste-back, embedding maths (pure numpy/Pillow).

Conventions, the same as OpenCV's (and so insightface's): pixel ``(x, y)`` has its centre at the
integer coordinate ``(x, y)``; a 2x3 affine ``M`` maps a source point ``p`` to ``M[:, :2] @ p +
M[:, 2]``; images are ``(H, W, 3)`` uint8 **RGB** unless stated otherwise. insightface feeds its
networks BGR images through ``cv2.dnn.blobFromImage(..., swapRB=True)``, i.e. every network sees
RGB; our images are RGB from decoding on, so no channel swap happens anywhere (see
``app.models.insight.to_blob``).

- :func:`estimate_norm` is insightface's ``face_align.estimate_norm``: the least-squares similarity
  (Umeyama 1991, no reflection) from the five landmarks to the ArcFace template, scaled for 112 px
  (recognition) or 128 px (INSwapper, the template shifted 8 px right as insightface does);
- :func:`box_transform` is ``face_align.transform`` with no rotation: the crop around a box's centre
  that the gender/age and 106-landmark models expect (side = 1.5 x the box's long side);
- :func:`warp_affine` is ``cv2.warpAffine`` (bilinear, constant border 0) with Pillow;
- :func:`paste_back` is INSwapper's paste-back: the swapped crop warped back into the photo with a
  soft mask (the crop's footprint, eroded by a tenth of its size and blurred by a twentieth).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image
from scipy import ndimage

__all__ = [
    "ARCFACE_TEMPLATE",
    "box_transform",
    "cosine_similarity",
    "estimate_norm",
    "invert_affine",
    "l2_normalise",
    "norm_crop",
    "paste_back",
    "soft_mask",
    "transform_points",
    "umeyama",
    "warp_affine",
]

#: Where ArcFace expects the five landmarks in a 112 x 112 crop (insightface ``arcface_dst``),
#: ``[x, y]`` px: left eye, right eye, nose tip, left mouth corner, right mouth corner.
ARCFACE_TEMPLATE = np.array(
    [[38.2946, 51.6963], [73.5318, 51.5014], [56.0252, 71.7366], [41.5493, 92.3655], [70.7299, 92.2041]],
    dtype=np.float64,
)


def umeyama(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Least-squares similarity transform (rotation, uniform scale, translation) from ``src`` to ``dst``.

    Umeyama (1991), "Least-squares estimation of transformation parameters between two point
    patterns", with the reflection correction; the same estimate as scikit-image's
    ``SimilarityTransform.estimate`` that insightface uses.

    Args:
        src: ``(N, 2)`` points, N >= 2, not all equal.
        dst: ``(N, 2)`` corresponding points.

    Returns:
        ``(3, 3)`` float64 homogeneous matrix ``T`` with ``dst ~ T @ [x, y, 1]``.
    """
    src = np.asarray(src, dtype=np.float64)
    dst = np.asarray(dst, dtype=np.float64)
    if src.ndim != 2 or src.shape[1] != 2 or src.shape != dst.shape or src.shape[0] < 2:
        raise ValueError(f"src and dst must both be (N >= 2, 2), got {src.shape} and {dst.shape}")
    n = src.shape[0]
    src_mean = src.mean(axis=0)
    dst_mean = dst.mean(axis=0)
    src_c = src - src_mean
    dst_c = dst - dst_mean
    src_var = float((src_c**2).sum() / n)
    if src_var <= 0.0:
        raise ValueError("src points are all the same point")
    cov = dst_c.T @ src_c / n
    d = np.ones(2)
    if np.linalg.det(cov) < 0:
        d[1] = -1.0
    u, s, vt = np.linalg.svd(cov)
    rotation = u @ np.diag(d) @ vt
    scale = float((s * d).sum() / src_var)
    transform = np.eye(3)
    transform[:2, :2] = scale * rotation
    transform[:2, 2] = dst_mean - scale * rotation @ src_mean
    return transform


def estimate_norm(landmarks: np.ndarray, *, size: int = 112) -> np.ndarray:
    """The 2x3 affine that maps a face's five landmarks onto the ArcFace template for a ``size`` crop.

    As insightface's ``estimate_norm``: for ``size`` a multiple of 112 the template is scaled by
    ``size / 112``; for a multiple of 128 it is scaled by ``size / 128`` and shifted right by
    ``8 * size / 128`` px (INSwapper's 128 px crops).

    Args:
        landmarks: ``(5, 2)`` ``[x, y]`` image px in insightface order.
        size: Crop side in px, a multiple of 112 or 128.

    Returns:
        ``(2, 3)`` float64 matrix from image px to crop px.
    """
    points = np.asarray(landmarks, dtype=np.float64)
    if points.shape != (5, 2):
        raise ValueError(f"landmarks must be (5, 2), got {points.shape}")
    if size % 112 == 0:
        template = ARCFACE_TEMPLATE * (size / 112.0)
    elif size % 128 == 0:
        template = ARCFACE_TEMPLATE * (size / 128.0)
        template[:, 0] += 8.0 * size / 128.0
    else:
        raise ValueError(f"size must be a multiple of 112 or 128, got {size}")
    return umeyama(points, template)[:2]


def box_transform(box: tuple[float, float, float, float], *, size: int) -> np.ndarray:
    """The 2x3 affine of insightface's ``face_align.transform`` (no rotation) for a face box.

    The box centre goes to the crop centre and the box's long side times 1.5 becomes ``size``: the
    input crop of the gender/age (96 px) and 106-landmark (192 px) models.

    Returns:
        ``(2, 3)`` float64 matrix from image px to crop px.
    """
    x1, y1, x2, y2 = (float(v) for v in box)
    long_side = max(x2 - x1, y2 - y1)
    if long_side <= 0:
        raise ValueError(f"box has no area: {box}")
    scale = size / (long_side * 1.5)
    cx, cy = (x1 + x2) / 2.0, (y1 + y2) / 2.0
    return np.array([[scale, 0.0, size / 2.0 - cx * scale], [0.0, scale, size / 2.0 - cy * scale]])


def invert_affine(matrix: np.ndarray) -> np.ndarray:
    """The inverse of a 2x3 affine (``cv2.invertAffineTransform``), float64 ``(2, 3)``."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.shape != (2, 3):
        raise ValueError(f"matrix must be (2, 3), got {m.shape}")
    inverse = np.linalg.inv(m[:, :2])
    return np.hstack([inverse, (-inverse @ m[:, 2])[:, None]])


def transform_points(points: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Apply a 2x3 affine to ``(N, 2)`` points; returns ``(N, 2)`` float64."""
    p = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    m = np.asarray(matrix, dtype=np.float64)
    return p @ m[:, :2].T + m[:, 2]


def _as_pil(image: np.ndarray | Image.Image) -> Image.Image:
    if isinstance(image, Image.Image):
        return image
    array = np.asarray(image)
    if array.ndim == 3 and array.shape[2] == 3 and array.dtype == np.uint8:
        return Image.fromarray(np.ascontiguousarray(array), "RGB")
    if array.ndim == 2 and array.dtype == np.uint8:
        return Image.fromarray(np.ascontiguousarray(array), "L")
    if array.ndim == 2:
        return Image.fromarray(np.ascontiguousarray(array, dtype=np.float32), "F")
    raise ValueError(f"unsupported image: shape {array.shape}, dtype {array.dtype}")


def warp_affine(image: np.ndarray | Image.Image, matrix: np.ndarray, *, size: tuple[int, int]) -> np.ndarray:
    """``cv2.warpAffine(image, matrix, size, INTER_LINEAR, BORDER_CONSTANT 0)`` with Pillow.

    Args:
        image: ``(H, W, 3)`` uint8 RGB, ``(H, W)`` uint8, ``(H, W)`` float (computed as float32),
            or a Pillow image of mode RGB, L or F.
        matrix: ``(2, 3)`` affine from source px to output px (pixel centres at integers).
        size: ``(width, height)`` of the output in px.

    Returns:
        The warped array: ``(height, width, 3)`` uint8 for RGB, ``(height, width)`` uint8 for L,
        ``(height, width)`` float32 for F; 0 outside the source.
    """
    source = _as_pil(image)
    inverse = invert_affine(matrix)
    # Pillow asks for the output->source map in coordinates where a pixel's centre is at +0.5:
    # src + 0.5 = A (out + 0.5 - 0.5) + t + 0.5, so its offset is t - A @ (0.5, 0.5) + 0.5.
    a, b, c = inverse[0]
    d, e, f = inverse[1]
    data = (a, b, c - 0.5 * (a + b) + 0.5, d, e, f - 0.5 * (d + e) + 0.5)
    width, height = size
    warped = source.transform(
        (int(width), int(height)), Image.Transform.AFFINE, data, resample=Image.Resampling.BILINEAR, fillcolor=0
    )
    return np.asarray(warped)


def norm_crop(image: np.ndarray | Image.Image, landmarks: np.ndarray, *, size: int = 112) -> tuple[np.ndarray, np.ndarray]:
    """The aligned face crop (insightface ``norm_crop2``).

    Returns:
        ``(crop, matrix)``: ``(size, size, 3)`` uint8 RGB and the ``(2, 3)`` image->crop affine.
    """
    matrix = estimate_norm(landmarks, size=size)
    return warp_affine(image, matrix, size=(size, size)), matrix


def l2_normalise(vector: np.ndarray) -> np.ndarray:
    """``vector / ||vector||`` as float32 (a zero vector stays zero)."""
    v = np.asarray(vector, dtype=np.float64).ravel()
    norm = float(np.linalg.norm(v))
    return (v / norm if norm > 0 else v).astype(np.float32)


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of the angle between two vectors, in ``[-1, 1]`` (0.0 when either is zero)."""
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise ValueError(f"vectors differ in length: {x.shape[0]} and {y.shape[0]}")
    denominator = float(np.linalg.norm(x) * np.linalg.norm(y))
    if denominator == 0.0:
        return 0.0
    return float(np.clip(np.dot(x, y) / denominator, -1.0, 1.0))


@dataclass(frozen=True)
class Window:
    """A rectangle of an image in px: columns ``x0:x1``, rows ``y0:y1``."""

    x0: int
    y0: int
    x1: int
    y1: int

    @property
    def size(self) -> tuple[int, int]:
        return self.x1 - self.x0, self.y1 - self.y0


def _footprint_window(crop_size: int, inverse: np.ndarray, *, width: int, height: int, margin: int) -> Window | None:
    corners = np.array([[0, 0], [crop_size - 1, 0], [0, crop_size - 1], [crop_size - 1, crop_size - 1]], dtype=np.float64)
    mapped = transform_points(corners, inverse)
    x0 = max(0, int(np.floor(mapped[:, 0].min())) - margin)
    y0 = max(0, int(np.floor(mapped[:, 1].min())) - margin)
    x1 = min(width, int(np.ceil(mapped[:, 0].max())) + margin + 1)
    y1 = min(height, int(np.ceil(mapped[:, 1].max())) + margin + 1)
    if x1 <= x0 or y1 <= y0:
        return None
    return Window(x0, y0, x1, y1)


def _shifted(matrix: np.ndarray, window: Window) -> np.ndarray:
    """`matrix` (crop -> image px) followed by a move of the window's origin to (0, 0)."""
    shifted = np.array(matrix, dtype=np.float64, copy=True)
    shifted[0, 2] -= window.x0
    shifted[1, 2] -= window.y0
    return shifted


def soft_mask(footprint: np.ndarray, *, at_image_edge: bool = True) -> np.ndarray:
    """INSwapper's paste-back mask from the warped crop footprint.

    As insightface: values > 20 (of 255) count as inside; ``mask_size`` is the geometric mean of
    the inside region's height and width; the region is eroded with a ``k x k`` square,
    ``k = max(mask_size // 10, 10)``, then blurred with a Gaussian of kernel ``2k' + 1``,
    ``k' = max(mask_size // 20, 5)`` (OpenCV's sigma for that kernel; reflect-101 border).
    Like ``cv2.erode``, the area outside the array does not erode the region
    (``at_image_edge``).

    Args:
        footprint: ``(H, W)`` float, 0-255: the warped all-255 crop.

    Returns:
        ``(H, W)`` float32 weights in ``[0, 1]`` (1: take the swapped pixel).
    """
    inside = np.asarray(footprint) > 20
    rows, cols = np.nonzero(inside)
    if rows.size == 0:
        return np.zeros(inside.shape, dtype=np.float32)
    mask_h = int(rows.max() - rows.min())
    mask_w = int(cols.max() - cols.min())
    mask_size = int(np.sqrt(mask_h * mask_w))
    k = max(mask_size // 10, 10)
    eroded = ndimage.binary_erosion(inside, structure=np.ones((k, k), dtype=bool), border_value=1 if at_image_edge else 0)
    k_blur = max(mask_size // 20, 5)
    ksize = 2 * k_blur + 1
    sigma = 0.3 * ((ksize - 1) * 0.5 - 1) + 0.8  # OpenCV's sigma for a given kernel size
    blurred = ndimage.gaussian_filter(eroded.astype(np.float32), sigma=sigma, mode="mirror", truncate=(k_blur + 0.25) / sigma)
    return np.clip(blurred, 0.0, 1.0).astype(np.float32)


def paste_back(target: np.ndarray, crop: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Blend a processed aligned crop back into the photo it was cut from (INSwapper paste-back).

    The crop is warped back with the inverse of ``matrix`` and mixed in with :func:`soft_mask`, so
    pixels outside the crop's eroded footprint are unchanged, bit for bit. Only the window around
    the footprint is computed (a 24-megapixel photo costs the same as a small one).

    Args:
        target: ``(H, W, 3)`` uint8 RGB photo.
        crop: ``(S, S, 3)`` uint8 RGB crop (the model's output).
        matrix: ``(2, 3)`` affine from ``target`` px to ``crop`` px (the alignment that cut it).

    Returns:
        A new ``(H, W, 3)`` uint8 RGB array.
    """
    if target.ndim != 3 or target.shape[2] != 3 or target.dtype != np.uint8:
        raise ValueError(f"target must be (H, W, 3) uint8, got {target.shape} {target.dtype}")
    if crop.ndim != 3 or crop.shape[2] != 3 or crop.shape[0] != crop.shape[1] or crop.dtype != np.uint8:
        raise ValueError(f"crop must be (S, S, 3) uint8, got {crop.shape} {crop.dtype}")
    height, width = target.shape[:2]
    size = crop.shape[0]
    inverse = invert_affine(matrix)
    scale = float(np.sqrt(abs(np.linalg.det(inverse[:, :2]))))
    margin = max(int(size * scale) // 20, 5) + 4  # the blur never reaches further out than this
    window = _footprint_window(size, inverse, width=width, height=height, margin=margin)
    result = target.copy()
    if window is None:
        return result
    to_window = _shifted(inverse, window)  # crop px -> window px
    window_size = window.size
    footprint = warp_affine(np.full((size, size), 255.0, dtype=np.float32), to_window, size=window_size)
    warped = warp_affine(crop, to_window, size=window_size).astype(np.float32)
    mask = soft_mask(footprint)[:, :, None]
    region = result[window.y0 : window.y1, window.x0 : window.x1].astype(np.float32)
    blended = mask * warped + (1.0 - mask) * region
    result[window.y0 : window.y1, window.x0 : window.x1] = np.clip(np.rint(blended), 0, 255).astype(np.uint8)
    return result
