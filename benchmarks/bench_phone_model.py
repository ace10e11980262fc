"""The phone model's accuracy on held-out published measurements (no timing): the error per
engine, with the target the device-model issue sets (about 25%), and the sensitivity of CARIn
Tables 7-8 to each calibrated parameter.

Writes reports/bench/phone_model.json. The data are published latencies (Pixel 3, 3a, 4) that
the model was never calibrated on (though v1's comparison with them shaped v2: see
"independence"); every prediction is MODELLED from the phone's spec.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.fileio import atomic_write_json  # noqa: E402
from workbench.lab.experiments import phone_trust as pt  # noqa: E402
from workbench.profiles import phone_model as pm  # noqa: E402
from workbench.profiles import validation as val  # noqa: E402

TARGET_PCT = 25.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", default=str(ROOT / "reports" / "bench" / "phone_model.json"))
    args = ap.parse_args(argv)
    v = pt.validation()
    sens = pt.sensitivity()
    fragile = sorted({r.parameter for r in sens if r.table == "Table 7"
                      and min(r.matches_down, r.matches_up) < r.matches_base})
    out = {
        "what": ("phone model (MODELLED from each phone's spec) against published latencies on phones it "
                 "was never calibrated on; error = modelled / published - 1"),
        "model_version": pm.load_parameters()["model_version"],
        "independence": ("no parameter was fitted to these rows; model v1 was compared with them once "
                         "(median |error| CPU FP32 94%, CPU int8 116%, GPU FP32 40%, GPU FP16 18%) and v2's "
                         "structure (CPU efficiency per operator class, a fixed cost per GPU kernel) and the "
                         "order of its new estimates were set after that comparison"),
        "sources": val.data()["sources"],
        "kernels": val.data()["kernels"],
        "rows": len(v.rows),
        "by_engine": [{k: (round(x, 1) if isinstance(x, float) else x) for k, x in e.to_dict().items()}
                      for e in v.by_engine],
        "by_engine_if_xnnpack": [{k: (round(x, 1) if isinstance(x, float) else x)
                                  for k, x in e.to_dict().items()} for e in v.by_engine_if_xnnpack],
        "targets": {f"median_abs_error_pct_{e.engine.replace(' ', '_').lower()}": {
            "target": TARGET_PCT, "measured": round(e.median_abs_pct, 1), "met": e.median_abs_pct <= TARGET_PCT}
            for e in v.by_engine},
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
