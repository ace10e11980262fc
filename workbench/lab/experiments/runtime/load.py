"""OODIn Fig. 7: the runtime under device load. The same stream served by OODIn's runtime manager
and by the statically selected design under the same load script (:func:`load_plan`,
:func:`load_events`), paired and alternated per round (:func:`load_sweep`); the ratio of their
p90 request latencies per load factor (:data:`LOAD_FACTORS`)."""

from __future__ import annotations

import math
import statistics
import tempfile
import threading
import time
from concurrent.futures import Future, wait
from pathlib import Path
from typing import Any

import numpy as np

from ....bundling import make_bundle
from ....errors import InputError
from ....moo.problem import DiscreteProblem
from ....nativelog import LITERT_NOISE, filtered_native_stderr
from ....profiles import Profile
from ....runtime import Event, load_bundle
from ....runtime.bundle import cores_of
from ....runtime.events import MAX_SLOWDOWN
from ....runtime.executor import ExecutorError
from ....runtime.manager import RuntimeManager
from ....runtime.policy import Choice, DeviceState
from ....runtime.run import no_loadable_design
from ....solvers import rass
from ....solvers.oodin import OodinManager
from .adaptation import SCENARIOS, OodinPolicy

#: OODIn Fig. 7's load factors here, chosen before any run: a doubling sequence, as the paper
#: scales the inference latency "exponentially" by the load factor (2 = twice as slow); 1 is the
#: idle device (the control). The paper's own range is only in its plot, so an "up to" depends on
#: the range swept; three doublings keep a sweep (4 factors x 2 runs) within a few minutes.
LOAD_FACTORS = (1.0, 2.0, 4.0, 8.0)

#: When the two load steps of a run start, as shares of its duration: the engine serving first
#: (the paper's GPU), then also the engine the adaptive run moved to (the paper's NNAPI).
LOAD_STEPS = (0.2, 0.6)

#: The runtime options of a load run: slow invokes flag the engine serving (OODIn monitors
#: engines; here they are overlapping core sets, see :func:`load_plan`), and only the injected
#: load moves a design: other processes' load on this shared machine and its free memory are not
#: read as issues, and an engine found loaded stays so for the run (the load does not end).
LOAD_OPTIONS: dict[str, Any] = {"latency_scope": "processor", "load_threshold": 1.0,
                                "memory_low_mb": 0.0}

#: Slow events closer than this belong to one load step (they are applied in one monitor tick).
STEP_GAP_S = 0.025


class StaticPolicy:
    """The statically selected design: the choice made at deployment (OODIn's with no issue),
    kept whatever the device does. ``role``: its RASS role, so that a design the runtime took out
    of service (a model fault) is not chosen again (the runtime then rejects requests)."""

    name = "static"

    def __init__(self, choice: Choice, role: str | None = None) -> None:
        self.choice = choice
        self.role = role
        self.decisions = 0

    def decide(self, state, usable):  # noqa: ARG002 - the runtime's Policy signature
        self.decisions += 1
        if self.role is not None and self.role not in usable:
            return None
        return self.choice


def check_factors(factors) -> tuple[float, ...]:
    """The load factors as floats, each a number from 1 (idle) to the runtime's largest
    slowdown, each once; anything else is an InputError naming the factor."""
    try:
        items = list(factors)
    except TypeError:
        raise InputError("load factors must be a list of numbers", where="factors",
                         value=factors) from None
    if not items:
        raise InputError("give at least one load factor", where="factors", value=factors)
    out: list[float] = []
    for f in items:
        ok = isinstance(f, (int, float)) and not isinstance(f, bool) and math.isfinite(f)
        if not ok or not 1.0 <= f <= MAX_SLOWDOWN:
            raise InputError(f"a load factor is a number from 1 (idle) to {MAX_SLOWDOWN:g} (how "
                             "many times slower the loaded engine runs)", where="factors",
                             value=f)
        if float(f) in out:
            raise InputError("each load factor once", where="factors", value=f)
        out.append(float(f))
    return tuple(out)


def _design_role(designs: dict[str, list[str]], name: str | None) -> str | None:
    """The RASS role of a design name (OODIn's are ``oodin:`` + the labels), else the name."""
    if name is None:
        return None
    labels = name.removeprefix("oodin:")
    return next((role for role, lab in designs.items() if "+".join(lab) == labels), name)


