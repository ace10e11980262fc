"""Runtime adaptation on this machine, in the shape of CARIn Figs 7-8 and OODIn Fig. 8: a measured
host profile solved (RASS, and OODIn for comparison), bundled and run for real by
:mod:`workbench.runtime` while events happen (:data:`SCENARIOS`, :func:`paper_events`,
:func:`throttle_events`), with the summaries the report quotes."""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .... import papers
from ....bundling import make_bundle, storage
from ....moo.problem import DiscreteProblem
from ....nativelog import LITERT_NOISE, filtered_native_stderr
from ....profiles import Profile
from ....runtime import Event, load_bundle
from ....runtime.bundle import cores_of
from ....runtime.events import MAX_SLOWDOWN
from ....runtime.monitor import anon_mb
from ....runtime.policy import Choice
from ....runtime.run import run
from ....solvers import rass
from ....solvers.oodin import OodinManager

#: The host scenarios: CARIn UC1 (single DNN, Fig. 7) and UC3 (multi-DNN, Fig. 8) on the host.
SCENARIOS: dict[str, dict[str, Any]] = {
    "single": {"tasks": ["h1"], "slo": "max A; max TP; max L <= 41.67ms",
               "paper": "CARIn Fig. 7 (UC1 on S20 FE) and OODIn Figs 7-8"},
    "multi": {"tasks": ["h3-vision", "h3-audio"],
              "slo": "max A[h3-vision]; max A[h3-audio]; max STP; avg L <= 50ms",
              "paper": "CARIn Fig. 8 (UC3 on A71)"},
    # OODIn Fig. 8: a continuous stream, the engine serving it throttles (NNAPI on the A71), the
    # runtime moves to the next best design on another engine (the GPU), that one throttles too,
    # and it moves again (the CPU). 2000 requests/s keep the serving thread 15-35% of a core
    # busy on the host's tiny h1 models, depending on what else runs (a 24 frames/s camera would
    # keep it 0.3% busy and no quota would bite), so a 10% quota leaves it a third to two thirds
    # of what the stream needs: the analog of a clock cut that much, in CPU time, not frequency.
    # CARIn Figs 7-8 with the paper's own event scripts (section 7.2), each event put on the host
    # engine that plays the paper's: see paper_events.
    "fig7": {"tasks": ["h1"], "slo": "max A; max TP; max L <= 41.67ms",
             "paper": "CARIn Fig. 7's events: d0's engine overloads, then a memory issue"},
    "fig8": {"tasks": ["h3-vision", "h3-audio"],
             "slo": "max A[h3-vision]; max A[h3-audio]; max STP; avg L <= 50ms",
             "paper": "CARIn Fig. 8's events: d0's engine (the DSP) overloads, a memory issue, "
                      "both end, the overload returns"},
    "throttle": {"tasks": ["h1"], "slo": "max A; max TP; max L <= 41.67ms", "policy": "oodin",
                 "rate": 2000.0, "throttle_pct": 10,
                 "paper": "OODIn Fig. 8 (InceptionV3 on A71: NNAPI, then the GPU, throttled)"},
}


class OodinPolicy:
    """OODIn's runtime manager as a runtime policy (for comparison with RASS's look-up): on every
    change of the flags it re-solves the look-up tables without the flagged processors (and,
    under a memory issue, below the current design's memory), paying the solve each time.

    Use it with a bundle that stores every candidate (``make_bundle(..., include="all")``).
    """

    name = "oodin"

    def __init__(self, problem: DiscreteProblem) -> None:
        self.manager = OodinManager(problem)
        self.problem = problem
        self.solve_ms: list[float] = []
        self._normal_mf: float | None = None

    def decide(self, state, usable):  # noqa: ARG002 - the runtime's Policy signature
        """Re-solve for this device state (a :class:`workbench.runtime.DeviceState`)."""
        t0 = time.perf_counter()
        limit = None
        if state.memory and self._normal_mf is not None:
            limit = self._normal_mf * 0.999  # a smaller design than the one memory ran short on
        flat = self.manager.resolve(state.flagged, memory_limit_mb=limit)
        if flat is None and limit is not None:
            flat = self.manager.resolve((), memory_limit_mb=limit)
        if flat is None:
            flat = self.manager.resolve(())
        self.solve_ms.append((time.perf_counter() - t0) * 1e3)
        if flat is None:
            return None
        if not state.memory:
            mf = self.problem.metrics(np.array([flat]))["MF"][0]
            self._normal_mf = None if mf != mf else float(mf)
        configs = tuple(c.id for c in self.problem.configs_of(flat))
        return Choice("oodin:" + "+".join(c.label() for c in self.problem.configs_of(flat)),
                      configs)


