"""The graph shapes researchers bring: several outputs (Keras and .tflite, whose converter
reorders output tensors), with --output choosing the one A reads."""

import numpy as np
import pytest

from workbench.cli import main
from workbench.errors import InputError

keras = pytest.importorskip("keras")


@pytest.fixture(scope="module")
def multi(tmp_path_factory):
    """A Keras model with three outputs, named so that sorting by name or by the converter's
    tensor order would pick the wrong one: 'cls' (4 class scores), 'zz_box' (4 values),
    'aa_emb' (6 values); its data (labels for 'cls'); and the same model as a .tflite file."""
    d = tmp_path_factory.mktemp("multi")
    keras.utils.set_random_seed(0)
    i = keras.Input((8,))
    h = keras.layers.Dense(32, activation="relu")(i)
    m = keras.Model(i, [keras.layers.Dense(4, activation="softmax", name="cls")(h),
                        keras.layers.Dense(4, name="zz_box")(h),
                        keras.layers.Dense(6, name="aa_emb")(h)])
    rng = np.random.default_rng(0)
    x = rng.random((64, 8)).astype("float32")
    y = x[:, :4].argmax(axis=1)
    m.compile("adam", ["sparse_categorical_crossentropy", "mse", "mse"])
    m.fit(x, [y, x[:, :4], x[:, :6]], epochs=30, verbose=0)
    m.save(d / "multi.keras")
    np.savez(d / "data.npz", x=x, y=y)
    np.savez(d / "box.npz", x=x, y=x[:, :4])
    from workbench.host import quantise as q

    with q.exported(d / "multi.keras") as (export_dir, _):
        (d / "multi.tflite").write_bytes(q.convert(export_dir, "FP32", x[:8]))
    return d, m, x, y


