"""Peak memory of loading and running one .tflite or .onnx model, measured in a fresh process.

Usage: ``python -m workbench.host._memprobe MODEL THREADS XNNPACK(0|1) BATCH RUNS``. Prints one JSON
line: ``base_mb`` (resident set before loading, with numpy and LiteRT imported), ``peak_mb`` (the
process's peak resident set after loading and running), ``model_mb = peak_mb - base_mb``.
Only the standard library, numpy, ai_edge_litert, `workbench.procfs` (standard library
only) and the runtime's interpreter module (how a model with several inputs is fed) are
imported; for a .onnx model, onnxruntime and the runtime's session and feeding rules
(`workbench.runtime.ort`, before the baseline is read).
"""

import json
import sys
from pathlib import Path
from typing import Any

from workbench.procfs import status_kb


def main(argv: list[str]) -> int:
    path, threads, xnn, batch, runs = argv[0], int(argv[1]), argv[2] == "1", int(argv[3]), int(argv[4])
    import numpy as np

    if path.endswith(".onnx"):
        # The runtime's own onnxruntime session and feeding rules (shape and feeds from the
        # file's metadata, placeholders for the rest), imported before the baseline is read so
        # that only the model counts; a copy here had already drifted from them.
        from workbench.runtime.interpreter import placeholder
        from workbench.runtime.ort import OrtInterpreter

        try:
            Path("/proc/self/clear_refs").write_text("5")
        except OSError:
            pass
        base = status_kb("VmRSS")
        it: Any = OrtInterpreter(path, threads=threads, xnnpack=xnn, fill=placeholder)
        it.resize_tensor_input(0, [batch, *it.get_input_details()[0]["shape"][1:]])
        inp = it.get_input_details()[0]
        it.set_tensor(0, placeholder(inp))
        for _ in range(runs):
            it.invoke()
        peak = max(status_kb("VmHWM"), status_kb("VmRSS"))
        print(json.dumps({"base_mb": base / 1024, "peak_mb": peak / 1024,
                          "model_mb": max(peak - base, 0) / 1024}))
        return 0
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    # A model with several inputs is fed as the runtime feeds it (its file's input plan), and
    # its other inputs follow the batch; imported before the baseline, like the ONNX branch.
    from workbench.runtime.interpreter import FedInterpreter, read_input_plan

    # Reset the peak so that it covers the model alone (Linux: "5" clears VmHWM).
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    base = status_kb("VmRSS")
    resolver = OpResolverType.AUTO if xnn else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    it = Interpreter(model_path=path, num_threads=threads, experimental_op_resolver_type=resolver)
    if len(it.get_input_details()) > 1:
        it = FedInterpreter(it, read_input_plan(path))
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
