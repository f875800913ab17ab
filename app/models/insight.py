"""insightface's recognition, attribute, landmark and swap models over our own sessions.

Each class reproduces the pre- and post-processing of the insightface 2.1 class named in its
docstring (``insightface/model_zoo/*.py``), without OpenCV and without insightface's loader
(``model_zoo.get_model`` drops our session options, FACTS.md): the registry builds the session
with ``app.models.sessions.create_session`` and hands it in. Images are ``(H, W, 3)`` uint8 RGB;
:func:`to_blob` is the one place that turns pixels into network input.

The loaders (``load_*``) read what insightface reads from the ONNX file itself: the input
normalisation, which insightface infers from the names of the first graph nodes, and INSwapper's
identity map ``emap`` (the graph's last initializer).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
from onnx import numpy_helper

from ..imaging.face_align import box_transform, estimate_norm, invert_affine, l2_normalise, paste_back, transform_points, warp_affine
from .faces import Face
from .sessions import Providers, create_session

__all__ = [
    "ArcFace",
    "Embedding",
    "GenderAge",
    "Landmark106",
    "Swapper",
    "load_arcface",
    "load_genderage",
    "load_landmark_106",
    "load_swapper",
    "to_blob",
]

log = logging.getLogger(__name__)


def to_blob(images: np.ndarray | Sequence[np.ndarray], *, mean: float, std: float) -> np.ndarray:
    """Pixels to network input: ``(H, W, 3)`` uint8 **RGB** (or a list) -> ``(N, 3, H, W)`` float32
    ``(x - mean) / std``, channels in **RGB** order.

    The one place the colour order is decided. insightface reads images with OpenCV (BGR) and builds
    every blob with ``cv2.dnn.blobFromImage(img, 1 / std, size, (mean,) * 3, swapRB=True)``, so all
    its networks receive RGB. Our pixels are RGB from decoding on, so nothing is swapped here.
    """
    batch = [images] if isinstance(images, np.ndarray) and images.ndim == 3 else list(images)
    for image in batch:
        if image.ndim != 3 or image.shape[2] != 3:
            raise ValueError(f"images must be (H, W, 3), got {image.shape}")
    stacked = np.stack([np.asarray(image, dtype=np.float32) for image in batch])
    return np.ascontiguousarray(((stacked - mean) / std).transpose(0, 3, 1, 2), dtype=np.float32)


def graph_normalisation(model: onnx.ModelProto, *, default: tuple[float, float], bn_data: bool) -> tuple[float, float]:
    """insightface's rule for the input ``(mean, std)`` of its recognition/attribute/landmark models.

    Models converted from MXNet normalise inside the graph: when the first 8 nodes include one named
    ``Sub*``/``_minus*`` and one named ``Mul*``/``_mul*`` (or, with ``bn_data``, a ``bn_data`` node
    among the first 3), the input is raw 0-255 (mean 0, std 1); otherwise ``default``.
    """
    found_sub = found_mul = False
    for index, node in enumerate(model.graph.node[:8]):
        if node.name.startswith(("Sub", "_minus")):
            found_sub = True
        if node.name.startswith(("Mul", "_mul")):
            found_mul = True
        if bn_data and index < 3 and node.name == "bn_data":
            found_sub = found_mul = True
    return (0.0, 1.0) if found_sub and found_mul else default


def _single_io(session: onnxruntime.InferenceSession, *, what: str) -> tuple[str, int, str, list[object]]:
    """(input name, square input side, output name, output shape); ValueError for another layout."""
    inputs = session.get_inputs()
    outputs = session.get_outputs()
    if len(inputs) != 1 or len(outputs) != 1:
        raise ValueError(f"{what}: expected one input and one output, got {len(inputs)} and {len(outputs)}")
    shape = inputs[0].shape
    if len(shape) != 4 or shape[1] != 3 or not isinstance(shape[2], int) or shape[2] != shape[3]:
        raise ValueError(f"{what}: input must be [N, 3, S, S] with a fixed S, got {shape}")
    return inputs[0].name, int(shape[2]), outputs[0].name, list(outputs[0].shape)


def _generated_face(size: int) -> np.ndarray:
    """A deterministic ``(size, size, 3)`` uint8 RGB test card for warm-ups."""
    ramp = np.linspace(0, 255, size, dtype=np.float32)
    card = np.empty((size, size, 3), dtype=np.uint8)
    card[..., 0] = ramp[None, :]
    card[..., 1] = ramp[:, None]
    card[..., 2] = 160
    return card


@dataclass(frozen=True)
class Embedding:
    """An identity embedding: ``vector`` is ``(D,)`` float32 with unit L2 norm (insightface's
    ``normed_embedding``); ``norm`` is the raw output's L2 norm (low for blurred or tiny faces)."""

    vector: np.ndarray
    norm: float


