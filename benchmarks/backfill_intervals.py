"""Give the committed measured profiles the sample counts and intervals they were measured with.

profiles/host.json, host-memory.json and host-real.json were measured before rows carried
``L_n``, ``A_n`` and ``A_lo``/``A_hi``. What those need was recorded all along, so this adds them
without measuring anything again:

* ``L_n``: the timed runs each row's note states ("100 runs after 5 warm-up"). With the recorded
  ``L_std`` this gives the interval of the mean latency (1.96 L_std / sqrt(L_n)). Rows whose L is
  a median (the memory-mode rows of host-memory.json) get none: that formula is for a mean.
* ``A_n``: the size of the test set A was measured on: the generated data sets' test splits for
  the h-tasks (``workbench.host.datasets``), the sample count the task's description states for
  the real-scale tasks. Every proportion's A times n must come out a whole number of samples
  (within 1e-6), or the script refuses: that checks n against the value it explains.
* ``A_lo``/``A_hi``: the Wilson interval for proportions (top-1, binary accuracy, agreement).
  MAE and cosine need per-sample values the profiles do not keep: their rows get ``A_n`` only,
  and a cited A gets nothing.

It is what :func:`workbench.host.profiling.with_interval` does for a newly measured zoo profile.
Run once (idempotent: rows that already have the fields are left alone):
``python benchmarks/backfill_intervals.py``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench import taskmetrics  # noqa: E402
from workbench.profiles.store import profile_from_dict, save_profile  # noqa: E402

PROFILES = ("host.json", "host-memory.json", "host-real.json")
PROPORTIONS = {"top1", "binary accuracy", "agreement with FP32 (%)"}
RUNS = re.compile(r"^(\d+) runs after (\d+) warm-up")
SAMPLES = re.compile(r"\((\d+) samples\)")


def test_sizes(tasks: list[dict]) -> dict[str, int | None]:
    """Each task's number of test samples behind A (None: A is cited, not measured)."""
    from workbench.host import datasets as ds

    out: dict[str, int | None] = {}
    for t in tasks:
        if "cited" in t["metric"]:
            out[t["name"]] = None
        elif (m := SAMPLES.search(t.get("dataset", ""))) is not None:
            out[t["name"]] = int(m.group(1))
        else:
            out[t["name"]] = len(ds.load(t["name"]).x_test)
    return out


def backfill(profile: dict) -> dict[str, int]:
    """Add L_n, A_n, A_lo and A_hi in place; counts of rows given each."""
    sizes = test_sizes(profile["tasks"])
    metric = {t["name"]: t["metric"] for t in profile["tasks"]}
    counts = {"L_n": 0, "A_n": 0, "A interval": 0}
    for c in profile["configs"]:
        runs = RUNS.match(c.get("note") or "")
        if runs and c.get("L_std") is not None and "L_n" not in c:
            c["L_n"] = int(runs.group(1))
            counts["L_n"] += 1
        n = sizes[c["task"]]
        if n is None or c.get("A") is None or "A_n" in c:
            continue
        c["A_n"] = n
        counts["A_n"] += 1
        if metric[c["task"]] in PROPORTIONS:
            k = c["A"] * n / 100
            if abs(k - round(k)) > 1e-6:
                raise SystemExit(f"{c['id']}: A = {c['A']} is not a whole number of {n} samples")
            lo, hi = taskmetrics.wilson(round(k), n)
            c["A_lo"], c["A_hi"] = min(100 * lo, c["A"]), max(100 * hi, c["A"])
            counts["A interval"] += 1
    return counts


def main() -> None:
    for name in PROFILES:
        path = ROOT / "profiles" / name
        profile = json.loads(path.read_text())
        counts = backfill(profile)
        if not any(counts.values()):
            print(f"{name}: nothing to add")
            continue
        notes = profile["provenance"].setdefault("notes", [])
        notes.append("sample counts and 95% intervals added afterwards from what was recorded "
                     "(benchmarks/backfill_intervals.py): L_n from each row's stated run count, "
                     "A_n from the test set's size, Wilson intervals for proportions; nothing "
                     "was measured again")
        # The store validates (every interval must hold its A) and writes atomically.
        save_profile(profile_from_dict(profile, file=path), path)
        print(f"{name}: " + ", ".join(f"{v} rows given {k}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
