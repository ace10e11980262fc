"""ONNX models through the pipeline with onnxruntime: a CNN written and exported in PyTorch
(labelled data, all schemes onnxruntime makes, profile, solve, bundle, run) and silero-vad's
recurrent detectors (a state input fed zeros, a free dimension fixed with --input-shape)."""

import numpy as np
import pytest
from conftest import one_error_line

from workbench.cli import main
from workbench.errors import InputError
from workbench.host import gallery, profiling, registry
from workbench.runtime.interpreter import open_interpreter
from workbench.runtime.ort import OrtInterpreter, is_onnx

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
SILERO = gallery.silero_models()
needs_silero = pytest.mark.skipif(len(SILERO) != 3, reason=f"{gallery.SILERO} is not installed "
                                  "(make setup installs requirements/pretrained.txt)")


@pytest.fixture(scope="module")
def cnn(tmp_path_factory):
    pytest.importorskip("torch")
    return gallery.torch_cnn(tmp_path_factory.mktemp("cnn"), n_train=2000, epochs=1,
                             n_test=300)


@pytest.mark.slow
def test_a_torch_exported_cnn_goes_through_every_step(home, cnn, tmp_path, capsys):
    onnx_file, data = cnn
    assert main(["models", "add", str(onnx_file), "--name", "cnn", "--task", "fashion",
                 "--data", str(data), "--quiet"]) == 0
    assert main(["quantise", "cnn", "--quiet"]) == 0
    rec = registry.get("cnn")
    assert rec.kind == "onnx" and rec.metric == "accuracy"
    ok = {v.precision: v for v in rec.variants if v.available}
    assert list(ok) == ["FP32", "FP16", "DR8", "FX8"]
    assert "keep float inputs and outputs" in rec.variant("FFX8").reason
    # Each scheme is what its name says, read back from the file, and smaller than FP32.
    from workbench.host import quantise as q
    for prec, v in ok.items():
        assert q.detect_precision(registry.model_dir("cnn") / v.file) == prec
        assert prec == "FP32" or v.size_mb < ok["FP32"].size_mb
        assert v.metric_n == 300 and v.metric_lo < v.metric < v.metric_hi
    assert ok["FP32"].metric > 50  # ten classes: chance is 10%
    # int8 costs little accuracy: inside the FP32 interval, as the paper's schemes do.
    assert ok["FX8"].metric >= ok["FP32"].metric_lo
    assert ok["FP32"].params > 100_000 and ok["FP32"].flops > 1_000_000
    capsys.readouterr()
    prof = tmp_path / "cnn.json"
    assert main(["profile", "--models", "cnn", "--runs", "5", "--threads", "1",
                 "--processors", "CPU[0]", "-o", str(prof), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "no XNNPACK execution provider: profiling with XNNPACK off" in err
    from workbench.profiles.store import load_profile
    p = load_profile(prof)
    assert {c.precision for c in p.configs} == set(ok) and not p.failed
    assert all(not c.xnnpack and "onnxruntime" in c.note for c in p.configs)
    assert "onnxruntime" in p.provenance.method and "onnxruntime" in p.provenance.host
    assert main(["bundle", "--profile", str(prof), "--slo", "max A; min L", "-o",
                 str(tmp_path / "b")]) == 0
    assert any(f.suffix == ".onnx" for f in (tmp_path / "b").rglob("*"))
    assert main(["run", str(tmp_path / "b"), "--duration", "1", "--rate", "20"]) == 0
    assert " served, 0 rejected, 0 lost" in capsys.readouterr().out


@needs_silero
def test_silero_vad_adds_profiles_and_feeds_its_state_input_zeros(home, tmp_path):
    options = profiling.host_options((1,), processor_ids=["CPU[0]"])
    for m in SILERO:
        o = gallery.try_model(m, profile_dir=tmp_path, options=options, warmup=1, runs=3)
        assert o.added, o.reason
        assert o.outputs == 2 and o.input == f"{576 if m.name != 'silero' else 512} float32"
        # XNNPACK on cannot run: onnxruntime's PyPI build has no XNNPACK provider.
        rec = registry.get(m.name)
        assert "FP32" in o.A and "FFX8" not in rec.available
        assert o.quantise_s > 0 and o.n_configs == len(rec.available) >= 2
        assert list(o.failed) == [
            f"onnxruntime {ort.__version__} here has no XNNPACK execution provider (it has "
            f"{', '.join(ort.get_available_providers())}); with XNNPACK off it runs its own CPU "
            "kernels"]
        assert any("'state'" in n and "gets zeros" in n for n in rec.notes)
        assert rec.feeds == m.feeds
    # W counted from the graph with the shapes one run gives: 681k multiply-adds for the
    # fixed-shape graph (counted independently from onnxruntime's tensor shapes: 679,552 MACs,
    # +0.2%); the original's convolutions sit inside If branches, whose shapes nothing gives
    # here, and its W says it is a lower bound.
    ov = registry.get("silero-openvino-16k").variant("FP32")
    assert ov.flops == pytest.approx(2 * 679_552, rel=0.01) and ov.note is None
    assert "W (FLOPs) is a lower bound" in registry.get("silero").variant("FP32").note
    # The original keeps its sample rate: 'sr' is fed 16000 from the variant file itself.
    assert any("'sr' 16000 (--feed)" in n for n in registry.get("silero").notes)
    # Both detectors, from the zero state, call faint noise no speech.
    rng = np.random.default_rng(0)
    audio = (0.1 * rng.standard_normal((1, 576))).astype(np.float32)
    outs = []
    for m in SILERO:
        v = registry.get(m.name).variant("FP32")
        it = open_interpreter(registry.model_dir(m.name) / v.file, batch=1)
        it.set_tensor(0, audio[:, -it.get_input_details()[0]["shape"][1]:])
        it.invoke()
        outs.append(float(it.get_tensor(it.get_output_details()[0]["index"]).ravel()[0]))
    assert all(0 <= p < 0.5 for p in outs), outs


@needs_silero
def test_a_free_dimension_shares_its_name_across_inputs():
    half = next(m for m in SILERO if m.name == "silero-half")
    it = OrtInterpreter(half.path)  # inputs not set are fed zeros (open_interpreter: placeholder)
    it.resize_tensor_input(0, [3, 576])
    shapes = {d["name"]: list(d["shape"]) for d in it.get_input_details()}
    assert shapes == {"input": [3, 576], "state": [2, 3, 128]}  # 'batch' follows input 0
    it.set_tensor(0, np.zeros((3, 576), np.float32))
    it.invoke()
    out = it.get_output_details()
    assert list(it.get_tensor(out[0]["index"]).shape) == [3, 1]
    with pytest.raises(ValueError, match="cannot resize"):
        it.resize_tensor_input(1, [2, 3, 64])


def test_an_engine_without_xnnpack_says_so_in_one_line(tmp_path):
    if "XnnpackExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime has XNNPACK")
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])])
    path = tmp_path / "relu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    assert is_onnx(path) and is_onnx(path.read_bytes()) and not is_onnx(b"1234TFL3....")
    with pytest.raises(RuntimeError, match="no XNNPACK execution provider"):
        open_interpreter(path, xnnpack=True)
    it = open_interpreter(path.read_bytes(), batch=2)  # default: XNNPACK where there is
    it.set_tensor(0, np.array([[-1, 2, -3, 4]] * 2, np.float32))
    it.invoke()
    assert it.get_tensor(it.get_output_details()[0]["index"]).tolist() == [[0, 2, 0, 4]] * 2