@dataclass
class AdaptationRun:
    """One run: the scenario, the policy, the events and what the runtime did."""

    scenario: str
    policy: str
    tasks: list[str]
    slo: str
    designs: dict[str, list[str]]
    events: list[dict[str, Any]]
    run: dict[str, Any]
    detections: list[dict[str, Any]]
    decision_ms: dict[str, float | None]
    storage: dict[str, Any]
    #: Runtime options the scenario set (the throttle scenario: request_slo_ms, latency_hold_s).
    options: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class RunSummary:
    """What the runtime report keeps of one run (and the index reads)."""

    policy: str
    scenario: str
    designs_visited: list[str]
    switches: int
    submitted: int
    served: int
    rejected: int
    lost: int
    detections: list[dict[str, Any]]
    decision_ms: dict[str, float | None]
    storage: dict[str, Any]


def run_summary(r: AdaptationRun) -> RunSummary:
    s, st = r.run["summary"], r.run["stats"]
    return RunSummary(r.policy, r.scenario, s["designs"], s["switches"], st["submitted"],
                      st["served"], st["rejected"], r.run["lost"], r.detections, r.decision_ms,
                      r.storage)


def scenario_events(cores: set[int], *, scale: float = 1.0, memory_mb: int = 512
                    ) -> list[Event]:
    """Overload on one of ``cores`` (d0's trigger), memory pressure, relief, then throttling on
    the same core."""
    core = str(min(cores))
    t = [x * scale for x in (1.0, 3.0, 4.5, 5.5, 6.5, 9.0)]
    return [Event(t[0], "stress", (core,)), Event(t[1], "memory", (str(memory_mb),)),
            Event(t[2], "unmemory"), Event(t[3], "unstress"),
            Event(t[4], "slow", (f"CPU[{core}]", "4")), Event(t[5], "unslow")]


def paper_events(scenario: str, triggers: list[str], *, scale: float = 1.0,
                 memory_mb: int = 512) -> list[Event]:
    """CARIn section 7.2's event scripts on the host's engines.

    The paper's trigger processors are separate engines (the S20's CPU and GPU, the A71's DSP,
    GPU and CPU); the host's are CPU core sets that overlap (``CPU[0,1]``, ``CPU[0]``,
    ``CPU[1]``), and a stressed core loads every set holding it. So "d0's engine overloads and
    d1's does not" is a real stress process on a core of d0's trigger that d1's trigger does not
    use (when there is one).

    - ``fig7`` (UC1 on the S20): the CPU running d0 overloads (2 s), then a memory issue (5 s);
      both last to the end. The paper: d0 -> d1 -> dm.
    - ``fig8`` (UC3 on the A71): the DSP running d0 overloads (1 s), a memory issue (3 s), the
      overload ends (5 s), the memory issue ends (5.5 s), the overload returns (7 s). The
      paper: d1 -> dm -> d0 -> d2, starting on d1 (its figure supposes the DSP already
      overloaded; here the run starts on d0 with no flags, and the first event moves it).
    """
    t0 = set(cores_of(triggers[0]) or (0,))
    t1 = set(cores_of(triggers[1]) or ()) if len(triggers) > 1 else set()
    core = str(min(t0 - t1 or t0))
    if scenario == "fig7":
        return [Event(2.0 * scale, "stress", (core,)),
                Event(5.0 * scale, "memory", (str(memory_mb),))]
    if scenario == "fig8":
        return [Event(1.0 * scale, "stress", (core,)),
                Event(3.0 * scale, "memory", (str(memory_mb),)),
                Event(5.0 * scale, "unstress"), Event(5.5 * scale, "unmemory"),
                Event(7.0 * scale, "stress", (core,))]
    raise ValueError(f"no paper event script for scenario {scenario!r}")