def test_a_multi_output_keras_model_reads_the_output_it_is_told(multi, home, capsys):
    d, m, x, y = multi
    want = 100 * np.mean(np.argmax(m.predict(x, verbose=0)[0], axis=1) == y)
    assert main(["models", "add", str(d / "multi.keras"), "--name", "mo", "--task", "t",
                 "--data", str(d / "data.npz"), "--output", "cls", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "A reads output 0 'cls' of 3 (cls, zz_box, aa_emb)" in out
    from workbench.host import registry

    rec = registry.get("mo")
    assert rec.output == 0 and [o.name for o in rec.outputs] == ["cls", "zz_box", "aa_emb"]
    assert rec.variant("FP32").metric == pytest.approx(want)
    assert rec.variant("FP32").note is None  # LiteRT's 'cls' matches Keras's 'cls'
    # The regression head, by index, scored with MAE against its own targets.
    registry.add(d / "multi.keras", name="box", task="b", data=d / "box.npz", output=1,
                 metric="mae")
    got = registry.get("box").variant("FP32").metric
    assert got == pytest.approx(np.mean(np.abs(m.predict(x, verbose=0)[1] - x[:, :4])), rel=1e-4)
    # Every head is checked against FP32's, not only the one A reads: FP16 keeps them all
    # within 0.1% of their range (this model's weights are too small for DR8 to quantise them:
    # the converter leaves tensors under 1024 elements in float), and models show says so.
    registry.quantise("mo", ["FP16", "DR8"], progress=False)
    rec = registry.get("mo")
    assert rec.variant("FP32").output_error is None
    fp16, dr8 = rec.variant("FP16").output_error, rec.variant("DR8").output_error
    assert list(fp16) == ["cls", "zz_box", "aa_emb"] == list(dr8)
    assert 0 < max(fp16.values()) < 0.1 and all(0 <= dr8[n] < 10 for n in dr8)
    capsys.readouterr()
    assert main(["models", "show", "mo"]) == 0
    assert "every output against FP32's" in capsys.readouterr().out


def test_a_keras_model_with_outputs_in_a_dict_reads_the_named_one(multi, home, tmp_path):
    # Keras sorts a dict's output_names but keeps model.outputs in the dict's order: pairing
    # the two read another head (a traceback at models add, found by an outside check).
    from workbench.host import registry

    d, m, x, y = multi
    i = keras.Input((8,))
    h = m.layers[1](i)  # the trained hidden layer
    heads = {n: m.get_layer(n)(h) for n in ("cls", "zz_box", "aa_emb")}
    keras.Model(i, heads).save(tmp_path / "dict.keras")
    rec = registry.add(tmp_path / "dict.keras", name="dk", task="t", data=d / "data.npz",
                       output="cls")
    assert [o.name for o in rec.outputs] == ["cls", "zz_box", "aa_emb"] and rec.output == 0
    want = 100 * np.mean(np.argmax(m.predict(x, verbose=0)[0], axis=1) == y)
    assert rec.variant("FP32").metric == pytest.approx(want) and rec.variant("FP32").note is None


def test_a_multi_output_tflite_file_maps_outputs_by_name(multi, home):
    d, m, x, y = multi
    from workbench.host import quantise as q
    from workbench.runtime.interpreter import open_interpreter

    it = open_interpreter(d / "multi.tflite")
    sig = it.get_signature_runner().get_output_details()
    # The converter put another tensor first: reading the first output would score 'zz_box'.
    assert it.get_output_details()[0]["index"] != sig["output_0"]["index"]
    from workbench.host import registry

    # The signature key says which tensor is Keras's 'cls' (the converter reorders them).
    rec = registry.add(d / "multi.tflite", name="mt", task="t", data=d / "data.npz",
                       output="output_0")
    want = 100 * np.mean(np.argmax(m.predict(x, verbose=0)[0], axis=1) == y)
    assert rec.variant("FP32").metric == pytest.approx(want)
    # Outputs go by the file's signature keys, in the source's order.
    assert [o.name for o in rec.outputs] == ["output_0", "output_1", "output_2"]
    pred = q.predict(d / "multi.tflite", x, output=rec.output_ref)
    assert np.allclose(pred, m.predict(x, verbose=0)[0], atol=1e-5)


def test_an_unknown_output_lists_them_in_one_line(multi, home):
    d, *_ = multi
    from workbench.host import registry

    with pytest.raises(InputError) as e:
        registry.add(d / "multi.keras", name="x", task="t", output="boxes")
    msg = str(e.value)
    assert "--output 'boxes' is none of the model's outputs" in msg and "1 'zz_box' (4)" in msg
    assert "\n" not in msg


@pytest.fixture(scope="module")
def two_inputs(tmp_path_factory):
    """A Keras model with two inputs whose names sort the other way ('zz_img' takes the data,
    'aa_meta' a constant the answer depends on), its data, and its FP32 .tflite as a user
    would bring it (no input plan)."""
    d = tmp_path_factory.mktemp("two")
    keras.utils.set_random_seed(0)
    img, meta = keras.Input((8,), name="zz_img"), keras.Input((3,), name="aa_meta")
    h = keras.layers.Concatenate()([keras.layers.Dense(16, activation="relu")(img), meta])
    m = keras.Model([img, meta], keras.layers.Dense(4, activation="softmax")(h))
    rng = np.random.default_rng(0)
    x = rng.random((96, 8)).astype("float32")
    y = x[:, :4].argmax(axis=1)
    m.compile("adam", "sparse_categorical_crossentropy")
    m.fit([x, np.full((96, 3), 0.5, "float32")], y, epochs=40, verbose=0)
    m.save(d / "two.keras")
    np.savez(d / "data.npz", x=x, y=y)
    from workbench.host import quantise as q

    with q.exported(d / "two.keras") as (export_dir, _):
        (d / "two.tflite").write_bytes(q.convert(export_dir, "FP32", x[:8]))
    return d, m, x, y


def test_a_keras_model_with_two_inputs_goes_through_every_scheme(two_inputs, home, capsys):
    from workbench.host import registry
    from workbench.runtime.interpreter import open_interpreter, read_input_plan

    d, m, x, y = two_inputs
    assert main(["models", "add", str(d / "two.keras"), "--name", "two", "--task", "t",
                 "--data", str(d / "data.npz"), "--feed", "aa_meta=0.5", "--quiet"]) == 0
    assert "the data feeds the first input 'zz_img'; at every run 'aa_meta' 0.5 (--feed)" \
        in capsys.readouterr().out
    want = 100 * np.mean(m.predict([x, np.full((96, 3), 0.5, "float32")], verbose=0)
                         .argmax(axis=1) == y)
    rec = registry.get("two")
    assert rec.data_input == "zz_img" and rec.feeds == {"aa_meta": 0.5}
    # The data reached 'zz_img' and 'aa_meta' got 0.5: LiteRT's FP32 A is Keras's (zeros for
    # aa_meta, or the data in the wrong input, would give another answer).
    assert rec.variant("FP32").metric == pytest.approx(want) and rec.variant("FP32").note is None
    rec = registry.quantise("two", progress=False)
    assert rec.available == ["FP32", "FP16", "DR8", "FX8", "FFX8"], \
        [(v.precision, v.reason) for v in rec.variants]
    assert all(abs(v.metric - want) <= 10 for v in rec.variants)
    # Every variant file says how to feed it, so a bundle runs it the same way on a device.
    folder = registry.model_dir("two")
    for v in rec.variants:
        assert read_input_plan(folder / v.file) == {"data": "zz_img", "feeds": {"aa_meta": 0.5}}
    it = open_interpreter(folder / rec.variant("FFX8").file, batch=4)
    assert [list(d["shape"]) for d in it.get_input_details()] == [[4, 8], [4, 3]]


def test_a_tflite_file_with_two_inputs_keeps_the_users_file_and_runs(two_inputs, home, tmp_path):
    from workbench.host import registry
    from workbench.runtime.interpreter import read_input_plan

    d, m, x, y = two_inputs
    before = (d / "two.tflite").read_bytes()
    rec = registry.add(d / "two.tflite", name="tt", task="t", data=d / "data.npz",
                       feeds=["aa_meta=0.5"])
    assert (d / "two.tflite").read_bytes() == before and read_input_plan(before) is None
    # The data found 'zz_img' by its shape (the file lists 'aa_meta' first), as Keras computes.
    want = 100 * np.mean(m.predict([x, np.full((96, 3), 0.5, "float32")], verbose=0)
                         .argmax(axis=1) == y)
    assert rec.variant("FP32").metric == pytest.approx(want)
    assert "the data feeds the input its x fits, 'zz_img'" in rec.notes[0]
    prof = tmp_path / "p.json"
    assert main(["profile", "--models", "tt", "--protocol", "quick", "--threads", "1",
                 "--processors", "CPU[0]", "-o", str(prof), "--quiet"]) == 0
    from workbench.profiles import load_profile

    rows = load_profile(prof).configs
    assert rows and all(c.L > 0 and c.MF is not None for c in rows)
    # Bundled, the file alone says how to feed it: the runtime answers as Keras does.
    assert main(["bundle", "--profile", str(prof), "--slo", "max A; min L", "-o",
                 str(tmp_path / "b")]) == 0
    from workbench.runtime import RuntimeManager, load_bundle

    with RuntimeManager(load_bundle(tmp_path / "b")) as rm:
        got = rm.submit("t", x[:3]).result(timeout=30)
    np.testing.assert_allclose(got, m.predict([x[:3], np.full((3, 3), 0.5, "float32")],
                                              verbose=0), atol=1e-5)


def test_feeds_and_free_inputs_are_one_line_errors(two_inputs, multi, home, tmp_path):
    from workbench.host import registry

    d, *_ = two_inputs
    with pytest.raises(InputError, match="--feed is for models with several inputs"):
        registry.add(multi[0] / "multi.keras", name="m1", task="t", feeds=["a=1"])
    with pytest.raises(InputError, match="'zz_img' is the input the data feeds.*aa_meta"):
        registry.add(d / "two.keras", name="m2", task="t", feeds=["zz_img=1"])
    a, b = keras.Input((8,), name="a"), keras.Input((None,), name="b")
    free = keras.Model([a, b], keras.layers.Dense(2)(a) + keras.ops.mean(b))
    free.save(tmp_path / "free.keras")
    with pytest.raises(InputError) as e:
        registry.add(tmp_path / "free.keras", name="m3", task="t")
    assert "input 'b' (?) has free dimensions" in str(e.value) and "\n" not in str(e.value)


@pytest.fixture(scope="module")
def rnn(tmp_path_factory):
    """An Embedding + LSTM text classifier and an Embedding + bidirectional GRU, as users save
    them (unroll=False), with integer token data."""
    d = tmp_path_factory.mktemp("rnn")
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 50, (120, 12)).astype("int32")
    y = x[:, 0] % 3
    for name, rec in (("lstm", keras.layers.LSTM(8)),
                      ("bigru", keras.layers.Bidirectional(keras.layers.GRU(8)))):
        m = keras.Sequential([keras.Input((12,), dtype="int32"), keras.layers.Embedding(50, 8),
                              rec, keras.layers.Dense(3, activation="softmax")])
        m.compile("adam", "sparse_categorical_crossentropy")
        m.fit(x, y, epochs=2, verbose=0)
        m.save(d / f"{name}.keras")
    np.savez(d / "data.npz", x=x, y=y)
    return d


@pytest.mark.parametrize("name", ["lstm", "bigru"])
def test_recurrent_models_convert_to_all_five_schemes(rnn, home, name):
    from workbench.host import registry

    rec = registry.add(rnn / f"{name}.keras", name=name, task="txt", data=rnn / "data.npz")
    assert rec.notes and "unrolled over the fixed sequence length" in rec.notes[0]
    assert rec.variant("FP32").note is None  # the unrolled model computes what Keras does
    rec = registry.quantise(name, progress=False)
    assert rec.available == ["FP32", "FP16", "DR8", "FX8", "FFX8"], \
        [(v.precision, v.reason) for v in rec.variants]
    assert all(v.metric_n == 120 for v in rec.variants)


def test_a_crash_in_the_converter_costs_only_its_scheme(rnn, home, tmp_path, monkeypatch):
    """FX8 calibration kills the process (as it did for a WHILE-loop graph here): FX8 is
    recorded unavailable with the signal, every other scheme is converted and measured."""
    from workbench.host import registry

    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import os\n"
        "import workbench.host.quantise as q\n"
        "_convert = q.convert\n"
        "def convert(model, precision, representative, **kw):\n"
        "    if precision == 'FX8':\n"
        "        os.kill(os.getpid(), 11)\n"
        "    return _convert(model, precision, representative, **kw)\n"
        "q.convert = convert\n")
    registry.add(rnn / "lstm.keras", name="crashy", task="txt", data=rnn / "data.npz")
    monkeypatch.setenv("PYTHONPATH", str(hook))
    rec = registry.quantise("crashy", progress=False)
    assert rec.available == ["FP32", "FP16", "DR8", "FFX8"]
    fx8 = rec.variant("FX8")
    assert not fx8.available and "crashed the process (signal SIGSEGV)" in fx8.reason
    assert not (registry.model_dir("crashy") / registry.CONVERTING).exists()


