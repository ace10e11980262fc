"""FLOPs and parameters counted from a .tflite graph, checked by hand on a tiny model."""

import pytest

tf = pytest.importorskip("tensorflow")

from workbench.errors import InputError  # noqa: E402
from workbench.host.quantise import ConversionError, analyse, convert  # noqa: E402


def test_counts_match_a_hand_count(tmp_path):
    import keras
    import numpy as np

    keras.utils.set_random_seed(0)
    inp = keras.Input((8, 8, 1))
    x = keras.layers.Conv2D(4, 3, padding="same", bias_initializer="ones")(inp)  # 36 + 4
    x = keras.layers.Flatten()(x)
    out = keras.layers.Dense(3, bias_initializer="ones")(x)  # 768 + 3 (zero biases get folded away)
    model = keras.Model(inp, out)
    path = tmp_path / "tiny.tflite"
    path.write_bytes(convert(model, "FP32", np.zeros((4, 8, 8, 1), np.float32)))
    info = analyse(path)
    assert info["params"] == 4 * 9 + 4 + 256 * 3 + 3               # the reshape's shape is no param
    # conv: 2 * (8*8*4 outputs) * 3*3*1; dense: 2 * 256 * 3
    assert info["flops"] == 2 * 8 * 8 * 4 * 9 + 2 * 256 * 3
    assert info["ops"]["CONV_2D"] == 1 and info["ops"]["FULLY_CONNECTED"] == 1

    int8 = tmp_path / "tiny8.tflite"
    rep = np.random.default_rng(0).random((8, 8, 8, 1), dtype=np.float32)
    int8.write_bytes(convert(model, "FFX8", rep))
    q = analyse(int8)
    assert q["flops"] == info["flops"] and q["params"] == info["params"]
    assert int8.stat().st_size < path.stat().st_size


def test_unknown_precision_and_unconvertible_models():
    import keras
    import numpy as np

    with pytest.raises(InputError, match="unknown precision"):
        convert(None, "INT4", np.zeros(1))
    # A model whose op has no int8 kernel cannot be FFX8 (integer-only) converted.
    inp = keras.Input((4,))
    out = keras.layers.Lambda(lambda t: tf.math.erf(t))(inp)
    model = keras.Model(inp, out)
    with pytest.raises(ConversionError):
        convert(model, "FFX8", np.random.default_rng(0).random((4, 4), dtype=np.float32))