@needs_silero
def test_feeds_are_checked_and_travel_in_the_variant_file(home, capsys):
    original = next(m for m in SILERO if m.name == "silero")
    for feed, why in (("nope=1", "no input of that name; the inputs --feed can set: sr, state"),
                      ("sr=abc", "a feed is INPUT=NUMBER"), ("sr=nan", "a finite number"),
                      ("input=1", "'input' is the input the data feeds")):
        assert main(["models", "add", str(original.path), "--name", "s", "--task", "vad",
                     "--input-shape", "512", "--feed", feed, "--quiet"]) == 1
        assert why in one_error_line(capsys, "--feed")
    assert main(["models", "add", str(original.path), "--name", "s", "--task", "vad",
                 "--input-shape", "512", "--feed", "sr=16000", "--quiet"]) == 0
    path = registry.model_dir("s") / registry.get("s").variant("FP32").file
    it = OrtInterpreter(path)  # the file alone says how it runs: shape and feed
    assert list(it.get_input_details()[0]["shape"]) == [1, 512]
    assert it.get_tensor(2).tolist() == 16000  # 'sr', the third input
    capsys.readouterr()


def test_a_broken_onnx_file_is_one_line(home, tmp_path, capsys):
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"\x08\x07not a protobuf at all" * 10)
    assert main(["models", "add", str(bad), "--name", "b", "--task", "t"]) == 1
    line = one_error_line(capsys, "broken.onnx")
    assert "not a valid ONNX model" in line
    with pytest.raises(InputError, match="custom-objects is for .keras"):
        registry.add(bad, name="b", task="t", custom_objects=bad)


