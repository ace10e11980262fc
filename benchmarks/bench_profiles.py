"""Benchmark of the profile layer: model, save, load, CSV import and column extraction.

Writes reports/bench/profiles.json. Run with `make bench` (not part of the test suite).
"""

from __future__ import annotations

import csv
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from workbench.fileio import atomic_write_json
from workbench.profiles import load_profile, save_profile
from workbench.profiles import phone_model as pm
from workbench.profiles.importers import import_csv

ROOT = Path(__file__).resolve().parents[1]


def timed(fn, repeat: int = 5) -> dict[str, float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return {"median_ms": round(statistics.median(times), 3), "min_ms": round(min(times), 3)}


def main() -> int:
    out: dict = {"machine": {"python": sys.version.split()[0], "cpu": platform.processor() or
                             platform.machine()}, "results": {}}
    res = out["results"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for dev in pm.DEVICES:
            prof = pm.build_profile(dev)
            path = tmp / f"{dev}.json"
            res[dev] = {
                "configs": len(prof.configs),
                "model": timed(lambda: pm.build_profile(dev), 3),
                "save": timed(lambda: save_profile(prof, path)),
                "load_and_validate": timed(lambda: load_profile(path)),
                "columns_A_TP_Lmax": timed(lambda: prof.columns("A", "TP", "L_max")),
                "file_kb": round(path.stat().st_size / 1024, 1),
            }
        # CSV import throughput on a 10,000-row table.
        big = tmp / "big.csv"
        with big.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["config", "model", "precision", "processor", "threads", "A", "L", "L_std",
                        "MF", "TP"])
            for i in range(10_000):
                w.writerow([f"c{i}", f"m{i % 50}", "FP32", "CPU", 1 + i % 4, 70 + i % 10,
                            1 + i % 37, 0.1, 10 + i % 90, 1000 / (1 + i % 37)])
        t = timed(lambda: import_csv(big), 3)
        res["csv_import_10k_rows"] = dict(t, rows_per_s=round(10_000 / t["median_ms"] * 1e3))
    target = atomic_write_json(ROOT / "reports" / "bench" / "profiles.json", out)
    print(f"wrote {target}")
    for k, v in res.items():
        print(k, v)
    return 0


if __name__ == "__main__":
    sys.exit(main())