def load_plan(pb: DiscreteProblem) -> dict[str, Any]:
    """Which engines OODIn's manager moves through as engines get loaded, and which cores each
    load step slows (per-core slowdowns: an engine's factor is the largest of its cores').

    The paper (OODIn Fig. 7, the A71): the GPU serving first is loaded, OODIn moves to NNAPI;
    NNAPI is loaded too, it moves to the CPU. Here: ``engines[0]`` serves with no issue,
    ``engines[1]`` is OODIn's choice with ``engines[0]`` loaded, ``engines[2]`` with both loaded.
    Step 1 slows the cores of ``engines[0]`` that ``engines[1]`` does not use; step 2 slows those
    of ``engines[0]`` and ``engines[1]`` that ``engines[2]`` does not use, and restores the
    rest. On this machine (h1: ``CPU[0,1]`` -> ``CPU[0]`` -> ``CPU[1]``) step 1 slows core 1
    and step 2 core 0 (core 1 restored): the first-serving engine stays loaded throughout, the
    engine moved to is free during step 1 and loaded in step 2, the last one free in step 2, as
    in the paper. The limit: engines are overlapping core sets, so no core loads ``CPU[0,1]``
    alone: step 1 loads ``CPU[1]`` too (the paper's CPU, which no run serves on then), and
    when a step's cores cannot avoid the next engine they are all of the loaded engines'
    (``steps[k]["free"]`` says which engines each step leaves alone).
    """
    mgr = OodinManager(pb)
    engines: list[list[str]] = []
    flagged: list[str] = []
    for _ in range(3):
        flat = mgr.resolve(tuple(flagged))
        if flat is None:
            break
        procs = sorted({c.processor for c in pb.configs_of(flat)})
        if set(procs) <= set(flagged):
            break
        engines.append(procs)
        flagged += [p for p in procs if p not in flagged]
    if not engines:
        raise InputError("OODIn finds no design for this problem", where="load_plan")

    def cores(procs: list[str]) -> set[int]:
        out: set[int] = set()
        for p in procs:
            cs = cores_of(p)
            if cs is None:
                raise InputError("a load step slows CPU cores, so the engines must be CPU core "
                                 "sets", where="load_plan", value=p)
            out |= set(cs)
        return out

    c = [cores(e) for e in engines]
    s1 = (c[0] - c[1]) if len(c) > 1 else set()
    s1 = s1 or c[0]
    steps = [s1]
    if len(c) > 1:
        s2 = (c[0] | c[1]) - (c[2] if len(c) > 2 else set())
        steps.append(s2 or (c[0] | c[1]))
    procs_all = sorted(set(pb.processors))

    def loaded(s: set[int]) -> list[str]:
        return [p for p in procs_all if set(cores_of(p) or ()) & s]

    return {"engines": engines,
            "steps": [{"at": share, "cores": sorted(s), "loaded": loaded(s),
                       "free": [p for p in procs_all if p not in loaded(s)]}
                      for share, s in zip(LOAD_STEPS, steps)]}


def load_events(plan: dict[str, Any], factor: float, *, duration: float) -> list[Event]:
    """The slowdown events of one run: each step's cores slowed ``factor`` times (``slow``
    events, one per core), and at step 2 the cores of step 1 it does not keep set back to 1."""
    f = check_factors([factor])[0]
    events: list[Event] = []
    before: set[int] = set()
    for step in plan["steps"]:
        at, now = step["at"] * duration, set(step["cores"])
        events += [Event(at, "slow", (f"CPU[{c}]", f"{f:g}")) for c in sorted(now)]
        events += [Event(at, "slow", (f"CPU[{c}]", "1")) for c in sorted(before - now)]
        before = now
    return events


def _stream(b, policy, events: list[Event], *, duration: float, rate: float,
            options: dict[str, Any]) -> dict[str, Any]:
    """Serve ``rate`` requests/s per task for ``duration`` s like :func:`workbench.runtime.run.run`,
    keeping every request's submission time (s into the run) and latency (ms, submission to
    answer)."""
    rm = RuntimeManager(b, policy=policy, events=events, **options)
    requests: list[tuple[str, float, float, bool]] = []
    futures: list[Future] = []
    stop = threading.Event()

    def on_answer(task: str, at: float, t_sub: float):
        def done(f: Future) -> None:  # runs in the serving thread as it answers
            requests.append((task, at, (time.perf_counter() - t_sub) * 1e3,
                             f.exception() is None))
        return done

    def generate(task: str) -> None:
        t_next = time.perf_counter()
        while not stop.is_set():
            t_sub, at = time.perf_counter(), rm.now()
            fut = rm.submit(task)
            fut.add_done_callback(on_answer(task, at, t_sub))
            futures.append(fut)
            t_next += 1.0 / rate
            time.sleep(max(0.0, t_next - time.perf_counter()))

    try:
        rm.start()
    except ExecutorError:
        raise no_loadable_design(b) from None
    gens = [threading.Thread(target=generate, args=(t,), daemon=True) for t in rm.tasks]
    try:
        for g in gens:
            g.start()
        time.sleep(duration)
    except BaseException:
        stop.set()
        rm.stop(drain_s=0.0)
        raise
    stop.set()
    for g in gens:
        g.join()
    stats = rm.stop()
    wait(futures, timeout=10)
    answered = sum(1 for f in futures if f.done() and f.exception() is None)
    rejected = sum(1 for f in futures if f.done() and f.exception() is not None)
    return {"stats": stats, "lost": len(futures) - answered - rejected,
            "timeline": rm.timeline.to_dict(), "served": list(rm.served_log),
            "requests": sorted(requests, key=lambda r: r[1])}


