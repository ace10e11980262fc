"""Real-scale models on this machine: what converting and measuring them costs, and how fast and
how big they are.

Registers full-size pretrained models in a throw-away workspace (nothing lands in the source
tree but the report), converts them to the five schemes and measures them with the reduced
real-scale options (``workbench profile --real``'s: CPU[0] and CPU[0,1] x 1-2 threads x XNNPACK
on/off) and the quick protocol. Reports per model the conversion seconds per scheme, the
profiling seconds per configuration and in total, the latency and peak-memory ranges, and the
ratio of measured latency to the physical limit (FLOPs over a numpy float32 matmul's peak on the
same cores, as bench_host.py). Writes reports/bench/real_scale.json.

Usage: python benchmarks/bench_real_scale.py [--models NAME ...] [--protocol quick|full]
       python benchmarks/bench_real_scale.py --summarise host-real.json --workspace WS \
           --build-seconds S --out reports/bench/real_profile.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_host import numpy_peak_flops  # noqa: E402

DEFAULT = ("MobileNetV2-1.0", "EfficientNet-Lite0")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", nargs="+", default=list(DEFAULT),
                    help="registry names of workbench.host.real_scale.MODELS (default: the "
                    "ImageNet MobileNetV2-1.0 and EfficientNet-Lite0)")
    ap.add_argument("--protocol", default="quick", choices=["quick", "full"])
    ap.add_argument("--summarise", metavar="PROFILE", default=None,
                    help="summarise an existing real-scale profile (e.g. the committed "
                    "profiles/host-real.json) built in --workspace instead of building one")
    ap.add_argument("--workspace", default=None, help="with --summarise: the workspace whose "
                    "registry holds the profile's models")
    ap.add_argument("--build-seconds", type=float, default=None,
                    help="with --summarise: the measured wall time of `workbench profile --real`")
    ap.add_argument("--profiling-seconds", type=float, default=None,
                    help="with --summarise: the measuring phase of that wall time (the "
                    "progress bar's total)")
    ap.add_argument("--out", default=str(ROOT / "reports" / "bench" / "real_scale.json"))
    args = ap.parse_args(argv)
    from workbench.profiles import load_profile

    if args.summarise:
        if not args.workspace:
            ap.error("--summarise needs --workspace")
        os.environ["WORKBENCH_HOME"] = args.workspace
        prof = load_profile(args.summarise)
        args.models = list(dict.fromkeys(c.model for c in prof.configs))
        prepare_s = profile_s = float("nan")
    else:
        os.environ["WORKBENCH_HOME"] = tempfile.mkdtemp(prefix="workbench-bench-real-")
        from workbench.host import real_scale

        t0 = time.perf_counter()
        real_scale.ensure_models(args.models, progress=False)
        prepare_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        prof = real_scale.build(Path(os.environ["WORKBENCH_HOME"]) / "real.json",
                                names=args.models, protocol=args.protocol, progress=False)
        profile_s = time.perf_counter() - t0

    from workbench.fileio import atomic_write_json
    from workbench.host import registry

    peaks = {t: numpy_peak_flops(t) for t in (1, 2)}
    models = {}
    for name in args.models:
        rec = registry.get(name)
        rows = [c for c in prof.configs if c.model == name]
        ratios = []
        for c in rows:
            busy = min(c.threads or 1, len(c.processor.split(",")))
            ratios.append(c.L / (c.W / peaks[busy] * 1e3))
        models[name] = {
            "task": rec.task,
            "gflops": round(rows[0].W / 1e9, 3),
            "convert_s": {v.precision: v.convert_seconds for v in rec.variants if v.available},
            "size_mb": {v.precision: round(v.size_mb or 0, 2) for v in rec.variants
                        if v.available},
            "latency_ms": {"min": round(min(c.L for c in rows), 2),
                           "max": round(max(c.L for c in rows), 2)},
            "peak_memory_mb": {"min": round(min(c.MF for c in rows), 1),
                               "max": round(max(c.MF for c in rows), 1)},
            "ratio_to_physical_limit": {"median": round(statistics.median(ratios), 2),
                                        "min": round(min(ratios), 2),
                                        "max": round(max(ratios), 2)},
            "A": {v.precision: (None if rec.a_of(v) is None else round(rec.a_of(v), 3))
                  for v in rec.variants if v.available},
            "A_kind": "cited" if rec.cited else "measured",
        }
    n = len(prof.configs)
    timing: dict = ({"prepare_s": round(prepare_s, 1), "profile_s": round(profile_s, 1),
                     "profile_s_per_config": round(profile_s / n, 2)} if not args.summarise else
                    {"profile": Path(args.summarise).name,
                     "build_wall_s": args.build_seconds,
                     "profiling_phase_s": args.profiling_seconds,
                     "build_note": "`workbench profile --real --protocol quick` from an empty "
                                   "workspace: register (feature extraction for the fashion "
                                   "heads), convert, measure accuracy, profile; wall time "
                                   "measured with /usr/bin/time"})
    result = {
        "cpu": prof.provenance.host.get("cpu"),
        "protocol": args.protocol if not args.summarise else "quick",
        "options": sorted({f"{c.processor}/t{c.threads}/{'xnn' if c.xnnpack else 'builtin'}"
                           for c in prof.configs}),
        **timing,
        "n_configs": n,
        "numpy_fp32_peak_gflops": {str(t): round(p / 1e9, 1) for t, p in peaks.items()},
        "models": models,
        "note": "latency and memory MEASURED here (LiteRT, quick protocol); A of ImageNet "
                "models is CITED (no ImageNet data offline), of fashion models measured",
    }
    target = atomic_write_json(Path(args.out), result)
    print(f"wrote {target}: {n} configurations")
    for name, m in models.items():
        print(f"  {name}: L {m['latency_ms']['min']}-{m['latency_ms']['max']} ms, MF "
              f"{m['peak_memory_mb']['min']}-{m['peak_memory_mb']['max']} MB, convert "
              f"{m['convert_s']}, ratio to limit median {m['ratio_to_physical_limit']['median']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
