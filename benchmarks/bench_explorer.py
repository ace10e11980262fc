"""The explorer's update time: one SLO edit re-solved and redrawn, at 10^3..10^4 configurations.

Writes reports/bench/explorer.json. Target (issue 8): every change updates within 100 ms for
10^4 configurations. Measured two ways: the computation (`Session.explore`: variant, RASS, exact
front, OODIn) and the widget (`Explorer.update`: the same plus the FigureWidget's trace update,
headless, i.e. without the browser's drawing).

Spaces: synthetic UC1 tables resampled from the modelled S20 FE (as in bench_solvers.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_solvers import UC1, make_profile, synthetic  # noqa: E402

from workbench.fileio import atomic_write_json  # noqa: E402
from workbench.lab.explore import Session  # noqa: E402
from workbench.profiles import load_profile  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def pct(xs, q):
    return float(np.percentile(np.asarray(xs, float), q))


def bench(n: int, edits: int) -> dict:
    base = load_profile(ROOT / "profiles" / "s20fe.json")
    prof = make_profile(base, [synthetic(base, n, task="uc1", seed=1)])
    t0 = time.perf_counter()
    s = Session(prof, UC1, tasks=["uc1"])
    open_ms = (time.perf_counter() - t0) * 1e3
    lo, hi = s.constraint_range(0)
    bounds = np.linspace(max(lo, 5.0), min(hi, 60.0), edits)
    comp = []
    for b in bounds:
        t = time.perf_counter()
        s.explore(bounds=[float(b)], flags={"CPU": bool(int(b) % 2)})
        comp.append((time.perf_counter() - t) * 1e3)
    out = {"configurations": n, "edits": edits, "open_session_ms": open_ms,
           "explore_ms": {"p50": pct(comp, 50), "p95": pct(comp, 95), "max": max(comp)}}
    try:
        from workbench.lab.widgets import Explorer
    except ImportError:
        return out
    # The widget on the same table: swap its session for the synthetic one.
    ex = Explorer("s20fe", "uc1")
    ex.session = s
    ex._quiet = True
    ex.w_bounds[0].min, ex.w_bounds[0].max = lo, hi
    ex._quiet = False
    ex.fig = None
    ex.update()
    wid = []
    for b in bounds:
        t = time.perf_counter()
        ex.w_bounds[0].value = float(b)  # the slider event: solve + redraw
        wid.append((time.perf_counter() - t) * 1e3)
    out["widget_update_ms"] = {"p50": pct(wid, 50), "p95": pct(wid, 95), "max": max(wid)}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edits", type=int, default=40)
    ap.add_argument("-o", "--output", default=str(ROOT / "reports" / "bench" / "explorer.json"))
    args = ap.parse_args(argv)
    rows = [bench(n, args.edits) for n in (1000, 10000)]
    big = rows[-1]
    worst = big.get("widget_update_ms", big["explore_ms"])["p95"]
    out = {"what": "explorer update time on this machine (measured), synthetic UC1 tables",
           "rows": rows,
           "targets": {"update_10k_ms_p95": {"target": 100, "measured": worst,
                                             "met": worst <= 100}}}
    atomic_write_json(args.output, out)
    for r in rows:
        print(r)
    print(out["targets"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