def _pct(xs: list[float], p: float) -> float | None:
    return float(np.percentile(np.asarray(xs, float), p)) if xs else None


def load_run_summary(out: dict[str, Any], designs: dict[str, list[str]],
                     plan: dict[str, Any], factor: float) -> dict[str, Any]:
    """One load run's numbers: the p90 and median request latency of the requests submitted
    after the first load event (and of the invoke times served after it), the designs (RASS
    roles) and engines visited, and for each load step whether the run left the loaded engine
    (a switch for flags to a design on an engine that step leaves free) and after how long. At
    factor 1 nothing is loaded, so there is nothing to leave."""
    tl = out["timeline"]
    slows = [e for e in tl["events"] if e["kind"] == "slow"]
    t_load = slows[0]["t"] if slows else float("inf")
    lat = [ms for _, at, ms, ok in out["requests"] if ok and at >= t_load]
    inv = [ms for t, _, ms, _, _ in out["served"] if t >= t_load]
    sw = tl["switches"]
    # The events of one step are applied in one monitor tick (microseconds apart); steps are
    # seconds apart. A step starts at its first event.
    starts: list[float] = []
    for e in slows:
        if not starts or e["t"] - starts[-1] > STEP_GAP_S:
            starts.append(e["t"])
    steps = []
    for k, step in enumerate(plan["steps"]):
        t0 = starts[k] if k < len(starts) else None
        t1 = starts[k + 1] if k + 1 < len(starts) else float("inf")
        serving = None if t0 is None else next(
            (s for s in reversed(sw) if s["t"] <= t0), sw[0] if sw else None)
        on = set(serving["engines"]) if serving else set()
        loaded = list(step["loaded"]) if factor > 1 else []
        hit = None if t0 is None or not loaded else next(
            (s for s in sw if s["reason"] == "flags" and t0 <= s["t"] < t1
             and not set(s["engines"]) & set(loaded)), None)
        steps.append({"t": t0, "loaded": loaded, "serving": sorted(on),
                      "had_to_leave": bool(on & set(loaded)),
                      "left": hit is not None, "to": _design_role(designs, hit["to"]) if hit
                      else None, "to_engines": hit["engines"] if hit else None,
                      "delay_ms": (hit["t"] - t0) * 1e3 if hit and t0 is not None else None})
    st = out["stats"]
    return {"p90_ms": _pct(lat, 90), "median_ms": _pct(lat, 50), "n": len(lat),
            "invoke_p90_ms": _pct(inv, 90), "invoke_median_ms": _pct(inv, 50),
            "designs_visited": [_design_role(designs, s["to"]) for s in sw],
            "engines_visited": ["+".join(s["engines"]) for s in sw],
            "switches": sum(s["reason"] != "start" for s in sw), "steps": steps,
            "left_loaded": all(s["left"] for s in steps if s["had_to_leave"]),
            "served": st["served"], "rejected": st["rejected"], "lost": out["lost"]}


def load_ratios(ratios: dict[float, float | None]) -> dict[str, float | None]:
    """The paper's two numbers from static/adaptive p90 ratios per load factor: the largest
    ("up to") and the geometric mean, both over the loaded factors (> 1; at factor 1 both runs
    serve the same design on an idle device, so its ratio is the control, not a reduction);
    None without a loaded factor."""
    loaded = [r for f, r in ratios.items() if f > 1 and r is not None and r > 0]
    if not loaded:
        return {"ratio_max": None, "ratio_geomean": None}
    return {"ratio_max": max(loaded),
            "ratio_geomean": float(math.exp(statistics.fmean(math.log(r) for r in loaded)))}