def throttle_events(*, pct: float, scale: float = 1.0) -> list[Event]:
    """OODIn Fig. 8's sequence: the engine serving the stream throttles (NNAPI on the A71), then
    the engine serving after the runtime moved (the GPU), then both end. ``serving`` picks the
    engine when the event happens, as heat builds up in the engine doing the work."""
    t = [x * scale for x in (2.0, 5.0, 8.0)]
    return [Event(t[0], "throttle", ("serving", f"{pct:g}")),
            Event(t[1], "throttle", ("serving", f"{pct:g}")), Event(t[2], "unthrottle")]


def _throttled(e: dict[str, Any]) -> list[str]:
    """The engines a throttle event confined (``serving`` is resolved when it happens)."""
    return list(e.get("engines") or ([] if e["args"][0] == "serving" else [e["args"][0]]))


def latency_bound_ms(pb: DiscreteProblem) -> float | None:
    """The SLO's latency bound (``L <= X``), if it has one."""
    bounds = [c.value for c in pb.slo.constraints if c.metric == "L" and c.op in ("<=", "<")]
    return min(bounds) if bounds else None


def _detections(out: dict[str, Any]) -> list[dict[str, Any]]:
    """For each event, the first flag-driven switch after it and the delay. For a ``throttle``
    only a switch with the throttled engine among its flags counts (a load flag from something
    else in that window is not a detection of the throttle)."""
    found = []
    sw = [s for s in out["timeline"]["switches"] if s["reason"] == "flags"]
    evs = [e for e in out["timeline"]["events"] if e["kind"] != "fault"]
    for i, e in enumerate(evs):
        nxt = evs[i + 1]["t"] if i + 1 < len(evs) else float("inf")
        hit = next((s for s in sw if e["t"] <= s["t"] < nxt and (
            e["kind"] != "throttle" or set(_throttled(e)) & set(s["flags"]))), None)
        found.append({"event": ":".join([e["kind"], *e.get("args", [])]), "t": e["t"],
                      "switch_to": hit["to"] if hit else None,
                      "delay_ms": (hit["t"] - e["t"]) * 1e3 if hit else None})
    return found


