"""MASA section 3 as an exact time-indexed MILP (scipy's HiGHS) for small instances, and MASA's
schedule of the same instance by MASA's own scheduler: the optimality gap of MASA section 5.6 /
Fig. 13(a).

Each layer has three tasks: load (holds the weights from its start until the unload: the
*locked* memory of Eq. 3), execute (holds its activations while it runs: the *direct* memory of
Eq. 2) and unload (instantaneous by default, as in :mod:`workbench.memory.masa`). Time is
discretised in units; constraint (1c) becomes "at most k tasks run at any unit", (1d)
precedence, (1e) memory at every unit.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..timing import Stopwatch
from .masa import Job, LayerCost, NetProfile, simulate

#: One task of an :class:`Instance`: (name, duration in units, kind, net, layer).
TaskRow = tuple[str, int, str, int, int]


@dataclass
class Instance:
    """Layers of several networks: integer durations (units) and memory (bytes) per layer."""

    nets: list[list[dict]]  # per net, per layer: load, exec, weight, act
    budget: int
    # Units an unload takes. 0 (the default): weights are freed the moment the layer's
    # execution ends, as MASA's scheduler frees them, so the MILP and MASA share one model.
    unload: int = 0

    def tasks(self) -> tuple[list[TaskRow], list[tuple[int, int]]]:
        """(name, duration, kind, net, layer) and precedence pairs (i before j)."""
        out: list[TaskRow] = []
        prec: list[tuple[int, int]] = []
        for n, layers in enumerate(self.nets):
            prev_exec = None
            for k, ly in enumerate(layers):
                base = len(out)
                out += [(f"n{n}l{k}:load", ly["load"], "load", n, k),
                        (f"n{n}l{k}:exec", ly["exec"], "exec", n, k),
                        (f"n{n}l{k}:unload", self.unload, "unload", n, k)]
                prec += [(base, base + 1), (base + 1, base + 2)]
                if prev_exec is not None:
                    prec.append((prev_exec, base + 1))
                prev_exec = base + 1
        return out, prec


def instance_from_profiles(profiles, *, layers: int = 4, unit: float | None = None,
                           budget_factor: float = 1.5, max_units: int = 60) -> Instance:
    """Two (or more) networks' first ``layers`` weighted layers, times in integer units, budget
    = ``budget_factor`` x the largest layer.

    The default unit is the smallest measured time, coarsened so that running every task one
    after another takes at most ``max_units`` units: the MILP has a variable per task and unit,
    and an uncapped horizon left HiGHS without any solution within its time limit on a slower
    machine."""
    nets = []
    for p in profiles:
        ls = [x for x in p.layers if x.weight_bytes][:layers]
        if len(ls) < layers:
            raise InputError(f"network has fewer than {layers} weighted layers", where=p.name)
        nets.append(ls)
    times = [t for ls in nets for x in ls for t in (x.load_s, x.exec_s) if t > 0]
    unit = unit or max(min(times), sum(times) / max_units)
    q = lambda t: max(1, int(round(t / unit)))  # noqa: E731
    data = [[{"load": q(x.load_s), "exec": q(x.exec_s), "weight": x.weight_bytes,
              "act": x.out_bytes + x.scratch_bytes} for x in ls] for ls in nets]
    big = max(d["weight"] + d["act"] for ls in data for d in ls)
    return Instance(data, int(big * budget_factor))


@dataclass
class Schedule:
    starts: list[int]
    makespan: int
    seconds: float
    status: str


def _mem(inst: Instance, tasks: list[TaskRow]) -> list[int]:
    mem = []
    for _name, _p, kind, n, k in tasks:
        ly = inst.nets[n][k]
        mem.append(ly["act"] if kind == "exec" else 0)
    return mem


def _constraints(inst: Instance, tasks: list[TaskRow], prec: list[tuple[int, int]],
                 idx: dict[tuple[int, int], int], H: int, cm: int,
                 workers: int) -> tuple[list[dict[int, int]], list[float], list[float]]:
    """The MILP's rows over the start variables ``idx`` and Cmax (variable ``cm``), each with
    its bounds: every task starts once, precedence, the makespan, and at every unit up to ``H``
    the workers running (1c) and the memory held (1e)."""
    p = [t[1] for t in tasks]
    n = len(tasks)
    rows: list[dict[int, int]] = []  # sparse constraint rows: variable -> coefficient
    lo: list[float] = []
    hi: list[float] = []

    def add(r: dict[int, int], low: float, high: float) -> None:
        rows.append(r)
        lo.append(low)
        hi.append(high)

    # each task starts once
    for i in range(n):
        r = {idx[(i, tau)]: 1 for tau in range(H - p[i] + 1)}
        add(r, 1, 1)
    # precedence: start_j - start_i >= p_i
    for i, j in prec:
        r = {}
        for tau in range(H - p[j] + 1):
            r[idx[(j, tau)]] = r.get(idx[(j, tau)], 0) + tau
        for tau in range(H - p[i] + 1):
            r[idx[(i, tau)]] = r.get(idx[(i, tau)], 0) - tau
        add(r, p[i], np.inf)
    # makespan
    for i in range(n):
        r = {idx[(i, tau)]: tau for tau in range(H - p[i] + 1)}
        r[cm] = -1
        add(r, -np.inf, -p[i])
    mem = _mem(inst, tasks)
    loads = [(i, i + 2, inst.nets[tasks[i][3]][tasks[i][4]]["weight"])
             for i in range(n) if tasks[i][2] == "load"]
    for tau in range(H):
        rw: dict[int, int] = {}  # tasks running at tau
        rm: dict[int, int] = {}  # bytes held at tau
        for i in range(n):  # running at tau: started in (tau - p_i, tau]
            for s in range(max(0, tau - p[i] + 1), min(tau, H - p[i]) + 1):
                rw[idx[(i, s)]] = rw.get(idx[(i, s)], 0) + 1
                if mem[i]:
                    rm[idx[(i, s)]] = rm.get(idx[(i, s)], 0) + mem[i]
        for li, ui, w in loads:  # locked: load started by tau, unload not finished by tau
            for s in range(0, min(tau, H - p[li]) + 1):
                rm[idx[(li, s)]] = rm.get(idx[(li, s)], 0) + w
            for s in range(0, min(tau - p[ui], H - p[ui]) + 1):
                rm[idx[(ui, s)]] = rm.get(idx[(ui, s)], 0) - w
        add(rw, -np.inf, workers)
        add(rm, -np.inf, inst.budget)
    return rows, lo, hi


def solve_milp(inst: Instance, *, workers: int, time_limit: float = 60.0) -> Schedule:
    """Minimum makespan by a time-indexed MILP (HiGHS)."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import lil_matrix

    t0 = time.perf_counter()
    tasks, prec = inst.tasks()
    p = [t[1] for t in tasks]
    heuristic = masa_schedule(inst, workers=workers)
    # MASA's makespan bounds the optimum unless MASA had to overcommit (its progress rule).
    H = heuristic.makespan if heuristic.status == "heuristic" else sum(p)
    n = len(tasks)
    idx: dict[tuple[int, int], int] = {}  # (task, start unit) -> variable
    for i in range(n):
        for tau in range(H - p[i] + 1):
            idx[(i, tau)] = len(idx)
    nv = len(idx) + 1  # + Cmax
    cm = nv - 1
    rows, lo, hi = _constraints(inst, tasks, prec, idx, H, cm, workers)
    A = lil_matrix((len(rows), nv))
    for k, r in enumerate(rows):
        for j, v in r.items():
            if v:
                A[k, j] = v
    c = np.zeros(nv)
    c[cm] = 1
    integrality = np.ones(nv)
    integrality[cm] = 0
    res = milp(c, constraints=LinearConstraint(A.tocsr(), lo, hi), integrality=integrality,
               bounds=Bounds(0, np.r_[np.ones(nv - 1), H]),
               options={"time_limit": time_limit, "disp": False})
    if res.x is None:
        raise RuntimeError(f"MILP failed: {res.message}")
    starts = [0] * n
    for (i, tau), j in idx.items():
        if res.x[j] > 0.5:
            starts[i] = tau
    mk = max(starts[i] + p[i] for i in range(n))
    status = "optimal" if res.status == 0 else f"time limit ({res.message})"
    return Schedule(starts, mk, time.perf_counter() - t0, status)