def test_converter_errors_are_one_readable_line():
    from workbench.host.quantise import converter_reason

    raw = ('<unknown>:0: error: loc(callsite(fused["TensorListReserve:", "seq/lstm/TensorArrayV2"'
           '] at fused["StatefulPartitionedCall:", "x"])): \'tf.TensorListReserve\' op requires '
           'element_shape to be static during TF Lite transformation pass')
    assert "loc(" not in converter_reason(raw) and "unrolled" in converter_reason(raw)
    other = ('<unknown>:0: error: loc(fused["Foo:", "y"]): \'tf.Foo\' op is neither a custom op '
             'nor a flex op <unknown>:0: note: loc(fused["y"]): see current operation: %0 = x')
    assert converter_reason(other) == "'tf.Foo' op is neither a custom op nor a flex op"


CUSTOM = '''
import keras


class HalfScale(keras.layers.Layer):
    """A custom layer, not registered with Keras: only --custom-objects makes it loadable."""

    def call(self, x):
        return x * 0.5
'''


def test_a_custom_layer_model_needs_its_file_and_keeps_it(home, tmp_path):
    import importlib.util

    from workbench.host import registry

    src = tmp_path / "layers.py"
    src.write_text(CUSTOM)
    spec = importlib.util.spec_from_file_location("user_layers_for_test", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    keras.utils.set_random_seed(0)
    m = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16), mod.HalfScale(),
                          keras.layers.Dense(3, activation="softmax")])
    m.save(tmp_path / "custom.keras")
    with pytest.raises(InputError) as e:
        registry.add(tmp_path / "custom.keras", name="cu", task="t")
    assert str(e.value).endswith("Could not locate class 'HalfScale': give the Python file that "
                                 "defines it with --custom-objects FILE.py")
    assert "\n" not in str(e.value) and len(str(e.value)) < 300
    rec = registry.add(tmp_path / "custom.keras", name="cu", task="t", custom_objects=src)
    assert rec.custom_objects == "custom_objects.py"
    kept = registry.model_dir("cu") / "custom_objects.py"
    assert kept.read_text() == CUSTOM
    src.unlink()  # quantise loads the copy kept with the model, in its own process
    from workbench.memory.modes import graph_of

    # The layer executor reads it as the registry does (its custom objects file), so what stops
    # it is the custom layer itself, named; it used to be "not a Keras model (TypeError)".
    with pytest.raises(InputError, match="HalfScale"):
        graph_of("cu")
    rec = registry.quantise("cu", progress=False)
    assert rec.available == ["FP32", "FP16", "DR8", "FX8", "FFX8"]
    bad = tmp_path / "broken.py"
    bad.write_text("raise ValueError('nope')\n")
    with pytest.raises(InputError) as e:
        registry.add(tmp_path / "custom.keras", name="cu2", task="t", custom_objects=bad)
    assert "importing it failed: ValueError: nope" in str(e.value)