def adaptation(profile: Profile, zoo: str | Path, scenario: str = "single", *,
               policy: str | None = None, duration: float = 10.0, rate: float | None = None,
               memory_mb: int = 512, scale: float | None = None,
               throttle_pct: float | None = None) -> AdaptationRun:
    """Solve, bundle and run one scenario for real on this machine.

    Args:
        profile: A measured profile of this machine (profiles/host.json).
        zoo: The zoo folder with the model files.
        scenario: ``"single"`` (h1), ``"multi"`` (h3-vision + h3-audio), ``"fig7"`` / ``"fig8"``
            (the same tasks under CARIn's own event scripts, :func:`paper_events`) or
            ``"throttle"`` (h1 under real CPU throttling of one engine, then another: OODIn
            Fig. 8).
        policy: ``"rass"`` (look up the switching policy) or ``"oodin"`` (re-solve each change);
            default: the scenario's (``"oodin"`` for throttle, else ``"rass"``).
        duration: Seconds; the events are spread over it (scale = duration / 10).
        rate: Requests per second per task (default: the scenario's, else 100).
        memory_mb: Size of the memory-pressure process.
        scale: Stretch of the event times (default duration / 10).
        throttle_pct: The throttle scenario's share of one core (default: the scenario's, 10%).

    Raises:
        InputError: The throttle scenario on a machine without root or the cgroup-v1 cpu
            controller (one line saying which).
    """
    sc = SCENARIOS[scenario]
    policy = policy or sc.get("policy", "rass")
    rate = sc.get("rate", 100.0) if rate is None else rate
    scale = duration / 10 if scale is None else scale
    pb = DiscreteProblem(profile, sc["slo"], tasks=sc["tasks"])
    res = rass(pb)
    options: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        make_bundle(res, pb, Path(tmp) / "b", models=zoo,
                    include="all" if policy == "oodin" else "designs")
        b = load_bundle(Path(tmp) / "b")
        pol = OodinPolicy(pb) if policy == "oodin" else None
        hogs: int | None = memory_mb
        if scenario == "throttle":
            pct = sc["throttle_pct"] if throttle_pct is None else throttle_pct
            events = throttle_events(pct=pct, scale=scale)
            # The runtime sees a throttle only as requests falling behind: the SLO's latency
            # bound (24 frames/s) is what a request may take. Thermal throttling lasts, so an
            # engine that missed it is not probed again during the run. Like Fig. 8 the scenario
            # isolates throttling and judges engines by the SLO alone: this machine is shared,
            # and other sessions' load (the load flag), a doubled 0.06 ms invoke (the invoke
            # flag) or memory they hold would move the design for reasons that do not touch a
            # 41.67 ms SLO. An engine that cannot keep up, for whatever reason, still shows.
            options = {"request_slo_ms": latency_bound_ms(pb), "latency_hold_s": duration,
                       "load_threshold": 1.0, "slow_factor": MAX_SLOWDOWN}
            hogs = None
        elif scenario in ("fig7", "fig8"):
            events = paper_events(scenario, list(res.triggers), scale=scale,
                                  memory_mb=memory_mb)
        else:
            # Load the core of d0's trigger processor (the one running its largest workload),
            # as CARIn's Figs 7-8 overload the processor that triggers the switch.
            events = scenario_events(set(cores_of(res.triggers[0]) or (0,)), scale=scale,
                                     memory_mb=memory_mb)
        used = anon_mb()
        # LiteRT prints its XNNPACK line from C++ at the first interpreter, with no switch to
        # turn it off; the runtime itself stays free of fd tricks, so the report filters it here.
        with filtered_native_stderr(LITERT_NOISE):
            out = run(b, duration=duration, rate=rate, events=events, policy=pol,
                      memory_used_high_mb=None if used is None or hogs is None
                      else used + hogs / 2, **options).to_dict()
        for s in out["timeline"]["switches"]:  # the engine(s) each design runs on, for reports
            s["engines"] = [b.configs[c].processor for c in s["configs"]]
    # The decision behind each switch: a list index for RASS, a re-solve for OODIn.
    costs = [s["decision_us"] / 1e3 for s in out["timeline"]["switches"]]
    st = storage(res, pb).to_dict()
    return AdaptationRun(
        scenario=scenario, policy=policy, tasks=sc["tasks"], slo=sc["slo"],
        designs={r: list(d.labels) for r, d in res.designs.items()},
        events=[{"t": e.at, "event": str(e)} for e in events], run=out,
        detections=_detections(out),
        decision_ms={"median": statistics.median(costs) if costs else None,
                     "max": max(costs) if costs else None, "n": len(costs)},
        storage=st, options=options)


#: A design "met the SLO" after a throttle when its periods' median request latency was within
#: the bound in at least this share of the periods it served before the next event (the first
#: one drains what queued up on the throttled engine).
MET_SHARE = 0.9


def _role(r: AdaptationRun, name: str) -> str:
    """The RASS role of a design name (OODIn's names are ``oodin:`` + the labels)."""
    labels = name.removeprefix("oodin:")
    return next((role for role, lab in r.designs.items() if "+".join(lab) == labels), name)


