"""Can the phone model be trusted? Its error on held-out published measurements and how much
CARIn Tables 7-8 (the designs it was calibrated to resemble) depend on each calibrated parameter.

Computation only (typed rows); notebooks/19_phone_model.ipynb draws them.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass
from typing import Any

from ....profiles import phone_model as pm
from ....profiles.validation import TRANSFER, EngineError, HeldOutRow, error_by_engine, fit_calibration, held_out
from .designs import policy_comparison

#: The parameters marked "calibrated" in model_parameters.json, and the CPU kernel efficiencies
#: and GPU kernel cost the designs depend on most (estimates), as paths into it; and the use
#: cases whose published designs they were calibrated against. Tables 7 and 8 are CARIn's
#: designs for UC1 on the S20 FE (the calibration target) and UC3 on the A71 (not used).
CALIBRATED: tuple[tuple[str, ...], ...] = (
    ("cpu", "load_balance", "xnnpack"), ("cpu", "sync", "xnnpack"),
    ("cpu", "kernels", "xnnpack", "int8", "dense"), ("cpu", "kernels", "xnnpack", "int8", "depthwise"),
    ("cpu", "kernels", "xnnpack", "fp32", "dense"), ("cpu", "kernels", "builtin", "fp32", "dense"),
    ("architectures", "EfficientNetLite", "gpu_eff"), ("architectures", "EfficientNetLite", "npu_eff"),
    ("architectures", "MobileViT", "cpu_fit"), ("gpu", "kernel_us"),
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
    """The published rows and their error per engine and precision."""

    rows: list[HeldOutRow]
    #: The headline: held-out rows on another family or another phone, calibrated.
    by_engine: list[EngineError]
    #: The same rows predicted from the spec alone (no public calibration).
    by_engine_spec_only: list[EngineError]
    #: Held out and calibrated, on the phones no calibration row comes from.
    by_engine_other_phones: list[EngineError]
    #: Held out on the calibration phone and family at other sizes (interpolation: shown apart).
    by_engine_interpolation: list[EngineError]
    #: Spec-only, had every unstated-kernel CPU row run XNNPACK (shown, not chosen).
    by_engine_if_xnnpack: list[EngineError]
    #: The fitted terms (fixed_ms, scale per engine) and the rows each fit used.
    calibration: dict[str, Any]


def validation(parameters: dict[str, Any] | None = None) -> Validation:
    rows = held_out(parameters)
    alt = [r if r.modelled_xnnpack_ms is None else HeldOutRow(
        **(r.to_dict() | {"modelled_ms": r.modelled_xnnpack_ms, "kernels": "xnnpack",
                          "error_pct": 100.0 * (r.modelled_xnnpack_ms / r.measured_ms - 1.0),
                          "modelled_xnnpack_ms": None})) for r in rows]
    return Validation(
        rows=rows, by_engine=error_by_engine(rows, groups=TRANSFER),
        by_engine_spec_only=error_by_engine(rows, calibrated=False, groups=TRANSFER),
        by_engine_other_phones=error_by_engine(rows, groups=("other phone",)),
        by_engine_interpolation=error_by_engine(rows, groups=("interpolation",)),
        by_engine_if_xnnpack=error_by_engine(alt, calibrated=False, groups=TRANSFER),
        calibration=fit_calibration(rows).to_dict())


@dataclass(frozen=True)
class SpecOnlyTable:
    """A CARIn table with its phone modelled from its spec plus the public calibration, not from
    its own entry under ``devices``. The spec defaults it falls back on are medians of the papers'
    phones' calibrated values (the DSP's: the A71's own), so this is not fully independent."""

    table: str
    use_case: str
    device: str
    roles: int
    matches: int
    #: Roles whose every model runs on the paper's processor, whatever precision and threads, and
    #: what guessing "everything on the CPU" scores on that count (its baseline).
    same_processors: int
    all_cpu_guess: int
    rows: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def spec_only_tables(parameters: dict[str, Any] | None = None) -> list[SpecOnlyTable]:
    """CARIn Tables 7 and 8 from each phone's spec and the public calibration only."""
    P = parameters or pm.load_parameters()
    out = []
    for table, uc, device in TABLES:
        prof = pm.build_profile(pm.paper_spec(device), use_cases=[uc], parameters=P)
        rows = policy_comparison(uc, device, profile=prof)["rows"]
        judged = [r for r in rows if r["match"] is not None]
        out.append(SpecOnlyTable(table=table, use_case=uc, device=device, roles=len(judged),
                                 matches=sum(r["match"] for r in judged),
                                 same_processors=sum(bool(r["same_processors"]) for r in judged),
                                 all_cpu_guess=sum(bool(r["paper_all_cpu"]) for r in judged), rows=rows))
    return out


# --- the multi-DNN contention model ------------------------------------------------------------

