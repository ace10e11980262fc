"""Peak memory of loading and running one .tflite or .onnx model, measured in a fresh process.

Usage: ``python -m workbench.host._memprobe MODEL THREADS XNNPACK(0|1) BATCH RUNS``. Prints one JSON
line: ``base_mb`` (resident set before loading, with numpy and LiteRT imported), ``peak_mb`` (the
process's peak resident set after loading and running), ``model_mb = peak_mb - base_mb``.
Only the standard library, numpy, ai_edge_litert (onnxruntime for a .onnx model) and
`workbench.procfs` (standard library only) are imported.
"""

import json
import sys
from pathlib import Path

from workbench.procfs import status_kb


def main(argv: list[str]) -> int:
    path, threads, xnn, batch, runs = argv[0], int(argv[1]), argv[2] == "1", int(argv[3]), int(argv[4])
    import numpy as np

    if path.endswith(".onnx"):
        # workbench.runtime.ort's session (sequential, intra-op threads; XNNPACK provider when
        # asked), opened here without the workbench's imports so the baseline stays small.
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.log_severity_level = 3
        providers = ([("XnnpackExecutionProvider", {"intra_op_num_threads": threads})]
                     if xnn else []) + ["CPUExecutionProvider"]
        try:
            Path("/proc/self/clear_refs").write_text("5")
        except OSError:
            pass
        base = status_kb("VmRSS")
        sess = ort.InferenceSession(path, opts, providers=providers)
        ins = sess.get_inputs()
        # workbench.runtime.ort's metadata (SHAPE_KEY, FEED_PREFIX): the first input's shape
        # and the values fed to the others, as the runtime reads them.
        meta = sess.get_modelmeta().custom_metadata_map or {}
        given = [int(d) for d in meta.get("workbench.input_shape", "").split(",") if d]
        feeds = {k[len("workbench.feed."):]: float(v) for k, v in meta.items()
                 if k.startswith("workbench.feed.")}
        first = {}
        feed = {}
        types = {"tensor(float)": np.float32, "tensor(float16)": np.float16,
                 "tensor(int64)": np.int64, "tensor(int32)": np.int32}
        for k, i in enumerate(ins):
            dims = [d if isinstance(d, int) and d >= 0 else None for d in i.shape]
            if k == 0:
                shape = [batch] + (given or [d or 1 for d in dims[1:]])
                first = {str(d): v for d, v in zip(i.shape, shape)
                         if d and not isinstance(d, int)}
            else:  # named free dimensions follow the first input's; unnamed ones the batch
                shape = [d if d is not None else first.get(str(s), 1) if s else batch
                         for d, s in zip(dims, i.shape)]
            dtype = types.get(i.type, np.float32)
            fill = np.ones if np.dtype(dtype).kind in "iu" else np.zeros
            feed[i.name] = (np.full(shape, feeds[i.name], dtype=dtype) if i.name in feeds
                            else fill(shape, dtype=dtype))
        for _ in range(runs):
            sess.run(None, feed)
        peak = max(status_kb("VmHWM"), status_kb("VmRSS"))
        print(json.dumps({"base_mb": base / 1024, "peak_mb": peak / 1024,
                          "model_mb": max(peak - base, 0) / 1024}))
        return 0
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    # Reset the peak so that it covers the model alone (Linux: "5" clears VmHWM).
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    base = status_kb("VmRSS")
    resolver = OpResolverType.AUTO if xnn else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    it = Interpreter(model_path=path, num_threads=threads, experimental_op_resolver_type=resolver)
    inp = it.get_input_details()[0]
    if batch != inp["shape"][0]:
        it.resize_tensor_input(inp["index"], [batch, *inp["shape"][1:]])
    it.allocate_tensors()
    inp = it.get_input_details()[0]
    # workbench.runtime.interpreter.placeholder's rule, copied (this probe imports nothing of the
    # workbench): ones for integer inputs (0 is padding), zeros otherwise.
    fill = np.ones if np.dtype(inp["dtype"]).kind in "iu" else np.zeros
    it.set_tensor(inp["index"], fill(inp["shape"], dtype=inp["dtype"]))
    for _ in range(runs):
        it.invoke()
    peak = max(status_kb("VmHWM"), status_kb("VmRSS"))
    print(json.dumps({"base_mb": base / 1024, "peak_mb": peak / 1024,
                      "model_mb": max(peak - base, 0) / 1024}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