class ArcFace:
    """insightface ``ArcFaceONNX``: 112 x 112 crop aligned to the ArcFace template -> embedding.

    Input ``[N, 3, 112, 112]`` RGB ``(x - 127.5) / 127.5`` (or raw, see :func:`graph_normalisation`);
    output ``[N, 512]``, not normalised (we L2-normalise it).
    """

    def __init__(self, session: onnxruntime.InferenceSession, *, input_mean: float, input_std: float) -> None:
        self._input_name, self.input_size, self._output_name, output_shape = _single_io(session, what="ArcFace")
        if len(output_shape) != 2 or not isinstance(output_shape[1], int):
            raise ValueError(f"ArcFace: output must be [N, D], got {output_shape}")
        if self.input_size % 112 and self.input_size % 128:
            raise ValueError(f"ArcFace: input side {self.input_size} is not a multiple of 112 or 128")
        self.session = session
        self.dimensions: int = int(output_shape[1])
        self.input_mean = input_mean
        self.input_std = input_std

    def align(self, image: np.ndarray, face: Face) -> np.ndarray:
        """The ``(S, S, 3)`` uint8 RGB crop the network sees (insightface ``norm_crop``)."""
        matrix = estimate_norm(face.landmarks, size=self.input_size)
        return warp_affine(image, matrix, size=(self.input_size, self.input_size))

    def embed_crop(self, crop: np.ndarray) -> Embedding:
        """Embedding of an aligned ``(S, S, 3)`` uint8 RGB crop."""
        blob = to_blob(crop, mean=self.input_mean, std=self.input_std)
        raw = self.session.run([self._output_name], {self._input_name: blob})[0]
        vector = np.asarray(raw, dtype=np.float32).reshape(-1)
        return Embedding(l2_normalise(vector), float(np.linalg.norm(vector)))

    def embed(self, image: np.ndarray, face: Face) -> Embedding:
        """Embedding of ``face`` (its five landmarks) in an ``(H, W, 3)`` uint8 RGB image."""
        return self.embed_crop(self.align(image, face))

    def warmup(self) -> None:
        self.embed_crop(_generated_face(self.input_size))


class GenderAge:
    """insightface ``Attribute`` (genderage): a box-centred crop -> ``[female, male, age / 100]``.

    Crop: :func:`app.imaging.face_align.box_transform` (1.5 x the box's long side, 96 px); input RGB
    ``(x - 127.5) / 128`` (or raw, see :func:`graph_normalisation`); output ``[N, 3]``:
    gender = argmax of the first two (0 female, 1 male), age = round(third * 100).
    """

    def __init__(self, session: onnxruntime.InferenceSession, *, input_mean: float, input_std: float) -> None:
        self._input_name, self.input_size, self._output_name, output_shape = _single_io(session, what="genderage")
        if len(output_shape) != 2 or output_shape[1] != 3:
            raise ValueError(f"genderage: output must be [N, 3], got {output_shape}")
        self.session = session
        self.input_mean = input_mean
        self.input_std = input_std

    def predict_crop(self, crop: np.ndarray) -> tuple[int, int]:
        """``(gender, age)`` for a ``(S, S, 3)`` uint8 RGB crop; gender 0 female, 1 male; age in years."""
        blob = to_blob(crop, mean=self.input_mean, std=self.input_std)
        prediction = np.asarray(self.session.run([self._output_name], {self._input_name: blob})[0], dtype=np.float32)[0]
        return int(np.argmax(prediction[:2])), int(np.round(float(prediction[2]) * 100))

    def predict(self, image: np.ndarray, face: Face) -> tuple[int, int]:
        """``(gender, age)`` of ``face`` (its box) in an ``(H, W, 3)`` uint8 RGB image."""
        matrix = box_transform(face.box, size=self.input_size)
        return self.predict_crop(warp_affine(image, matrix, size=(self.input_size, self.input_size)))

    def warmup(self) -> None:
        self.predict_crop(_generated_face(self.input_size))