@dataclass(frozen=True)
class ContentionRow:
    """One model's latency in a measured co-execution beside the contention model's."""

    combination: str
    config: str
    alone_ms: float
    measured_ms: float
    fitted_ms: float     # parameters fitted to every row
    held_out_ms: float   # parameters fitted without this combination's row
    default_ms: float    # the model's defaults (what an unmeasured device gets)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ContentionFit:
    profile: str
    cpu: str
    fitted: dict[str, float]
    rows: list[ContentionRow]
    #: Median |error| (%) of the fitted, held-out (leave one combination out) and default
    #: predictions, and of "no contention" (each model as fast as alone).
    median_abs_error_pct: dict[str, float]


def _median_abs_pct(pairs: list[tuple[float, float]]) -> float:
    import statistics

    return statistics.median(abs(100.0 * (p / m - 1.0)) for p, m in pairs)


def contention_fit(profile: str = "host", uc: str = "h3") -> ContentionFit:
    """Fit the contention model to a measured profile's co-execution rows (the host's by
    default), with every row predicted by parameters fitted without it."""
    from ....moo import contention as ct
    from ....moo.problem import DiscreteProblem
    from ....moo.usecases import scenario
    from ....profiles import load_profile, resolve_profile

    prof = load_profile(resolve_profile(profile))
    tasks, slo = scenario(uc)
    mask = DiscreteProblem(prof, slo, tasks=list(tasks)).core_mask
    co, configs = list(prof.coexecution), list(prof.configs)
    base = dict(ct.DEFAULTS, same_processor_share=prof.contention.get(
        "same_processor_share", ct.DEFAULTS["same_processor_share"]))
    fitted = ct.fit(configs, co, base=base, core_mask=mask)
    full = ct.predict(configs, co, fitted, core_mask=mask)
    default = ct.predict(configs, co, dict(ct.DEFAULTS), core_mask=mask)
    held = [ct.predict(configs, [r], ct.fit(configs, co[:i] + co[i + 1:], base=base, core_mask=mask),
                       core_mask=mask)[0] for i, r in enumerate(co)]
    by_id = {c.id: c for c in configs}
    rows = []
    for i, r in enumerate(co):
        combo = " + ".join(by_id[c].label() for c in r.configs)
        for k, cid in enumerate(r.configs):
            alone = by_id[cid].L
            assert alone is not None  # a co-execution row names rows with a latency (schema)
            rows.append(ContentionRow(combo, by_id[cid].label(), alone, r.L[k], full[i][k],
                                      held[i][k], default[i][k]))
    err = {name: _median_abs_pct([(getattr(x, f), x.measured_ms) for x in rows])
           for name, f in (("fitted", "fitted_ms"), ("held_out", "held_out_ms"),
                           ("defaults", "default_ms"), ("no_contention", "alone_ms"))}
    return ContentionFit(profile=profile, cpu=str(prof.provenance.host.get("cpu")),
                         fitted=fitted, rows=rows, median_abs_error_pct=err)


@dataclass(frozen=True)
class ContentionSensitivityRow:
    """RASS's d0 for a multi-DNN use case with one contention parameter set to ``value``."""

    use_case: str
    device: str
    parameter: str
    value: float
    d0: str | None
    d0_changed: bool
    optimality: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: Values tried per parameter: from no contention to twice the defaults' (time-sharing an
#: accelerator cannot cost more than running one after the other, so its share stops at 1).
SWEEP = {"same_processor_share": (0.0, 0.5, 1.0), "cpu_oversubscription": (0.0, 0.15, 0.3, 0.6),
         "cross_processor": (0.0, 0.04, 0.08, 0.16)}


def _d0(res: Any) -> str | None:
    return " + ".join(res.d0.labels) if res.ok and res.d0 is not None else None


def contention_sensitivity(use_cases: tuple[str, ...] = ("uc3", "uc4"),
                           devices: tuple[str, ...] = ("pixel7", "s20fe", "a71")
                           ) -> list[ContentionSensitivityRow]:
    """UC3/UC4's d0 on each modelled phone as each contention parameter moves alone."""
    from ....moo.problem import DiscreteProblem
    from ....moo.usecases import scenario
    from ....profiles import load_profile, resolve_profile
    from ....solvers import rass

    out = []
    for uc in use_cases:
        tasks, slo = scenario(uc)
        for dev in devices:
            prof = load_profile(resolve_profile(dev))
            base = rass(DiscreteProblem(prof, slo, tasks=list(tasks)))
            base_d0 = _d0(base)
            for name, values in SWEEP.items():
                for v in values:
                    p = prof.model_copy(update={"contention": dict(prof.contention, **{name: v})})
                    res = rass(DiscreteProblem(p, slo, tasks=list(tasks)))
                    d0 = _d0(res)
                    out.append(ContentionSensitivityRow(
                        uc, dev, name, v, d0, d0 != base_d0,
                        res.d0.optimality if res.ok and res.d0 is not None else None))
    return out
