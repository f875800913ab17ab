"""The int8 variant (app/models/quantised.py) and the choice between it and fp32 (app/models/precision.py,
MODEL_PRECISION), on a small generated model with u2net's input, outputs and output heads.

The fake (`fake_u2net`) is opset 11 like the real file: `input.1` [1, 3, 320, 320] -> seven outputs
`1959`..`1965` [1, 1, 320, 320]: a small convolutional trunk, six one-channel side convolutions, their
sigmoids, and a fusion convolution of the six whose sigmoid is `1959` (u2net's d0).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from app import create_app
from app.config import ConfigError, Settings
from app.models import manifest, optimised, precision, quantised
from app.models.__main__ import main as models_cli
from app.models.registry import ModelFileError, Registry
from app.models.sessions import CPU, CUDA, Providers, resolve_providers
from app.service import Service

OUTPUTS = ("1959", "1960", "1961", "1962", "1963", "1964", "1965")
ONE_PHOTO = (quantised.CalibrationPhoto(*quantised._ASTRONAUT),)  # a fast calibration set for the fake
FAST = dataclasses.replace(quantised.RECIPE, method="MinMax", calibration="tests-one-photo")
# Without an int8 dot-product instruction (VNNI, AMX) onnxruntime's AVX2 kernels saturate u8 x s8
# products (precision.decide never picks int8 there); 7-bit weights avoid it, so where this CPU lacks
# one the file the test runs is made with them
VNNI = bool(precision.cpu_signature()["int8"])
FAST_HERE = FAST if VNNI else dataclasses.replace(FAST, reduce_range=True)


def fake_u2net(*, seed: int = 3) -> bytes:
    rng = np.random.default_rng(seed)

    def weight(name: str, shape: tuple[int, ...], scale: float) -> onnx.TensorProto:
        return numpy_helper.from_array(rng.normal(0.0, scale, size=shape).astype(np.float32), name)

    inits = [weight("trunk1.w", (8, 3, 3, 3), 0.3), weight("trunk1.b", (8,), 0.1),
             weight("trunk2.w", (8, 8, 3, 3), 0.2), weight("trunk2.b", (8,), 0.1),
             weight("fuse.w", (1, 6, 1, 1), 0.5), weight("fuse.b", (1,), 0.1)]
    nodes = [
        helper.make_node("Conv", ["input.1", "trunk1.w", "trunk1.b"], ["t1"], pads=[1, 1, 1, 1], name="Conv_0"),
        helper.make_node("Relu", ["t1"], ["r1"], name="Relu_1"),
        helper.make_node("Conv", ["r1", "trunk2.w", "trunk2.b"], ["t2"], pads=[1, 1, 1, 1], name="Conv_2"),
        helper.make_node("Relu", ["t2"], ["r2"], name="Relu_3"),
    ]
    sides = []
    for k in range(6):
        inits += [weight(f"side{k}.w", (1, 8, 3, 3), 0.3), weight(f"side{k}.b", (1,), 0.1)]
        nodes.append(helper.make_node("Conv", ["r2", f"side{k}.w", f"side{k}.b"], [f"d{k + 1}"], pads=[1, 1, 1, 1],
                                      name=f"Side_{k}"))
        nodes.append(helper.make_node("Sigmoid", [f"d{k + 1}"], [OUTPUTS[k + 1]], name=f"Sigmoid_side{k}"))
        sides.append(f"d{k + 1}")
    nodes += [
        helper.make_node("Concat", sides, ["sides"], axis=1, name="Concat_sides"),
        helper.make_node("Conv", ["sides", "fuse.w", "fuse.b"], ["d0"], name="Conv_fuse"),
        helper.make_node("Sigmoid", ["d0"], [OUTPUTS[0]], name="Sigmoid_d0"),
    ]
    graph = helper.make_graph(
        nodes, "u2net-fake",
        [helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [1, 3, 320, 320])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 1, 320, 320]) for name in OUTPUTS],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], producer_name="pilotlight-tests")
    model.ir_version = 6
    onnx.checker.check_model(model)
    return model.SerializeToString()


HEADS = sorted([f"Side_{k}" for k in range(6)] + [f"Sigmoid_side{k}" for k in range(6)]
               + ["Concat_sides", "Conv_fuse", "Sigmoid_d0"])


@pytest.fixture()
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, manifest.ModelSpec]:
    """MODEL_HOME with the fake as `u2net.onnx`, and the manifest's u2net pinned to it."""
    import hashlib

    data = fake_u2net()
    home = tmp_path / "models"
    home.mkdir()
    (home / "u2net.onnx").write_bytes(data)
    spec = dataclasses.replace(manifest.MANIFEST["u2net"], size=len(data), sha256=hashlib.sha256(data).hexdigest(),
                               sources=())
    monkeypatch.setitem(manifest.MANIFEST, "u2net", spec)
    return home, spec