def load_sweep(profile: Profile, zoo: str | Path, *, factors=LOAD_FACTORS,
               duration: float = 8.0, rate: float = 100.0, start_with: str = "adaptive",
               tasks: list[str] | None = None, slo: str | None = None) -> dict[str, Any]:
    """OODIn Fig. 7 on this machine: for each load factor, the h1 stream served by OODIn's
    Runtime Manager (:class:`OodinPolicy`, every candidate in the bundle) and by the statically
    selected design (:class:`StaticPolicy`: OODIn's design with no issue, kept), under the same
    load script.

    The paper emulates load by scaling the inference latency by a load factor; the runtime's
    ``slow:CPU[c]:F`` event is that manipulation (invokes on core ``c`` take F times longer and
    keep it busy). :func:`load_plan` maps the paper's two steps onto this machine's core sets
    (at ``LOAD_STEPS`` of the run: the engine serving first is loaded, then also the engine the
    adaptive run moves to; see its docstring for what per-core slowdowns cannot do). The runtime
    judges engines by their median invoke time against their calibrated reference (more than
    ``slow_factor`` = 2x flags the engine serving, :data:`LOAD_OPTIONS`), so a factor of 2 is by
    design not enough to move it. The two runs of a factor alternate which goes first
    (``start_with`` for the first factor) so drift on this shared machine hits both alike.

    Latency is per request, submission to answer, of the requests submitted after the first
    load event (the invoke time alone is kept too). Returns plain data: per factor both runs'
    summaries (:func:`load_run_summary`) and the static/adaptive p90 ratio; overall the largest
    ratio and the geometric mean, over the factors > 1 (:func:`load_ratios`). ``tasks`` and
    ``slo``: default the ``single`` scenario's (h1, ``max A; max TP; max L <= 41.67ms``).

    Raises:
        InputError: A bad factor, duration, rate or ``start_with``.
    """
    fs = check_factors(factors)
    for name, v in (("duration", duration), ("rate", rate)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                or v <= 0:
            raise InputError("must be a positive number", where=name, value=v)
    if start_with not in ("adaptive", "static"):
        raise InputError("must be 'adaptive' or 'static'", where="start_with", value=start_with)
    sc = SCENARIOS["single"]
    tasks = tasks or sc["tasks"]
    slo = slo or sc["slo"]
    pb = DiscreteProblem(profile, slo, tasks=tasks)
    res = rass(pb)
    plan = load_plan(pb)
    designs = {r: list(d.labels) for r, d in res.designs.items()}
    first = OodinPolicy(pb).decide(DeviceState({}, False), set())
    if first is None:
        raise InputError("OODIn finds no design for this problem", where="slo", value=slo)
    static_role = _design_role(designs, first.name)
    options = {**LOAD_OPTIONS, "latency_hold_s": duration}
    rows = []
    with tempfile.TemporaryDirectory() as tmp, filtered_native_stderr(LITERT_NOISE):
        make_bundle(res, pb, Path(tmp) / "b", models=zoo, include="all")
        for i, f in enumerate(fs):
            events = load_events(plan, f, duration=duration)
            order = ["adaptive", "static"]
            if (i % 2 == 1) != (start_with == "static"):
                order.reverse()
            got: dict[str, Any] = {}
            for kind in order:
                pol = OodinPolicy(pb) if kind == "adaptive" else StaticPolicy(
                    first, static_role if static_role in designs else None)
                b = load_bundle(Path(tmp) / "b")
                out = _stream(b, pol, events, duration=duration, rate=rate, options=options)
                for s in out["timeline"]["switches"]:
                    s["engines"] = sorted({b.configs[c].processor for c in s["configs"]})
                got[kind] = load_run_summary(out, designs, plan, f)
            a, s = got["adaptive"]["p90_ms"], got["static"]["p90_ms"]
            am, sm = got["adaptive"]["median_ms"], got["static"]["median_ms"]
            ai, si = got["adaptive"]["invoke_p90_ms"], got["static"]["invoke_p90_ms"]
            rows.append({"factor": f, "order": order, "adaptive": got["adaptive"],
                         "static": got["static"],
                         "ratio_p90": s / a if a and s is not None else None,
                         "ratio_median": sm / am if am and sm is not None else None,
                         "ratio_invoke_p90": si / ai if ai and si is not None else None})
    return {"factors": list(fs), "duration_s": duration, "rate_per_s": rate, "tasks": tasks,
            "slo": slo, "designs": designs, "static_design": static_role, "plan": plan,
            "options": options, "per_factor": rows,
            **load_ratios({r["factor"]: r["ratio_p90"] for r in rows})}