def _gemm(path, n_in=3, n_out=3, seed=0):
    """A one-layer ONNX classifier y = x @ W + b whose answers are known: W near the identity,
    so the top-1 is x's largest feature."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    w = (np.eye(n_in, n_out) + 0.01 * rng.standard_normal((n_in, n_out))).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", n_in])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", n_out])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(np.zeros(n_out, np.float32), "b")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_onnx_a_w_and_rows_say_what_the_runtime_does(home, tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    x = rng.random((256, 3)).astype(np.float32)
    x[::64] *= 1e4  # outliers: one per 64 samples
    y = x.argmax(axis=1)
    np.savez(tmp_path / "right.npz", x=x, y=y)
    np.savez(tmp_path / "wrong.npz", x=x, y=(y + 1) % 3)
    model = _gemm(tmp_path / "gemm.onnx")
    registry.add(model, name="g", task="t", data=tmp_path / "right.npz")
    rec = registry.quantise("g", ["FP16", "DR8", "FX8"], progress=False)
    # DR8's activations are quantised with one scale per tensor: scored in batches of 64 an
    # outlier would set every sample's scale (A ~ 20); one at a time, as served, it is ~100.
    assert rec.variant("DR8").metric >= 95
    # One network, one workload: every scheme has FP32's W and params.
    assert len({(v.flops, v.params) for v in rec.variants if v.available}) == 1
    assert rec.variant("FP32").flops == 2 * 3 * 3 + 3
    # A model re-added on other data: a resumed profile keeps the latency rows but not the old A.
    opts = profiling.host_options((1,), xnnpack=(False,), processor_ids=["CPU[0]"])
    out = tmp_path / "p.json"
    variants, inputs = registry.profiling_inputs(["g"])
    import workbench.profiles.store as store

    def fail(*a, **k):
        raise KeyboardInterrupt  # killed after every row was measured, before the profile
    monkeypatch.setattr(store, "save_profile", fail)
    with pytest.raises(KeyboardInterrupt):
        profiling.profile_variants(variants, inputs, out, warmup=1, runs=3, options=opts,
                                   progress=False)
    monkeypatch.undo()
    partial = out.with_name(out.name + ".partial.jsonl")
    kept = partial.read_text()
    assert '"A": 100' in kept or '"A": 99' in kept
    registry.add(model, name="g", task="t", data=tmp_path / "wrong.npz", overwrite=True)
    registry.quantise("g", ["FP16", "DR8", "FX8"], progress=False)
    variants, inputs = registry.profiling_inputs(["g"])
    again = profiling.profile_variants(variants, inputs, out, warmup=1, runs=3, options=opts,
                                       progress=False)
    # The rows were resumed, not measured again (same latencies), with the model's A as it is.
    import json
    rows = [json.loads(line) for line in kept.splitlines()]
    first_L = {r["id"]: r["L"] for r in rows if "L" in r}
    assert {c.id: c.L for c in again.configs} == first_L
    fp32 = next(c for c in again.configs if c.precision == "FP32")
    assert fp32.A < 5 and fp32.A_lo <= fp32.A <= fp32.A_hi
    # Two models of one task on different data are not comparable.
    np.savez(tmp_path / "other.npz", x=x[:100], y=y[:100])
    registry.add(model, name="g2", task="t", data=tmp_path / "other.npz")
    with pytest.raises(InputError, match="mixes evaluation data"):
        registry.profiling_inputs(["g", "g2"])


def test_a_feed_must_fit_its_input(home):
    original = next((m for m in SILERO if m.name == "silero"), None)
    if original is None:
        pytest.skip(f"{gallery.SILERO} is not installed")
    for feed, why in (("sr=3.7", "a whole number"), ("sr=1e30", "in -9223372036854775808..9223372036854775807")):
        with pytest.raises(InputError, match=why):
            registry.add(original.path, name="s", task="vad", input_shape="512", feeds=[feed])
    # (a --feed for a model with one input: tests/test_model_shapes.py)