def run(path: Path | bytes, tensor: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(path if isinstance(path, bytes) else str(path), providers=[CPU])
    return session.run(None, {"input.1": tensor})


def opset(model: onnx.ModelProto) -> int:
    return max(entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx"))


# -- the derivation ---------------------------------------------------------------------------------


def test_network_input_is_rembgs_own(astronaut: np.ndarray) -> None:
    from PIL import Image

    from app.models.segmentation import rembg_session

    class Names:
        def get_inputs(self) -> list[object]:
            return [type("Input", (), {"name": "input.1"})()]

    session = rembg_session("u2net", Names())  # type: ignore[arg-type]
    theirs = session.normalize(Image.fromarray(astronaut), quantised.MEAN, quantised.STD, (320, 320))["input.1"]
    np.testing.assert_array_equal(quantised.network_input(astronaut), theirs)


def test_head_nodes_are_the_one_channel_convs_and_what_follows() -> None:
    assert quantised.head_nodes(onnx.load_from_string(fake_u2net())) == HEADS


def test_quantise_converts_the_opset_and_quantises_the_trunk_per_channel(tmp_path: Path) -> None:
    source = tmp_path / "u2net.onnx"
    source.write_bytes(fake_u2net())
    target = tmp_path / "int8.onnx"
    inputs = quantised.calibration_inputs(ONE_PHOTO)
    quantised.quantise(source, target, inputs=inputs, recipe=FAST_HERE)
    model = onnx.load(str(target))
    assert opset(onnx.load(str(source))) == 11 and opset(model) == 13
    produced_by = {output: node for node in model.graph.node for output in node.output}
    weights = {tensor.name: numpy_helper.to_array(tensor) for tensor in model.graph.initializer}
    convs = {node.name: node for node in model.graph.node if node.op_type == "Conv"}
    for name in ("Conv_0", "Conv_2"):  # the trunk: weights through a per-channel DequantizeLinear
        dequant = produced_by[convs[name].input[1]]
        assert dequant.op_type == "DequantizeLinear"
        assert weights[dequant.input[0]].dtype == np.int8 and weights[dequant.input[1]].shape == (8,)
        assert produced_by[convs[name].input[0]].op_type == "DequantizeLinear"  # and its activations
    for name in ("Conv_fuse", *(f"Side_{k}" for k in range(6))):  # the heads stay fp32
        assert convs[name].input[1] in weights and weights[convs[name].input[1]].dtype == np.float32
    assert [o.name for o in model.graph.output] == list(OUTPUTS)
    assert [o.name for o in model.graph.input] == ["input.1"]
    before, after = run(source, inputs[0]), run(target, inputs[0])
    assert all(a.shape == (1, 1, 320, 320) and a.dtype == np.float32 for a in after)
    worst = max(float(np.abs(a - b).max()) for a, b in zip(before, after, strict=True))
    mean = float(np.mean([np.abs(a - b).mean() for a, b in zip(before, after, strict=True)]))
    # quantised (not the same graph), and close: 7-bit weights (FAST_HERE without VNNI) have twice the step
    assert 0.0 < mean < 0.01 and worst < (0.1 if VNNI else 0.2), (mean, worst)


def test_all_nodes_are_quantised_without_fp32_heads(tmp_path: Path) -> None:
    source = tmp_path / "u2net.onnx"
    source.write_bytes(fake_u2net())
    target = tmp_path / "int8.onnx"
    quantised.quantise(source, target, inputs=quantised.calibration_inputs(ONE_PHOTO),
                       recipe=dataclasses.replace(FAST, fp32_heads=False))
    model = onnx.load(str(target))
    produced_by = {output: node for node in model.graph.node for output in node.output}
    fuse = next(node for node in model.graph.node if node.name == "Conv_fuse")
    assert produced_by[fuse.input[1]].op_type == "DequantizeLinear"


def test_write_records_and_checks_the_int8_file(fake_home: tuple[Path, manifest.ModelSpec]) -> None:
    home, spec = fake_home
    assert quantised.usable(spec, home, recipe=FAST) is None
    path = quantised.write(spec, home, recipe=FAST, photos=ONE_PHOTO)
    assert path == home / "int8" / f"ort-{ort.__version__}" / "u2net.onnx"
    record = quantised.read_record(spec, home)
    assert record is not None
    assert record["sha256"] == quantised._sha256(path) and record["size"] == path.stat().st_size
    assert record["source_sha256"] == spec.sha256 and record["recipe"] == FAST.as_dict()
    assert record["calibration_inputs"] == [ONE_PHOTO[0].label] and len(record["calibration_sha256"]) == 64
    assert record["made_with"]["onnxruntime"] == ort.__version__ and record["seconds_to_make"] >= 0
    assert quantised.usable(spec, home, recipe=FAST) == path and quantised.verify(spec, home, recipe=FAST)
    assert quantised.usable(spec, home) is None  # made with another recipe than the default: stale
    (home / "u2net.onnx").unlink()
    assert quantised.usable(spec, home, recipe=FAST) == path  # stands without its fp32 file
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    assert quantised.usable(spec, home, recipe=FAST) == path and not quantised.verify(spec, home, recipe=FAST)
    path.write_bytes(bytes(data) + b"x")
    assert quantised.usable(spec, home, recipe=FAST) is None


def test_write_needs_the_verified_fp32_file(fake_home: tuple[Path, manifest.ModelSpec]) -> None:
    home, spec = fake_home
    (home / "u2net.onnx").write_bytes(fake_u2net(seed=4))  # same size, another file
    with pytest.raises(quantised.QuantiseError, match="verified"):
        quantised.write(spec, home, recipe=FAST, photos=ONE_PHOTO)
    assert not quantised.files_for(spec, home).record.exists()


def test_a_changed_calibration_photo_is_refused() -> None:
    photo = dataclasses.replace(ONE_PHOTO[0], sha256="0" * 64)
    with pytest.raises(quantised.QuantiseError, match="sha256"):
        quantised.calibration_inputs((photo,))


def test_the_calibration_set_is_installed_and_as_recorded() -> None:
    inputs = quantised.calibration_inputs()
    assert len(inputs) == len(quantised.CALIBRATION_SET) >= 8
    assert all(tensor.shape == (1, 3, 320, 320) and tensor.dtype == np.float32 for tensor in inputs)
    assert len({quantised.calibration_digest([tensor]) for tensor in inputs}) == len(inputs)  # no duplicates


def test_the_int8_graph_has_its_own_pre_optimised_files(fake_home: tuple[Path, manifest.ModelSpec], tmp_path: Path) -> None:
    home, spec = fake_home
    quantised.write(spec, home, recipe=FAST, photos=ONE_PHOTO)
    opt = tmp_path / "optimised"
    fp32 = optimised.ensure(spec, home, opt)
    int8 = optimised.ensure(spec, quantised.folder(home), opt, variant=quantised.INT8)
    assert fp32 is not None and int8 is not None and fp32 != int8 and int8.name == "u2net.int8.onnx"
    assert optimised.verify(spec, quantised.folder(home), opt, variant=quantised.INT8)
    tensor = quantised.network_input(np.full((64, 64, 3), 90, np.uint8))
    session = ort.InferenceSession(str(int8), sess_options=__import__("app.models.sessions", fromlist=["x"]).session_options(
        preoptimised=True), providers=[CPU])
    np.testing.assert_allclose(session.run(None, {"input.1": tensor})[0], run(quantised.files_for(spec, home).model, tensor)[0],
                               atol=2e-2)


# -- the setting and the choice ----------------------------------------------------------------------


def test_model_precision_setting() -> None:
    assert Settings.from_env({}).model_precision == "auto"
    assert Settings.from_env({"MODEL_PRECISION": "INT8"}).model_precision == "int8"
    assert Settings.from_env({"MODEL_PRECISION": " fp32 "}).model_precision == "fp32"
    with pytest.raises(ConfigError, match="MODEL_PRECISION"):
        Settings.from_env({"MODEL_PRECISION": "fp16"})


def _never() -> precision.Measurement:
    raise AssertionError("measured although nothing needed a measurement")


FAST_INT8 = precision.Measurement(fp32_seconds=1.0, int8_seconds=0.4)
SLOW_INT8 = precision.Measurement(fp32_seconds=1.0, int8_seconds=0.95)


@pytest.mark.parametrize(
    ("setting", "on_cpu", "fp32", "int8", "measured", "variant"),
    [
        ("auto", True, True, True, FAST_INT8, "int8"),
        ("auto", True, True, True, SLOW_INT8, "fp32"),  # within the margin: fp32's matte
        ("auto", True, True, False, None, "fp32"),
        ("auto", True, False, True, None, "int8"),
        ("int8", True, True, True, None, "int8"),
        ("fp32", True, True, True, None, "fp32"),
        ("auto", False, True, True, None, "fp32"),  # a CUDA session
        ("int8", False, True, True, None, "fp32"),  # int8 is for CPU kernels
    ],
)
def test_decide(setting: str, on_cpu: bool, fp32: bool, int8: bool, measured: precision.Measurement | None,
                variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(precision, "AUTO_PICKS_INT8", True)  # the choice once a recipe passes the gate
    choice = precision.decide(setting=setting, on_cpu=on_cpu, fp32_installed=fp32, int8_installed=int8,
                              measure=(lambda: measured) if measured else _never)
    assert choice.variant == variant and choice.reason
    assert choice.measurement == measured


@pytest.mark.parametrize(
    ("setting", "on_cpu", "fp32", "int8"),
    [("int8", True, True, False), ("fp32", True, False, True), ("auto", True, False, False), ("auto", False, False, True)],
)
def test_decide_refuses_a_missing_variant(setting: str, on_cpu: bool, fp32: bool, int8: bool) -> None:
    with pytest.raises(precision.PrecisionError):
        precision.decide(setting=setting, on_cpu=on_cpu, fp32_installed=fp32, int8_installed=int8, measure=_never)


def test_int8_stays_opt_in_until_it_passes_the_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(precision, "AUTO_PICKS_INT8", False)
    choice = precision.decide(setting="auto", on_cpu=True, fp32_installed=True, int8_installed=True, measure=_never)
    assert choice.variant == "fp32" and "opt-in" in choice.reason
    assert precision.decide(setting="int8", on_cpu=True, fp32_installed=True, int8_installed=True,
                            measure=_never).variant == "int8"
    assert precision.decide(setting="auto", on_cpu=True, fp32_installed=False, int8_installed=True,
                            measure=_never).variant == "int8"


def test_auto_keeps_fp32_without_vnni(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(precision, "AUTO_PICKS_INT8", True)
    slow_path = precision.decide(setting="auto", on_cpu=True, fp32_installed=True, int8_installed=True,
                                 measure=_never, vnni=False)
    assert slow_path.variant == "fp32" and "VNNI" in slow_path.reason
    assert precision.decide(setting="int8", on_cpu=True, fp32_installed=True, int8_installed=True, measure=_never,
                            vnni=False).variant == "int8"  # forced: it runs, with a warning at load


def test_the_margin() -> None:
    assert precision.Measurement(1.0, precision.INT8_MARGIN).int8_faster
    assert not precision.Measurement(1.0, precision.INT8_MARGIN + 0.01).int8_faster


def test_the_measurement_is_kept_for_this_cpu_and_int8_file(fake_home: tuple[Path, manifest.ModelSpec], tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    _, spec = fake_home
    opt = tmp_path / "optimised"
    precision.keep(spec, opt, FAST_INT8, int8_sha256="abc")
    assert precision.record_path(spec, opt).parent == optimised.files_for(spec, opt).graph.parent
    assert precision.recorded(spec, opt, int8_sha256="abc") == FAST_INT8
    assert precision.recorded(spec, opt, int8_sha256="another file") is None
    monkeypatch.setattr(precision, "cpu_signature", lambda: {"model": "another CPU", "int8": []})
    assert precision.recorded(spec, opt, int8_sha256="abc") is None


def test_the_cpu_signature_names_the_int8_extensions() -> None:
    signature = precision.cpu_signature()
    flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags")).split()
    assert ("avx512_vnni" in signature["int8"]) == ("avx512_vnni" in flags)
    assert set(signature["int8"]) <= {"avx512_vnni", "avx_vnni", "amx_int8", "amx_tile", "avx_vnni_int8"}


# -- the registry, /readyz and /metrics on the fake ------------------------------------------------


def load(home: Path, setting: str, *, providers: Providers | None = None, optimised_home: Path | None = None) -> Registry:
    registry = Registry()
    registry.load(["u2net"], model_home=home, providers=providers or Providers((CPU,)), optimised_home=optimised_home,
                  model_precision=setting)
    return registry


def with_int8(fake_home: tuple[Path, manifest.ModelSpec], monkeypatch: pytest.MonkeyPatch) -> tuple[Path, manifest.ModelSpec]:
    """The fake's int8 file, made with the fast recipe, which the registry then takes as current."""
    home, spec = fake_home
    quantised.write(spec, home, recipe=FAST, photos=ONE_PHOTO)
    monkeypatch.setattr(quantised, "RECIPE", FAST)
    return home, spec


def test_the_registry_runs_the_variant_asked_for(fake_home: tuple[Path, manifest.ModelSpec], monkeypatch: pytest.MonkeyPatch,
                                                 astronaut: np.ndarray) -> None:
    home, spec = with_int8(fake_home, monkeypatch)
    int8 = load(home, "int8").get("u2net")
    fp32 = load(home, "fp32").get("u2net")
    assert (int8.variant, fp32.variant) == ("int8", "fp32")
    assert int8.file == f"int8/ort-{ort.__version__}/u2net.onnx" and fp32.file in ("", "u2net.onnx")
    assert "file" not in int8.describe()  # /readyz names no file
    assert int8.describe()["variant"] == "int8" and int8.describe()["variant_reason"] == "forced by MODEL_PRECISION"
    a = load(home, "int8").segmenter("u2net").matte(astronaut, max_side=512).alpha
    b = load(home, "fp32").segmenter("u2net").matte(astronaut, max_side=512).alpha
    assert a.shape == b.shape == astronaut.shape[:2] and not np.array_equal(a, b)


def test_int8_sessions_keep_their_packed_weights(fake_home: tuple[Path, manifest.ModelSpec], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Pre-optimised sessions skip prepacking to share weight pages, but int8 QLinearConv without its
    packed weights runs at half speed: int8 lanes, narrow and wide, keep prepacking."""
    home, _ = with_int8(fake_home, monkeypatch)
    opt = tmp_path / "optimised"
    lanes = {variant: load(home, variant, optimised_home=opt).segmenter("u2net").session.inner_session
             for variant in ("int8", "fp32")}
    assert lanes["int8"].prepack and not lanes["fp32"].prepack
    assert lanes["int8"].wide_source is not None and lanes["int8"].wide_source.name == "u2net.int8.onnx"
    assert lanes["int8"].open_wide(2)
    tensor = quantised.network_input(np.full((64, 64, 3), 90, np.uint8))
    np.testing.assert_allclose(lanes["int8"].wide.run(None, {"input.1": tensor})[0],
                               lanes["int8"].narrow.run(None, {"input.1": tensor})[0], atol=1e-5)
    lanes["int8"].wide = None


def test_auto_measures_once_and_keeps_the_result(fake_home: tuple[Path, manifest.ModelSpec], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    home, spec = with_int8(fake_home, monkeypatch)
    monkeypatch.setattr(precision, "AUTO_PICKS_INT8", True)
    # the measuring and its record are this test's subject, on any CPU: a CPU without VNNI never gets
    # as far (test_decide covers that refusal)
    monkeypatch.setattr(precision, "cpu_signature", lambda: {"model": "a CPU with VNNI", "int8": ["avx512_vnni"]})
    opt = tmp_path / "optimised"
    calls: list[precision.Measurement] = []
    real = precision.time_sessions

    def timed(*args: object, **kwargs: object) -> precision.Measurement:
        calls.append(real(*args, **kwargs))  # type: ignore[arg-type]
        return precision.Measurement(fp32_seconds=calls[-1].fp32_seconds, int8_seconds=calls[-1].fp32_seconds / 3)

    monkeypatch.setattr(precision, "time_sessions", timed)
    entry = load(home, "auto", optimised_home=opt).get("u2net")
    assert entry.variant == "int8" and entry.variant_reason.startswith("measured on this CPU") and len(calls) == 1
    kept = json.loads(precision.record_path(spec, opt).read_text())
    assert kept["int8_sha256"] == quantised.read_record(spec, home)["sha256"] and kept["int8_faster"] is True
    assert load(home, "auto", optimised_home=opt).get("u2net").variant == "int8" and len(calls) == 1  # from the record
    monkeypatch.setattr(precision, "time_sessions", lambda *a, **k: SLOW_INT8)
    precision.record_path(spec, opt).unlink()
    assert load(home, "auto", optimised_home=opt).get("u2net").variant == "fp32"


def test_an_int8_only_model_home(fake_home: tuple[Path, manifest.ModelSpec], monkeypatch: pytest.MonkeyPatch) -> None:
    home, spec = with_int8(fake_home, monkeypatch)
    (home / "u2net.onnx").unlink()  # as the container image ships it
    entry = load(home, "auto").get("u2net")
    assert entry.variant == "int8" and entry.variant_reason == "the only variant installed"
    with pytest.raises(ModelFileError, match=r"MODEL_PRECISION=fp32 needs the fp32 file .* python -m app.models fetch u2net"):
        load(home, "fp32")


def test_a_cuda_session_keeps_fp32(fake_home: tuple[Path, manifest.ModelSpec], monkeypatch: pytest.MonkeyPatch) -> None:
    """The choice for a GPU worker, made on the CPU: ORT_PROVIDERS parsed as on a CUDA build."""
    home, spec = with_int8(fake_home, monkeypatch)
    providers = resolve_providers("u2net=cuda", available=[CUDA, CPU])
    assert providers.names_for("u2net")[0] == CUDA
    resolved = precision.resolve(spec, setting="int8", model_home=home, optimised_home=None, providers=providers,
                                 fp32_installed=True)
    assert resolved.choice.variant == "fp32" and resolved.path == home / "u2net.onnx"
    assert "not on the CPU" in resolved.choice.reason
    (home / "u2net.onnx").unlink()
    with pytest.raises(precision.PrecisionError, match="fp32 file"):
        precision.resolve(spec, setting="auto", model_home=home, optimised_home=None, providers=providers,
                          fp32_installed=False)


def test_readyz_and_metrics_name_the_variant(fake_home: tuple[Path, manifest.ModelSpec], monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    home, _ = with_int8(fake_home, monkeypatch)
    settings = Settings(model_home=home, models=("u2net",), segmentation_model="u2net", ort_providers="cpu",
                        model_precision="int8", optimised_home=tmp_path / "optimised", workers=1, warmup_requests=1)
    app = create_app(settings, Registry())
    Service.of(app).load()
    client = app.test_client()
    body = client.get("/readyz").get_json()
    assert body["models"]["u2net"]["variant"] == "int8"
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(client.get("/metrics").get_data(as_text=True))
               for s in family.samples}
    assert samples[("pilotlight_model_variant", (("model", "u2net"), ("variant", "int8")))] == 1


# -- the fetch command ---------------------------------------------------------------------------------


def test_fetch_derives_int8_and_int8_only_drops_fp32(fake_home: tuple[Path, manifest.ModelSpec], tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    home, spec = fake_home
    monkeypatch.setattr(quantised, "CALIBRATION_SET", ONE_PHOTO)
    monkeypatch.setattr(quantised, "RECIPE", FAST)
    for name, value in {"MODEL_HOME": str(home), "OPTIMISED_HOME": str(tmp_path / "opt"), "ORT_PROVIDERS": "cpu"}.items():
        monkeypatch.setenv(name, value)
    assert models_cli(["fetch", "--quiet", "--no-optimise", "--no-int8", "u2net"]) == 0
    assert quantised.usable(spec, home) is None
    monkeypatch.setattr(quantised, "PASSES_GATE", False)
    assert models_cli(["fetch", "--quiet", "--no-optimise", "u2net"]) == 0  # opt-in: nothing asks for it
    assert quantised.usable(spec, home) is None
    monkeypatch.setenv("MODEL_PRECISION", "int8")
    assert models_cli(["fetch", "--quiet", "--no-optimise", "u2net"]) == 0  # asked for
    assert quantised.usable(spec, home) is not None
    quantised.files_for(spec, home).record.unlink()
    monkeypatch.delenv("MODEL_PRECISION")
    assert models_cli(["fetch", "--quiet", "--no-optimise", "--int8-only", "u2net"]) == 0
    assert quantised.verify(spec, home) and not (home / "u2net.onnx").exists()
    assert models_cli(["ensure", "--no-optimise", "u2net"]) == 0  # the int8 file stands alone: nothing to fetch
    assert not (home / "u2net.onnx").exists()
