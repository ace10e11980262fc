"""The phone model's accuracy on published phone measurements (no timing): per engine and
precision, calibrated on a fixed subset and validated on the rest, against the device-model
issue's target (held-out MAPE <= 20% per engine, on rows of another family or another phone than
the calibration rows; no verdict on fewer than 5 rows), and CARIn Table 8 from the A71's spec.

Writes reports/bench/phone_model.json. The data are published latencies (Pixel 3, 3a, 4, 6, 7: CPU,
GPU, NNAPI, DSP); a split fixed in the data before any fit puts the Pixel 3's MobileNet V1 rows at 128
and 224 px in the calibration set and every other row in the held-out set. Every prediction is
MODELLED from the phone's spec (plus, calibrated, the terms fitted to the calibration rows).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.fileio import atomic_write_json  # noqa: E402
from workbench.lab.experiments.carin import phone_trust as pt  # noqa: E402
from workbench.profiles import phone_model as pm  # noqa: E402
from workbench.profiles import validation as val  # noqa: E402

TARGET_PCT = 20.0   # held-out MAPE per engine (issue 38)
TABLE8_TARGET = 4   # of 6 roles
MIN_ROWS = 5        # fewer rows get a number, not a verdict


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default=str(ROOT / "reports" / "bench" / "phone_model.json"))
    args = ap.parse_args(argv)
    v = pt.validation()
    sens = pt.sensitivity()
    tables = {t.table: t for t in pt.spec_only_tables()}
    fragile = sorted({r.parameter for r in sens if r.table == "Table 7"
                      and min(r.matches_down, r.matches_up) < r.matches_base})

    def rounded(errors):
        return [{k: (round(x, 1) if isinstance(x, float) else x) for k, x in e.to_dict().items()} for e in errors]

    rows = v.rows

    def verdict(e):
        # No verdict on fewer than MIN_ROWS rows: one or two rows are anecdotes, not an error rate.
        return {"target": TARGET_PCT, "measured": round(e.mape_pct, 1), "n": e.n,
                "met": None if e.n < MIN_ROWS else e.mape_pct <= TARGET_PCT}

    out = {
        "what": ("phone model (MODELLED from each phone's spec) against latencies published for phones it was not "
                 "built for; error = modelled / published - 1; 'held out' = rows no fit saw"),
        "model_version": pm.load_parameters()["model_version"],
        "split": val.data()["split"],
        "independence": ("the public calibration (fixed_ms + scale x spec-only, per engine) is fitted to the "
                         "calibration rows only; the held-out rows never enter a fit. Before it, model v1 was compared "
                         "with the then-28 rows once (median |error| CPU FP32 94%, CPU int8 116%, GPU FP32 40%, GPU "
                         "FP16 18%) and v2's structure (CPU efficiency per operator class, a fixed GPU kernel cost) "
                         "was set after that comparison, so those 28 rows informed the structure"),
        "sources": val.data()["sources"],
        "kernels": val.data()["kernels"],
        "nnapi": val.data()["nnapi"],
        "rows": {"all": len(rows), "calibration": sum(r.split == "calibration" for r in rows),
                 "held_out": sum(r.split == "held-out" for r in rows)},
        "calibration": v.calibration,
        "groups": {g: sum(r.group == g for r in rows) for g in val.GROUPS},
        "by_engine": rounded(v.by_engine),
        "by_engine_spec_only": rounded(v.by_engine_spec_only),
        "by_engine_other_phones": rounded(v.by_engine_other_phones),
        "by_engine_interpolation": rounded(v.by_engine_interpolation),
        "by_engine_spec_only_if_xnnpack": rounded(v.by_engine_if_xnnpack),
        "targets": {
            **{f"transfer_mape_pct_{e.engine.replace(' ', '_').lower()}": verdict(e) for e in v.by_engine},
            **{f"other_phones_mape_pct_{e.engine.replace(' ', '_').lower()}": verdict(e)
               for e in v.by_engine_other_phones},
            "table8_roles_matching_spec_only": {"target": TABLE8_TARGET, "measured": tables["Table 8"].matches,
                                                "of": tables["Table 8"].roles,
                                                "met": tables["Table 8"].matches >= TABLE8_TARGET},
        },
        "spec_only_tables": [{k: t.to_dict()[k] for k in ("table", "use_case", "device", "roles", "matches",
                                                            "same_processors", "all_cpu_guess")}
                             for t in tables.values()],
        "sensitivity": {"step": 0.1, "table7_roles_matching": sens[0].matches_base,
                        "table8_roles_matching": sens[1].matches_base,
                        "parameters": len({r.parameter for r in sens}),
                        "table7_loses_a_role_when_moved": fragile},
    }
    atomic_write_json(args.output, out)
    print(out["by_engine"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