def throttle_summary(r: AdaptationRun) -> dict[str, Any]:
    """OODIn Fig. 8's numbers from a ``throttle`` run: for each throttle, the detection delay
    (event to the first switch flagging the throttled engine), the design and engine it moved
    to, and whether that design then met the SLO; the designs visited, as roles."""
    tl, bound = r.run["timeline"], r.options.get("request_slo_ms")
    rows = tl["rows"]
    keys = [k for k in rows if k.startswith("R[")]
    evs = [e for e in tl["events"] if e["kind"] != "fault"]
    out = []
    for i, e in enumerate(evs):
        if e["kind"] != "throttle":
            continue
        nxt = evs[i + 1]["t"] if i + 1 < len(evs) else float("inf")
        engines = _throttled(e)
        hit = next((s for s in tl["switches"] if s["reason"] == "flags"
                    and e["t"] <= s["t"] < nxt and set(engines) & set(s["flags"])), None)
        item: dict[str, Any] = {"engines": engines, "pct": float(e["args"][1]), "t": e["t"],
                                "delay_ms": None, "to": None, "to_engines": None,
                                "periods_after": 0, "within_slo": None, "met_slo": False}
        if hit is not None:
            served = [[rows[k][j] for k in keys] for j, t in enumerate(rows["t"])
                      if hit["t"] < t < nxt and rows["design"][j] == hit["to"]]
            served = [v for v in served if all(x is not None for x in v)]
            ok = [all(x <= bound for x in v) for v in served] if bound is not None else []
            within = sum(ok) / len(ok) if ok else None
            item.update(delay_ms=(hit["t"] - e["t"]) * 1e3, to=_role(r, hit["to"]),
                        to_engines=hit.get("engines"), periods_after=len(ok), within_slo=within,
                        met_slo=bool(within is not None and within >= MET_SHARE
                                     and not set(engines) & set(hit.get("engines") or [])))
        out.append(item)
    return {"throttles": out, "answered": bool(out) and all(t["met_slo"] for t in out),
            "designs_visited": [_role(r, s["to"]) for s in tl["switches"]],
            "engines_visited": [s.get("engines") for s in tl["switches"]],
            "kernel": r.run["stats"].get("throttles", [])}


def paper_runtime() -> dict[str, Any]:
    """What the papers report for runtime adaptation (data with citations)."""
    return {"carin": papers.paper("carin")["runtime_adaptation"],
            "carin_citation": papers.citation("carin"),
            "oodin": papers.paper("oodin")["runtime"], "oodin_citation": papers.citation("oodin")}


def storage_table(devices: tuple[str, ...] = ("a71", "s20fe", "pixel7")) -> list[dict[str, Any]]:
    """CARIn Table 10's shape on the modelled phones: model storage of RASS's designs against
    every candidate variant (what OODIn keeps), beside the paper's numbers. Sizes are the
    profiles' S column (the models' file sizes from CARIn Tables 2-5)."""
    from ....moo.usecases import NAMES, problem

    paper = {(r[0], r[1]): r[2:] for r in papers.paper("carin")["storage_mb"]["rows"]}
    rows = []
    for uc in NAMES:
        for dev in devices:
            pb = problem(uc, dev)
            res = rass(pb)
            st = storage(res, pb) if res.ok else None
            p = paper.get((uc, dev), [None, None, None])
            rows.append({"use_case": uc, "device": dev, "status": res.status,
                         "carin_mb": None if st is None else round(st.designs_mb, 2),
                         "oodin_mb": None if st is None else round(st.all_mb, 2),
                         "reduction": None if st is None else round(st.reduction, 2),
                         "paper_carin_mb": p[0], "paper_oodin_mb": p[1], "paper_reduction": p[2],
                         "source": pb.profile.source})
    return rows
