"""Can the phone model be trusted? Its error on held-out published measurements and how much
CARIn Tables 7-8 (the designs it was calibrated to resemble) depend on each calibrated parameter.

Computation only (typed rows); notebooks/19_phone_model.ipynb draws them.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass
from typing import Any

from ...profiles import phone_model as pm
from ...profiles.validation import EngineError, HeldOutRow, error_by_engine, held_out
from .carin import policy_comparison

#: The parameters marked "calibrated" in model_parameters.json (paths into it), and the use
#: cases whose published designs they were calibrated against. Tables 7 and 8 are CARIn's
#: designs for UC1 on the S20 FE (the calibration target) and UC3 on the A71 (not used).
CALIBRATED: tuple[tuple[str, ...], ...] = (
    ("cpu", "load_balance", "xnnpack"), ("cpu", "sync", "xnnpack"),
    ("architectures", "EfficientNetLite", "cpu_eff"), ("architectures", "EfficientNetLite", "gpu_eff"),
    ("architectures", "EfficientNetLite", "npu_eff"), ("architectures", "EfficientNetLite", "xnnpack_fp32"),
    ("architectures", "MobileNetV2", "cpu_eff"), ("architectures", "RegNet", "cpu_eff"),
    ("architectures", "MobileViT", "cpu_eff"),
    ("devices", "s20fe", "engines", "GPU", "eff"), ("devices", "s20fe", "engines", "GPU", "invoke_ms"),
    ("devices", "s20fe", "engines", "NPU", "eff_int8"), ("devices", "s20fe", "engines", "NPU", "eff_fp16"),
    ("devices", "s20fe", "engines", "NPU", "invoke_ms"),
    ("devices", "a71", "engines", "GPU", "eff"), ("devices", "a71", "engines", "NPU", "eff_int8"),
    ("devices", "a71", "engines", "DSP", "eff_int8"),
)
TABLES = (("Table 7", "uc1", "s20fe"), ("Table 8", "uc3", "a71"))


@dataclass(frozen=True)
class SensitivityRow:
    """How many of a table's policy roles give the paper's design with one parameter scaled."""

    parameter: str
    table: str
    roles: int
    matches_down: int   # parameter x (1 - step)
    matches_base: int
    matches_up: int     # parameter x (1 + step)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _matches(table: str, uc: str, device: str, P: dict[str, Any]) -> tuple[int, int]:
    prof = pm.build_profile(device, use_cases=[uc], parameters=P)
    rows = policy_comparison(uc, device, profile=prof)["rows"]
    judged = [r["match"] for r in rows if r["match"] is not None]
    return sum(judged), len(judged)


def sensitivity(*, step: float = 0.1, parameters: dict[str, Any] | None = None
                ) -> list[SensitivityRow]:
    """Each calibrated parameter scaled by 1 -/+ ``step``, alone: the roles of Tables 7 and 8
    whose design is still the paper's (rebuilt profiles, RASS re-run)."""
    base_P = parameters or pm.load_parameters()
    base = {t: _matches(t, uc, dev, base_P) for t, uc, dev in TABLES}
    out = []
    for path in CALIBRATED:
        got = {}
        for sign in (-1, 1):
            P = copy.deepcopy(base_P)
            node = P
            for k in path[:-1]:
                node = node[k]
            node[path[-1]] = node[path[-1]] * (1 + sign * step)
            for t, uc, dev in TABLES:
                got[(t, sign)] = _matches(t, uc, dev, P)[0]
        for t, _, _ in TABLES:
            out.append(SensitivityRow(parameter=".".join(path), table=t, roles=base[t][1],
                                      matches_down=got[(t, -1)], matches_base=base[t][0],
                                      matches_up=got[(t, 1)]))
    return out


@dataclass(frozen=True)
class Validation:
    """The held-out rows and their summary per engine."""

    rows: list[HeldOutRow]
    by_engine: list[EngineError]
    #: The same summary had every unstated-kernel CPU row run XNNPACK (shown, not chosen).
    by_engine_if_xnnpack: list[EngineError]


def validation(parameters: dict[str, Any] | None = None) -> Validation:
    rows = held_out(parameters)
    alt = [r if r.modelled_xnnpack_ms is None else HeldOutRow(
        **(r.to_dict() | {"modelled_ms": r.modelled_xnnpack_ms, "kernels": "xnnpack",
                          "error_pct": 100.0 * (r.modelled_xnnpack_ms / r.measured_ms - 1.0),
                          "modelled_xnnpack_ms": None})) for r in rows]
    return Validation(rows=rows, by_engine=error_by_engine(rows),
                      by_engine_if_xnnpack=error_by_engine(alt))