def profiles_of(inst: Instance) -> dict[str, NetProfile]:
    """The instance as MASA profiles (one unit = one second): each layer a chain link whose
    execution holds ``act`` bytes while it runs and whose weights are held from the load's start
    until the execution ends, which is the memory model of :class:`workbench.memory.masa.Scheduler`."""
    return {f"n{n}": NetProfile(f"n{n}", [
        LayerCost(f"l{k}", "conv", [k - 1], ly["weight"], 0, ly["act"], float(ly["load"]),
                  float(ly["exec"])) for k, ly in enumerate(layers)])
        for n, layers in enumerate(inst.nets)}


def masa_schedule(inst: Instance, *, workers: int) -> Schedule:
    """MASA's schedule of the instance, by the same :class:`~workbench.memory.masa.Scheduler`
    (Alg. 1: execution before loading, each by increasing memory, admission by free memory, one
    task regardless when no worker is busy) that every other MASA figure runs. Paging is not
    modelled here: the MILP has no paging either."""
    with Stopwatch() as sw:
        nets = profiles_of(inst)
        run = simulate(nets, [Job(0, 0.0, list(nets))], policy="masa", budget=inst.budget,
                       workers=workers, swap_bps=math.inf)
    tasks, _ = inst.tasks()
    at = {(f"n{n}", k, kind): i for i, (_, _, kind, n, k) in enumerate(tasks)}
    starts = [0] * len(tasks)
    for t in run.tasks:
        # One job without parents: nothing is aborted, so every task started and ended.
        assert t.start is not None and t.end is not None, f"{t.kind} task never ran"
        starts[at[(t.job.nets[t.net], t.layers[0], t.kind)]] = round(t.start)
        if t.kind == "exec":  # the unload follows the execution at once
            starts[at[(t.job.nets[t.net], t.layers[0], "unload")]] = round(t.end)
    makespan = max(starts[i] + tasks[i][1] for i in range(len(tasks)))
    status = "heuristic" if run.overcommit_tasks == 0 else "heuristic (overcommitted)"
    return Schedule(starts, makespan, sw.ms / 1e3, status)


def check_schedule(inst: Instance, sched: Schedule, *, workers: int) -> None:
    """Assert a schedule respects precedence, the worker count and the memory budget."""
    tasks, prec = inst.tasks()
    p = [t[1] for t in tasks]
    s = sched.starts
    for i, j in prec:
        assert s[j] >= s[i] + p[i], f"{tasks[j][0]} starts before {tasks[i][0]} ends"
    mem = _mem(inst, tasks)
    for tau in range(sched.makespan):
        run = [i for i in range(len(tasks)) if s[i] <= tau < s[i] + p[i]]
        assert len(run) <= workers
        m = sum(mem[i] for i in run)
        for i, t in enumerate(tasks):
            if t[2] == "load" and s[i] <= tau < s[i + 2] + p[i + 2]:
                m += inst.nets[t[3]][t[4]]["weight"]
        if sched.status != "heuristic":
            assert m <= inst.budget, f"memory {m} over {inst.budget} at {tau}"