class Landmark106:
    """insightface ``Landmark`` (2d106det): a box-centred crop -> 106 ``[x, y]`` points.

    Crop as :class:`GenderAge` at 192 px; output ``[N, 212]`` = 106 ``(x, y)`` in ``[-1, 1]`` of
    the crop, mapped by ``(p + 1) * (S // 2)`` to crop px, then back to image px.
    """

    def __init__(self, session: onnxruntime.InferenceSession, *, input_mean: float, input_std: float) -> None:
        self._input_name, self.input_size, self._output_name, output_shape = _single_io(session, what="landmark")
        if len(output_shape) != 2 or not isinstance(output_shape[1], int) or output_shape[1] % 2:
            raise ValueError(f"landmark: output must be [N, 2 * points], got {output_shape}")
        self.session = session
        self.points: int = int(output_shape[1]) // 2
        self.input_mean = input_mean
        self.input_std = input_std

    def predict(self, image: np.ndarray, face: Face) -> np.ndarray:
        """``(points, 2)`` float32 ``[x, y]`` image px for ``face`` (its box) in an RGB uint8 image."""
        matrix = box_transform(face.box, size=self.input_size)
        crop = warp_affine(image, matrix, size=(self.input_size, self.input_size))
        return transform_points(self.predict_crop(crop), invert_affine(matrix)).astype(np.float32)

    def predict_crop(self, crop: np.ndarray) -> np.ndarray:
        """``(points, 2)`` float64 ``[x, y]`` crop px for a ``(S, S, 3)`` uint8 RGB crop."""
        blob = to_blob(crop, mean=self.input_mean, std=self.input_std)
        prediction = np.asarray(self.session.run([self._output_name], {self._input_name: blob})[0], dtype=np.float64)[0]
        points = prediction.reshape(-1, 2)[-self.points :]
        return (points + 1.0) * (self.input_size // 2)

    def warmup(self) -> None:
        self.predict_crop(_generated_face(self.input_size))


class Swapper:
    """insightface ``INSwapper``: puts an identity into a face, on 128 x 128 aligned crops.

    Inputs: ``target`` ``[1, 3, 128, 128]`` RGB ``x / 255`` (the crop aligned to the ArcFace
    template scaled for 128 px) and ``source`` ``[1, 512]`` (the latent: the source's normalised
    ArcFace embedding times ``emap``, L2-normalised again). Output ``[1, 3, 128, 128]`` RGB in
    ``[0, 1]``. The result is pasted back with :func:`app.imaging.face_align.paste_back`.
    """

    def __init__(self, session: onnxruntime.InferenceSession, *, emap: np.ndarray) -> None:
        inputs = session.get_inputs()
        outputs = session.get_outputs()
        if len(inputs) != 2 or len(outputs) != 1:
            raise ValueError(f"INSwapper: expected two inputs and one output, got {len(inputs)} and {len(outputs)}")
        names = [item.name for item in inputs]
        # insightface takes the first input as the image and the second as the latent; the
        # released model names them "target" and "source".
        if {"target", "source"} <= set(names):
            image_input, latent_input = inputs[names.index("target")], inputs[names.index("source")]
        else:
            image_input, latent_input = inputs[0], inputs[1]
        shape = image_input.shape
        if len(shape) != 4 or shape[1] != 3 or not isinstance(shape[2], int) or shape[2] != shape[3]:
            raise ValueError(f"INSwapper: image input must be [1, 3, S, S] with a fixed S, got {shape}")
        latent_shape = latent_input.shape
        if len(latent_shape) != 2 or not isinstance(latent_shape[1], int):
            raise ValueError(f"INSwapper: latent input must be [1, D], got {latent_shape}")
        emap = np.asarray(emap, dtype=np.float32)
        if emap.ndim != 2 or emap.shape[1] != latent_shape[1]:
            raise ValueError(f"INSwapper: emap {emap.shape} does not map onto the latent [1, {latent_shape[1]}]")
        self.session = session
        self.input_size = int(shape[2])
        self.emap = emap
        self.embedding_size = int(emap.shape[0])
        self._image_name = image_input.name
        self._latent_name = latent_input.name
        self._output_name = outputs[0].name

    def latent(self, embedding: np.ndarray) -> np.ndarray:
        """``(1, D)`` float32: ``normalise(normalise(embedding) @ emap)`` (insightface ``INSwapper.get``)."""
        vector = l2_normalise(embedding).reshape(1, -1)
        if vector.shape[1] != self.embedding_size:
            raise ValueError(f"embedding has {vector.shape[1]} values, the swapper takes {self.embedding_size}")
        latent = vector.astype(np.float32) @ self.emap
        return (latent / np.linalg.norm(latent)).astype(np.float32)

    def swap_crop(self, crop: np.ndarray, latent: np.ndarray) -> np.ndarray:
        """The swapped ``(S, S, 3)`` uint8 RGB crop for an aligned ``(S, S, 3)`` uint8 RGB crop."""
        blob = to_blob(crop, mean=0.0, std=255.0)
        prediction = self.session.run([self._output_name], {self._image_name: blob, self._latent_name: latent})[0]
        pixels = np.asarray(prediction, dtype=np.float32)[0].transpose(1, 2, 0)
        return np.clip(255.0 * pixels, 0, 255).astype(np.uint8)  # truncation, as insightface

    def swap(self, image: np.ndarray, face: Face, latent: np.ndarray) -> np.ndarray:
        """``image`` (``(H, W, 3)`` uint8 RGB) with ``face`` given the identity ``latent``
        (see :meth:`latent`), pasted back with a soft mask; a new array of the same shape."""
        matrix = estimate_norm(face.landmarks, size=self.input_size)
        crop = warp_affine(image, matrix, size=(self.input_size, self.input_size))
        return paste_back(image, self.swap_crop(crop, latent), matrix)

    def warmup(self) -> None:
        latent = self.latent(np.ones(self.embedding_size, dtype=np.float32))
        self.swap_crop(_generated_face(self.input_size), latent)


# -- loaders: file -> session (our factory) + what insightface reads from the graph ------------------


def _graph(path: Path) -> onnx.ModelProto:
    return onnx.load(str(path), load_external_data=False)


def load_arcface(path: Path, *, providers: Providers, label: str) -> ArcFace:
    mean, std = graph_normalisation(_graph(path), default=(127.5, 127.5), bn_data=False)
    return ArcFace(create_session(path, providers=providers, label=label), input_mean=mean, input_std=std)


def load_genderage(path: Path, *, providers: Providers, label: str) -> GenderAge:
    mean, std = graph_normalisation(_graph(path), default=(127.5, 128.0), bn_data=True)
    return GenderAge(create_session(path, providers=providers, label=label), input_mean=mean, input_std=std)


def load_landmark_106(path: Path, *, providers: Providers, label: str) -> Landmark106:
    mean, std = graph_normalisation(_graph(path), default=(127.5, 128.0), bn_data=True)
    return Landmark106(create_session(path, providers=providers, label=label), input_mean=mean, input_std=std)


def load_swapper(path: Path, *, providers: Providers, label: str) -> Swapper:
    graph = _graph(path).graph
    if not graph.initializer:
        raise ValueError("INSwapper: the graph has no initializers (its last one is the emap)")
    emap = np.array(numpy_helper.to_array(graph.initializer[-1]), dtype=np.float32)  # a copy: the graph is dropped
    del graph
    return Swapper(create_session(path, providers=providers, label=label), emap=emap)
