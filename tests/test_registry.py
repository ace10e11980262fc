"""The model registry (``workbench models``, ``workbench quantise``): a user's own Keras or
.tflite model through add -> quantise -> profile -> solve -> bundle -> run, and every kind of bad
input ending in one line that names the file."""

import json

import numpy as np
import pytest
from conftest import one_error_line

from workbench.cli import main

keras = pytest.importorskip("keras")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A small Sequential CNN (16x16x1 -> 4 classes), its data, and models that are wrong in one
    way each."""
    d = tmp_path_factory.mktemp("user")
    keras.utils.set_random_seed(0)
    # The hidden Dense has >= 1024 weights: the converter int8-quantises only tensors that large.
    m = keras.Sequential([keras.Input((16, 16, 1)), keras.layers.Conv2D(8, 3, activation="relu"),
                          keras.layers.GlobalAveragePooling2D(),
                          keras.layers.Dense(128, activation="relu"),
                          keras.layers.Dense(4, activation="softmax")])
    rng = np.random.default_rng(0)
    x = rng.random((80, 16, 16, 1)).astype("float32")
    # Labels the model can learn a little of in a few steps: the brightest quadrant.
    q = x.reshape(80, 2, 8, 2, 8).mean(axis=(2, 4)).reshape(80, 4)
    y = q.argmax(axis=1)
    m.compile("adam", "sparse_categorical_crossentropy")
    m.fit(x, y, epochs=3, verbose=0)
    m.save(d / "cnn.keras")
    np.savez(d / "data.npz", x=x, y=y)
    np.savez(d / "calib.npz", x=x, y=y, x_calib=x[:20])
    np.savez(d / "wrong-shape.npz", x=x[:, :8], y=y)
    np.savez(d / "wrong-labels.npz", x=x, y=y + 2)
    np.savez(d / "wrong-count.npz", x=x, y=y[:10])
    np.savez(d / "no-x.npz", y=y)
    np.savez(d / "extra.npz", x=x, y=y, z=y)
    np.savez(d / "float-labels.npz", x=x, y=y + 0.5)
    (d / "garbage.keras").write_bytes(b"not a zip")
    (d / "notes.txt").write_text("hello")
    (d / "model.onnx").write_bytes(b"\x08\x01")
    (d / "not.npz").write_text("plain text")
    a, b = keras.Input((4,)), keras.Input((4,))
    keras.Model([a, b], keras.layers.Dense(2)(keras.layers.Concatenate()([a, b]))).save(
        d / "two-inputs.keras")
    free = keras.Input((None, None, 1))
    keras.Model(free, keras.layers.Dense(3)(keras.layers.GlobalAveragePooling2D()(
        keras.layers.Conv2D(4, 3)(free)))).save(d / "free.keras")
    return d


def test_add_a_sequential_keras_model_with_data(files, home, capsys):
    assert main(["models", "add", str(files / "cnn.keras"), "--name", "cnn", "--task", "quad",
                 "--data", str(files / "data.npz"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "added cnn" in out and "FP32" in out
    from workbench.host import registry

    rec = registry.get("cnn")
    assert (rec.kind, rec.task, rec.metric, rec.input_shape, rec.output_shape) == (
        "keras", "quad", "accuracy", [16, 16, 1], [4])
    fp32 = rec.variant("FP32")
    assert fp32.available and fp32.flops > 0 and fp32.params == 8 * 9 + 8 + 8 * 128 + 128 + 128 * 4 + 4
    # A is measured: it equals Keras's own accuracy on the same data (FP32 LiteRT is exact).
    m = keras.models.load_model(files / "cnn.keras")
    with np.load(files / "data.npz") as z:
        ref = float(np.mean(m.predict(z["x"], verbose=0).argmax(1) == z["y"]) * 100)
    assert fp32.metric == pytest.approx(ref)
    assert rec.data.calibration == "the first 80 samples of x"
    assert main(["models", "list"]) == 0
    assert "cnn" in capsys.readouterr().out
    assert main(["models", "show", "cnn", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "cnn"
    # The text form ends with how to open the graph (Netron / Model Explorer, or how to get one).
    assert main(["models", "show", "cnn"]) == 0
    graph = capsys.readouterr().out.strip().splitlines()[-1]
    assert graph.startswith("  graph: ") and "FP32.tflite" in graph
    # The registry is the workspace's: nothing outside it was written.
    assert (home / "models" / "cnn" / "FP32.tflite").is_file()
    assert main(["models", "remove", "cnn"]) == 0
    assert not (home / "models" / "cnn").exists()


@pytest.mark.parametrize("args, names", [
    (["garbage.keras"], ["garbage.keras", "is not a .keras file"]),
    (["notes.txt"], ["notes.txt", "unknown model file"]),
    (["model.onnx"], ["model.onnx", "ONNX"]),
    (["missing.keras"], ["missing.keras", "no such model file"]),
    (["two-inputs.keras", "--feed", "nope=1"], ["two-inputs.keras", "no input of that name"]),
    (["two-inputs.keras", "--feed", "x"], ["--feed", "INPUT=NUMBER", "'x'"]),
    (["cnn.keras", "--feed", "a=1"], ["--feed", "several inputs"]),
    (["free.keras"], ["free.keras", "--input-shape"]),
    (["free.keras", "--input-shape", "16,16"], ["free.keras", "does not fit"]),
    (["cnn.keras", "--data", "wrong-shape.npz"], ["wrong-shape.npz", "x:", "(16, 16, 1)"]),
    (["cnn.keras", "--data", "wrong-labels.npz"], ["wrong-labels.npz", "y:", "0..3"]),
    (["cnn.keras", "--data", "wrong-count.npz"], ["wrong-count.npz", "10 labels for 80"]),
    (["cnn.keras", "--data", "no-x.npz"], ["no-x.npz", "no 'x'"]),
    (["cnn.keras", "--data", "extra.npz"], ["extra.npz", "z"]),
    (["cnn.keras", "--data", "not.npz"], ["not.npz", "not a readable .npz"]),
    (["cnn.keras", "--data", "float-labels.npz", "--metric", "accuracy"],
     ["float-labels.npz", "integer class index"]),
    (["cnn.keras", "--metric", "accuracy"], ["needs task data"]),
    (["cnn.keras", "--name", "../escape"], ["name", "../escape"]),
])
def test_bad_input_is_one_line_naming_the_file_and_leaves_nothing(files, home, capsys, args,
                                                                   names, monkeypatch):
    monkeypatch.chdir(files)
    argv = ["models", "add", *args]
    if "--name" not in argv:
        argv += ["--name", "m"]
    assert main(argv + ["--task", "t", "--quiet"]) == 1
    one_error_line(capsys, *names)
    left = list((home / "models").iterdir()) if (home / "models").exists() else []
    assert left == []


def test_name_taken_and_unknown_names(files, home, capsys):
    assert main(["models", "add", str(files / "cnn.keras"), "--name", "a", "--task", "t",
                 "--quiet"]) == 0
    capsys.readouterr()
    assert main(["models", "add", str(files / "cnn.keras"), "--name", "a", "--task", "t",
                 "--quiet"]) == 1
    one_error_line(capsys, "registered already", "--force")
    assert main(["models", "show", "nope"]) == 1
    one_error_line(capsys, "no model named 'nope'", "registered: a")
    assert main(["quantise", "a", "--schemes", "FP32,INT4"]) == 1
    one_error_line(capsys, "INT4")


def test_quantise_measures_five_schemes_and_resumes(files, home):
    from workbench.host import quantise, registry

    registry.add(files / "cnn.keras", name="cnn", task="quad", data=files / "calib.npz")
    rec = registry.quantise("cnn", ["FP16"], progress=False)  # a run cut short after FP16
    assert rec.available == ["FP32", "FP16"]
    fp16_file = home / "models" / "cnn" / "FP16.tflite"
    mtime = fp16_file.stat().st_mtime_ns
    rec = registry.quantise("cnn", progress=False)
    assert rec.available == list(registry.PRECISIONS)
    assert fp16_file.stat().st_mtime_ns == mtime  # done work is not redone
    assert rec.data.calibration == "x_calib"
    for v in rec.variants:
        # Each file is the scheme it claims, read back from its tensors.
        assert quantise.detect_precision(home / "models" / "cnn" / v.file) == v.precision
        assert 0 <= v.metric <= 100 and v.note is None
    fp32 = rec.variant("FP32").metric
    assert abs(rec.variant("FP16").metric - fp32) <= 5  # FP16 barely moves accuracy


def test_without_data_a_is_agreement_with_fp32_on_generated_inputs(files, home):
    from workbench.host import registry

    rec = registry.add(files / "cnn.keras", name="g", task="t")
    rec = registry.quantise("g", ["DR8"], progress=False)
    assert rec.metric == "agreement" and rec.data is None
    assert rec.variant("FP32").metric == 100.0
    assert 0 <= rec.variant("DR8").metric <= 100
    assert "generated inputs" in rec.evaluation


def test_cosine_metric_scores_embeddings_against_fp32(files, home, tmp_path):
    """An embedding model (int token ids in, a vector out): A is the cosine with FP32's output,
    needs no labels, and a scheme that points the vectors elsewhere scores lower."""
    from workbench.host import registry

    ids = keras.Input((12,), dtype="int32")
    emb = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(50, 64)(ids))
    keras.Model(ids, keras.layers.Dense(32)(emb)).save(tmp_path / "emb.keras")
    x = np.random.default_rng(0).integers(1, 50, (30, 12)).astype("int32")
    np.savez(tmp_path / "ids.npz", x=x)
    rec = registry.add(tmp_path / "emb.keras", name="emb", task="text", data=tmp_path / "ids.npz",
                       metric="cosine")
    rec = registry.quantise("emb", ["FP16", "DR8"], progress=False)
    a = {v.precision: v.metric for v in rec.variants}
    assert rec.metric == "cosine" and rec.input_dtype == "int32"
    assert a["FP32"] == pytest.approx(1.0) and 0.99 < a["FP16"] <= 1.0 + 1e-9
    assert -1.0 <= a["DR8"] <= 1.0 + 1e-9
    assert rec.variant("DR8").note is None  # an int8 table lookup is DR8, not FX8
    ref = np.ones((2, 3))
    assert registry.score(rec, -ref, {"x": x[:2]}, ref).value == pytest.approx(-1.0)
    assert "cosine" in rec.evaluation


def test_models_of_one_task_may_take_different_input_shapes(files, home, tmp_path, capsys):
    """EfficientNet-Lite0/1/2 are one task at 224/240/260: each is measured on its own input."""
    from workbench.profiles import load_profile

    inp = keras.Input((20, 20, 1))
    keras.Model(inp, keras.layers.Dense(4, activation="softmax")(
        keras.layers.GlobalAveragePooling2D()(keras.layers.Conv2D(8, 3)(inp)))).save(
        tmp_path / "big.keras")
    assert main(["models", "add", str(files / "cnn.keras"), "--name", "small", "--task", "t",
                 "--quiet"]) == 0
    assert main(["models", "add", str(tmp_path / "big.keras"), "--name", "big", "--task", "t",
                 "--quiet"]) == 0
    out = tmp_path / "p.json"
    assert main(["profile", "--models", "small", "big", "--protocol", "quick", "--threads", "1",
                 "--xnnpack", "on", "--processors", "CPU[0]", "-o", str(out), "--quiet"]) == 0
    prof = load_profile(out)
    assert {c.model for c in prof.configs} == {"small", "big"} and all(c.L > 0 for c in
                                                                        prof.configs)


def test_a_lone_tflite_file_is_its_one_scheme(files, home, tmp_path):
    from workbench.host import registry

    registry.add(files / "cnn.keras", name="src", task="t", data=files / "data.npz")
    registry.quantise("src", ["FX8"], progress=False)
    lone = tmp_path / "lone.tflite"
    lone.write_bytes((home / "models" / "src" / "FX8.tflite").read_bytes())
    rec = registry.add(lone, name="lone", task="t2", data=files / "data.npz")
    assert rec.available == ["FX8"] and rec.variant("FX8").metric is not None
    rec = registry.quantise("lone", progress=False)
    assert rec.available == ["FX8"]
    assert "one scheme (FX8)" in rec.variant("FP32").reason
    bare = registry.add(lone, name="bare", task="t3")
    assert bare.variant("FX8").metric is None  # agreeing with itself would say nothing


def test_free_input_dimensions_are_fixed_by_input_shape(files, home):
    from workbench.host import registry

    rec = registry.add(files / "free.keras", name="free", task="t", input_shape="12x12x1")
    assert rec.input_shape == [12, 12, 1] and rec.available == ["FP32"]


def test_sequential_models_convert_to_the_memory_graph(files):
    from workbench.memory.graph import from_keras

    m = keras.models.load_model(files / "cnn.keras")
    g = from_keras(m)
    x = np.random.default_rng(1).random((2, 16, 16, 1)).astype("float32")
    assert np.abs(g.run(x) - m.predict(x, verbose=0)).max() < 1e-5


def test_own_model_end_to_end_from_the_cli(files, home, tmp_path, capsys):
    """add -> profile (quick, converting what is missing) -> solve -> bundle -> run, by path,
    with no folder surgery; the same for a lone .tflite."""
    assert main(["models", "add", str(files / "cnn.keras"), "--name", "cnn", "--task", "quad",
                 "--data", str(files / "data.npz"), "--quiet"]) == 0
    prof_path = tmp_path / "mine.json"
    assert main(["profile", "--models", "cnn", "--protocol", "quick", "--runs", "3",
                 "--threads", "1", "--xnnpack", "on", "--processors", "CPU[0]",
                 "-o", str(prof_path), "--quiet"]) == 0
    from workbench.profiles import load_profile

    prof = load_profile(prof_path)
    assert {c.precision for c in prof.configs} == set(("FP32", "FP16", "DR8", "FX8", "FFX8"))
    assert all(c.source == "measured" and c.L > 0 and c.A is not None and c.MF is not None
               for c in prof.configs)
    assert prof.task("quad").metric == "top1" and "data.npz" in prof.task("quad").dataset
    assert prof.provenance.host["cpu"]
    capsys.readouterr()
    assert main(["solve", "--profile", str(prof_path), "--slo", "max A; min L"]) == 0
    assert "cnn" in capsys.readouterr().out
    bundle = tmp_path / "b"
    assert main(["bundle", "--profile", str(prof_path), "--slo", "max A; min L", "-o",
                 str(bundle)]) == 0
    capsys.readouterr()
    assert main(["run", str(bundle), "--duration", "1", "--rate", "20"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("requests:"))
    assert "0 lost" in line and " 0 served" not in line
    # A killed profile run resumes from its partial file: nothing is left once it completes.
    assert not (tmp_path / "mine.json.partial.jsonl").exists()
    # The same profile feeds a sweep and the designs report: every documented flow chains.
    sweep_out = tmp_path / "sweep.csv"
    assert main(["sweep", "--profiles", str(prof_path), "--tasks", "quad", "--slo",
                 "max A; L <= {5,50}ms", "--workers", "0", "-o", str(sweep_out),
                 "--quiet"]) == 0, capsys.readouterr().err
    rows = sweep_out.read_text().splitlines()
    assert len(rows) == 3 and all(",ok," in r or ",infeasible," in r for r in rows[1:])
    pytest.importorskip("papermill")
    reports = tmp_path / "reports"
    assert main(["report", "--profile", str(prof_path), "--task", "quad", "--slo",
                 "max A; min L", "--reports-dir", str(reports), "--quiet", "--no-png"]) == 0
    metrics = next(reports.glob("designs-*/metrics.json"))
    assert "cnn" in metrics.read_text()


def test_a_conversion_that_changes_the_model_is_flagged(home, tmp_path):
    """A Resizing layer makes the exported graph keep batch norms in training mode: LiteRT's FP32
    then disagrees with Keras, and the registry says so instead of passing it off as FP32."""
    from workbench.host import registry

    L = keras.layers
    inp = keras.Input((8, 8, 1))
    x = L.Resizing(16, 16)(inp)
    x = L.BatchNormalization()(L.Conv2D(4, 3)(x))
    m = keras.Model(inp, L.Dense(3)(L.GlobalAveragePooling2D()(x)))
    bn = m.layers[-3]
    bn.set_weights([np.full(4, 2.0, "float32"), np.ones(4, "float32"),
                    np.full(4, 5.0, "float32"), np.full(4, 9.0, "float32")])
    m.save(tmp_path / "resize.keras")
    rec = registry.add(tmp_path / "resize.keras", name="rz", task="t")
    assert "differs from Keras" in (rec.variant("FP32").note or "")
