"""MASA (Cox et al., PMC 2022): memory-aware multi-DNN scheduling of per-layer load and execute
tasks on a worker pool, with Bulk and DeepEye for comparison and the context-aware CA-WAIT and
CA-PREEMPT policies.

One :class:`Scheduler` holds the state (ready tasks, memory held, jobs) and the policies; two
drivers run it: :func:`simulate` (a discrete-event simulation from per-layer profiles: fast, for
what-if widgets) and :func:`run_real` (worker threads that really read each layer's weights from
its file and execute it with the NumPy kernels).

Memory model (MASA section 3.4): a load task holds the layer's weights from its start until the
layer's execution ends (locked memory); an execution task holds its output from its start until
every consumer has run, and its scratch while it runs. Bulk and DeepEye hold a network's weights
until the network finishes. Policies that overcommit the budget pay a *modelled* paging penalty:
a task that starts with ``O`` bytes in use beyond the budget is slowed by ``2*min(O, its working
set)/swap_bps`` (page out and back in). This host has no memory pressure (24 GiB), so paging is
modelled, and reports say so; everything else in a real run is measured.
"""

from __future__ import annotations

import heapq
import itertools
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..timing import Stopwatch

POLICIES = ("masa", "bulk", "deepeye", "ca-wait", "ca-preempt")
SWAP_BPS = 400e6  # modelled swap bandwidth (bytes/s): an eMMC/SD-class device relative to this CPU


@dataclass
class LayerCost:
    name: str
    kind: str  # conv | fc | other
    inputs: list[int]  # indices of input layers (-1: the network input)
    weight_bytes: int
    out_bytes: int
    scratch_bytes: int
    load_s: float
    exec_s: float
    rss_peak_bytes: int = 0  # MASA-style profiler reading (statm), for comparison


@dataclass
class NetProfile:
    """A network's per-layer costs, measured (see :func:`profile_network`) or given."""

    name: str
    layers: list[LayerCost]

    @property
    def weight_bytes(self) -> int:
        return sum(x.weight_bytes for x in self.layers)

    @property
    def bulk_seconds(self) -> float:
        return sum(x.load_s + x.exec_s for x in self.layers)

    @property
    def bulk_bytes(self) -> int:
        """Peak held by a Bulk run alone: all weights plus the largest layer's working set."""
        return self.weight_bytes + max(x.out_bytes * 2 + x.scratch_bytes for x in self.layers)

    @property
    def layer_peak_bytes(self) -> int:
        """The largest single layer (weights + output + scratch): MASA's unit of progress."""
        return max(x.weight_bytes + x.out_bytes + x.scratch_bytes for x in self.layers)


@dataclass
class Job:
    """An image and the networks to run on it. ``parents[i]`` (CA policies) is the network whose
    positive outcome is needed for network ``i`` to matter; ``positive[i]`` is that outcome."""

    id: int
    arrival: float
    nets: list[str]
    parents: dict[int, int] = field(default_factory=dict)
    positive: dict[int, bool] = field(default_factory=dict)
    done_at: float | None = None
    outputs: dict = field(default_factory=dict)  # real runs: network index -> output


@dataclass(eq=False)
class Task:
    job: Job
    net: int  # index into job.nets
    kind: str  # load | exec | load_all | load_conv | load_fc
    layers: list[int]
    req: int  # bytes it allocates when it starts
    duration: float
    seq: int
    deps: int = 0
    succ: list["Task"] = field(default_factory=list)
    start: float | None = None
    end: float | None = None
    worker: int | None = None
    penalty: float = 0.0
    overcommit: int = 0
    aborted: bool = False


@dataclass
class RunResult:
    """Per-job response times and the task trace of one run."""

    policy: str
    budget: int
    workers: int
    jobs: list[Job]
    tasks: list[Task]
    peak_bytes: int
    overcommit_tasks: int
    aborted_tasks: int
    wall_s: float = 0.0

    @property
    def response(self) -> np.ndarray:
        return np.array([j.done_at - j.arrival for j in self.jobs if j.done_at is not None])

    @property
    def mean_response(self) -> float:
        return float(self.response.mean()) if len(self.response) else float("nan")


class Scheduler:
    """The shared state and policies. Drivers call :meth:`submit`, :meth:`dispatch` and
    :meth:`complete`; memory is accounted in bytes against ``budget``."""

    def __init__(self, nets: dict[str, NetProfile], *, policy: str = "masa", budget: int,
                 workers: int = 2, swap_bps: float = SWAP_BPS):
        if policy not in POLICIES:
            raise InputError(f"unknown policy; known: {', '.join(POLICIES)}", where="policy",
                             value=policy)
        if workers < 1:
            raise InputError("at least one worker is needed", where="workers", value=workers)
        if budget <= 0:
            raise InputError("the memory budget must be positive", where="budget", value=budget)
        self.nets, self.policy, self.budget = nets, policy, int(budget)
        self.workers, self.swap_bps = workers, swap_bps
        self.used = 0
        self.peak = 0
        self.busy = 0
        self.ready: list[Task] = []
        self.tasks: list[Task] = []
        self.seq = itertools.count()
        self.hold: dict[tuple, int] = {}  # (job id, net, what) -> bytes held
        self.remaining: dict[tuple, int] = {}  # (job id, net) -> unfinished exec tasks
        self.consumers: dict[tuple, int] = {}  # (job id, net, layer) -> consumers left
        self.open_nets: dict[int, set] = {}  # job id -> nets not finished
        self.net_tasks: dict[tuple, list[Task]] = {}
        self.waiting_children: dict[tuple, list[int]] = {}
        self.aborted_nets: set[tuple] = set()
        self.backlog: list[Job] = []  # arrived, not yet pulled by the scheduler

    # -- building tasks ---------------------------------------------------------------------
    def submit(self, job: Job, now: float) -> None:
        """A job arrives: it waits in the arrival queue until a worker has nothing valid to do
        (MASA's scheduler pulls jobs from the arrival queue; pulling every job at once would let
        small loads of later jobs lock memory the running ones need)."""
        job.done_at = None
        if any(n not in self.nets for n in job.nets):
            bad = next(n for n in job.nets if n not in self.nets)
            raise InputError("job names an unprofiled network", where=f"job {job.id}", value=bad)
        self.backlog.append(job)

    def _activate(self, job: Job) -> None:
        self.open_nets[job.id] = set(range(len(job.nets)))
        for i in range(len(job.nets)):
            parent = job.parents.get(i)
            if self.policy == "ca-wait" and parent is not None:
                self.waiting_children.setdefault((job.id, parent), []).append(i)
                continue
            self._add_net(job, i)

    def _add_net(self, job: Job, i: int) -> None:
        prof = self.nets[job.nets[i]]
        key = (job.id, i)
        L = prof.layers
        mk = lambda kind, layers, req, dur: Task(job, i, kind, layers, req, dur,  # noqa: E731
                                                 next(self.seq))
        execs = [mk("exec", [k], L[k].out_bytes + L[k].scratch_bytes, L[k].exec_s)
                 for k in range(len(L))]
        tasks = list(execs)
        for k, lc in enumerate(L):
            for src in set(lc.inputs):
                if src >= 0:
                    self._edge(execs[src], execs[k])
            self.consumers[(job.id, i, k)] = sum(1 for m in L if k in m.inputs)
        if self.policy in ("masa", "ca-wait", "ca-preempt"):
            for k, lc in enumerate(L):
                if lc.weight_bytes:
                    ld = mk("load", [k], lc.weight_bytes, lc.load_s)
                    self._edge(ld, execs[k])
                    tasks.append(ld)
        elif self.policy == "bulk":
            ks = [k for k, lc in enumerate(L) if lc.weight_bytes]
            ld = mk("load_all", ks, sum(L[k].weight_bytes for k in ks),
                    sum(L[k].load_s for k in ks))
            for e in execs:
                self._edge(ld, e)
            # Bulk runs a network's layers strictly one after another.
            for a, b in zip(execs, execs[1:]):
                self._edge(a, b)
            tasks.append(ld)
        else:  # deepeye: conv weights in one load, fc weights in another that overlaps convs
            for kind, name in (("conv", "load_conv"), ("fc", "load_fc")):
                # FC weights in one load; every other weighted layer goes with the convs.
                ks = [k for k, lc in enumerate(L) if lc.weight_bytes
                      and ("fc" if lc.kind == "fc" else "conv") == kind]
                if not ks:
                    continue
                ld = mk(name, ks, sum(L[k].weight_bytes for k in ks),
                        sum(L[k].load_s for k in ks))
                for k in ks:
                    self._edge(ld, execs[k])
                tasks.append(ld)
            for a, b in zip(execs, execs[1:]):
                self._edge(a, b)
        self.remaining[key] = len(execs)
        self.net_tasks[key] = tasks
        self.tasks.extend(tasks)
        for t in tasks:
            if t.deps == 0:
                self.ready.append(t)

    @staticmethod
    def _edge(a: Task, b: Task) -> None:
        a.succ.append(b)
        b.deps += 1

    # -- policy -----------------------------------------------------------------------------
    @property
    def free(self) -> int:
        return self.budget - self.used

    def dispatch(self, now: float, idle: int) -> list[Task]:
        """Tasks to start now on up to ``idle`` workers (memory charged, penalties set)."""
        started = []
        for _ in range(idle):
            t = self._pick()
            # Pull the next job only when nothing is ready at all: when ready tasks wait for
            # memory, more jobs would only lock more of it.
            while t is None and not self.ready and self.backlog:
                self._activate(self.backlog.pop(0))
                t = self._pick()
            if t is None:
                break
            self.ready.remove(t)
            self._start(t, now)
            started.append(t)
        return started

    def _pick(self) -> Task | None:
        if not self.ready:
            return None
        if self.policy in ("bulk", "deepeye"):  # FIFO, memory-unaware
            return min(self.ready, key=lambda t: (t.job.arrival, t.job.id, t.net, t.seq))
        # MASA Alg. 1: execution before loading, each by increasing memory; a task is valid when
        # it fits the free memory or no worker is busy (progress guarantee).
        for kind in ("exec", "load"):
            group = sorted((t for t in self.ready if t.kind == kind),
                           key=lambda t: (t.req, t.job.arrival, t.seq))
            for t in group:
                if self.busy == 0 or t.req <= self.free:
                    return t
        return None

    def _working_set(self, t: Task) -> int:
        if t.kind == "exec":
            k = t.layers[0]
            return t.req + self.nets[t.job.nets[t.net]].layers[k].weight_bytes
        return t.req

    def _start(self, t: Task, now: float) -> None:
        self.busy += 1
        key = (t.job.id, t.net)
        k = t.layers[0]
        if t.kind == "exec":
            lc = self.nets[t.job.nets[t.net]].layers[k]
            self._hold((*key, "out", k), lc.out_bytes)
            self._hold((*key, "scratch", k), lc.scratch_bytes)
        else:
            for layer in t.layers:
                self._hold((*key, "w", layer), self.nets[t.job.nets[t.net]].layers[layer]
                           .weight_bytes)
        over = max(0, self.used - self.budget)
        t.overcommit = over
        t.penalty = 2 * min(over, self._working_set(t)) / self.swap_bps if over else 0.0
        t.start = now

    def _hold(self, key, nbytes: int) -> None:
        if nbytes:
            self.hold[key] = self.hold.get(key, 0) + nbytes
            self.used += nbytes
            self.peak = max(self.peak, self.used)

    def _release(self, key) -> None:
        self.used -= self.hold.pop(key, 0)

    def _release_net(self, key) -> None:
        for h in [h for h in self.hold if h[:2] == key]:
            self._release(h)

    def complete(self, t: Task, now: float) -> None:
        """A task finished (or, for an aborted network, was discarded) at ``now``."""
        self.busy -= 1
        t.end = now
        key = (t.job.id, t.net)
        if key in self.aborted_nets:
            t.aborted = True
            self._release_net(key)
            return
        if t.kind == "exec":
            k = t.layers[0]
            prof = self.nets[t.job.nets[t.net]]
            self._release((*key, "scratch", k))
            if self.policy in ("masa", "ca-wait", "ca-preempt"):
                self._release((*key, "w", k))  # MASA unloads the layer once it has run
            for src in set(prof.layers[k].inputs):
                if src >= 0:
                    ck = (*key, src)
                    self.consumers[ck] -= 1
                    if self.consumers[ck] == 0:
                        self._release((*key, "out", src))
            self.remaining[key] -= 1
            if self.remaining[key] == 0:
                self._finish_net(t.job, t.net, now)
        for s in t.succ:
            s.deps -= 1
            if s.deps == 0:
                self.ready.append(s)

    def _finish_net(self, job: Job, i: int, now: float) -> None:
        self._release_net((job.id, i))
        self.open_nets[job.id].discard(i)
        children = [c for c, p in job.parents.items() if p == i]
        if self.policy in ("ca-wait", "ca-preempt") and children:
            if job.positive.get(i, True):
                for c in self.waiting_children.pop((job.id, i), []):
                    self._add_net(job, c)
            else:
                for c in children:
                    self._abort(job, c)
        if not self.open_nets[job.id]:
            job.done_at = now

    def _abort(self, job: Job, i: int) -> None:
        """Drop network ``i`` of ``job`` and everything downstream of it: pending tasks go,
        memory held is released, running tasks are discarded when they return."""
        key = (job.id, i)
        self.waiting_children.pop(key, None)
        self.aborted_nets.add(key)
        self.open_nets[job.id].discard(i)
        for t in self.net_tasks.get(key, []):
            if t.start is None:
                t.aborted = True
                if t in self.ready:
                    self.ready.remove(t)
        self._release_net(key)
        for c, p in job.parents.items():
            if p == i:
                self._abort(job, c)

    def result(self, jobs: list[Job], wall: float = 0.0) -> RunResult:
        return RunResult(self.policy, self.budget, self.workers, jobs, self.tasks, self.peak,
                         sum(1 for t in self.tasks if t.overcommit), sum(
                             1 for t in self.tasks if t.aborted), wall)


# --- drivers ---------------------------------------------------------------------------------

def simulate(nets: dict[str, NetProfile], jobs: list[Job], *, policy: str = "masa",
             budget: int, workers: int = 2, swap_bps: float = SWAP_BPS,
             overhead_s: float = 0.0) -> RunResult:
    """Discrete-event run with task durations from the profiles (+ modelled paging).

    ``overhead_s`` is added to every task: the real runner's dispatch cost per task (see
    :func:`calibrate_overhead`)."""
    jobs = [_fresh(j) for j in jobs]
    s = Scheduler(nets, policy=policy, budget=budget, workers=workers, swap_bps=swap_bps)
    events: list = []
    tie = itertools.count()
    for j in jobs:
        heapq.heappush(events, (j.arrival, next(tie), "arrive", j))
    idle = workers
    while events:
        now, _, kind, obj = heapq.heappop(events)
        if kind == "arrive":
            s.submit(obj, now)
        else:
            s.complete(obj, now)
            idle += 1
        if events and events[0][0] == now:
            continue  # settle everything at this instant before dispatching
        for t in s.dispatch(now, idle):
            idle -= 1
            heapq.heappush(events, (now + t.duration + t.penalty + overhead_s, next(tie), "done",
                                    t))
    return s.result(jobs)


def _fresh(j: Job) -> Job:
    return Job(j.id, j.arrival, list(j.nets), dict(j.parents), dict(j.positive))


def run_real(graphs: dict, roots: dict[str, Path], jobs: list[Job], *, policy: str = "masa",
             budget: int, workers: int = 2, nets: dict[str, NetProfile],
             swap_bps: float = SWAP_BPS, x: np.ndarray | None = None) -> RunResult:
    """Run for real: ``workers`` threads read layer weights from ``roots[net]`` and execute the
    layers of ``graphs[net]`` (LayerGraph); the paging penalty is slept. Arrival times are
    seconds from the start. Each job's network outputs are kept in ``job.outputs``."""
    from .graph import read_weights

    jobs = [_fresh(j) for j in jobs]
    s = Scheduler(nets, policy=policy, budget=budget, workers=workers, swap_bps=swap_bps)
    state: dict[tuple, dict] = {}  # (job, net) -> {"w": {layer: weights}, "a": {layer: out}}
    lock = threading.Lock()
    done_q: queue.Queue = queue.Queue()
    work_q: queue.Queue = queue.Queue()
    t0 = time.perf_counter()

    def execute(t: Task) -> None:
        g = graphs[t.job.nets[t.net]]
        key = (t.job.id, t.net)
        with lock:
            st = state.setdefault(key, {"w": {}, "a": {}})
        if t.kind != "exec":
            for k in t.layers:
                ws = read_weights(roots[t.job.nets[t.net]], g.layers[k])
                with lock:
                    st["w"][k] = ws
        else:
            k = t.layers[0]
            ly = g.layers[k]
            xin = [st["a"][g.index[n]] if n != "input" else xs for n in ly.inputs]
            out = np.empty((1,) + ly.shape, np.float32)
            ly.compute(xin, out, w=st["w"].get(k) if ly.weights else None)
            with lock:
                st["a"][k] = out
                if s.policy in ("masa", "ca-wait", "ca-preempt"):
                    st["w"].pop(k, None)
        if t.penalty:
            time.sleep(t.penalty)

    def worker(wid: int) -> None:
        while True:
            t = work_q.get()
            if t is None:
                return
            a = time.perf_counter()
            try:
                execute(t)
                err = None
            except BaseException as e:  # reported on the scheduler thread
                err = e
            t.duration = time.perf_counter() - a - t.penalty
            t.worker = wid
            done_q.put((t, err))

    xs = x if x is not None else np.zeros((1,) + tuple(next(iter(graphs.values())).input_shape),
                                          np.float32)
    threads = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(workers)]
    for th in threads:
        th.start()
    pending = sorted(jobs, key=lambda j: j.arrival)
    idle, running = workers, 0
    try:
        while True:
            now = time.perf_counter() - t0
            while pending and pending[0].arrival <= now:
                s.submit(pending.pop(0), now)
            for t in s.dispatch(now, idle):
                idle -= 1
                running += 1
                work_q.put(t)
            if not pending and running == 0:
                break
            wait = max(0.0, pending[0].arrival - now) if pending else None
            try:
                t, err = done_q.get(timeout=wait)
            except queue.Empty:
                continue  # an arrival is due
            if err is not None:
                raise err
            running -= 1
            idle += 1
            key = (t.job.id, t.net)
            s.complete(t, time.perf_counter() - t0)
            with lock:
                if t.aborted or key in s.aborted_nets:
                    state.pop(key, None)
                elif t.kind == "exec":
                    st = state[key]
                    last = len(graphs[t.job.nets[t.net]].layers) - 1
                    if s.remaining[key] == 0:
                        t.job.outputs[t.net] = st["a"][last]
                        state.pop(key, None)
                    else:  # free activations no consumer needs any more
                        for src in list(st["a"]):
                            if s.consumers.get((*key, src), 1) == 0:
                                st["a"].pop(src, None)
    finally:
        for _ in threads:
            work_q.put(None)
        for th in threads:
            th.join(timeout=5)
    return s.result(jobs, time.perf_counter() - t0)


def calibrate_overhead(graphs: dict, roots: dict[str, Path], nets: dict[str, NetProfile], net: str,
                       *, repeats: int = 3) -> float:
    """Seconds the real runner spends per task beyond the task's own work: one job of ``net`` on
    one worker (tasks strictly serial), real makespan minus the simulated one, per task."""
    job = [Job(0, 0.0, [net])]
    big = 10 ** 12
    over = []
    for _ in range(repeats):
        real = run_real(graphs, roots, job, policy="masa", budget=big, workers=1, nets=nets)
        sim = simulate(nets, job, policy="masa", budget=big, workers=1)
        n = len([t for t in sim.tasks if t.start is not None])
        over.append((real.jobs[0].done_at - sim.jobs[0].done_at) / n)
    return max(0.0, float(np.median(over)))


# --- workloads ---------------------------------------------------------------------------------

def periodic_jobs(nets: list[str], *, n: int, interval: float, start: float = 0.0) -> list[Job]:
    """The same networks on an image every ``interval`` seconds (MASA section 5.2)."""
    return [Job(i, start + i * interval, list(nets)) for i in range(n)]


def stochastic_jobs(pool: list[str], profiles: dict[str, NetProfile], *, scenario: int,
                    intensity: float, n: int, seed: int = 0, sd_frac: float = 0.2) -> list[Job]:
    """MASA section 5.3. Scenario I: one network drawn from ``pool`` per image, normal
    inter-arrivals; scenario II: periodic images, a uniform number of distinct networks each.
    The mean inter-arrival is the mean service time (Bulk, alone) divided by ``intensity``."""
    if intensity <= 0:
        raise InputError("traffic intensity must be positive", where="intensity", value=intensity)
    rng = np.random.default_rng(seed)
    mean_net = float(np.mean([profiles[p].bulk_seconds for p in pool]))
    jobs, t = [], 0.0
    for i in range(n):
        if scenario == 1:
            nets = [pool[rng.integers(len(pool))]]
            gap = max(0.0, rng.normal(mean_net / intensity, sd_frac * mean_net / intensity))
        elif scenario == 2:
            k = int(rng.integers(1, len(pool) + 1))
            nets = [pool[j] for j in sorted(rng.choice(len(pool), size=k, replace=False))]
            gap = mean_net * (len(pool) + 1) / 2 / intensity
        else:
            raise InputError("scenario must be 1 or 2", where="scenario", value=scenario)
        jobs.append(Job(i, t, nets))
        t += gap
    return jobs


def context_jobs(tree: dict[str, str | None], *, n: int, interval: float, p: float,
                 seed: int = 0, always_positive: tuple[str, ...] = ()) -> list[Job]:
    """Jobs over a dependency tree ``{net: parent or None}`` (MASA Fig. 9): each parent's outcome
    is positive with probability ``p`` (``always_positive`` nets are always positive)."""
    rng = np.random.default_rng(seed)
    names = list(tree)
    idx = {k: i for i, k in enumerate(names)}
    parents = {idx[k]: idx[v] for k, v in tree.items() if v is not None}
    jobs = []
    for i in range(n):
        pos = {idx[k]: (k in always_positive) or bool(rng.random() < p) for k in names}
        jobs.append(Job(i, i * interval, list(names), dict(parents), pos))
    return jobs


# --- profiling ---------------------------------------------------------------------------------

def profile_network(graph, root: Path, *, repeats: int = 5, sample_rss: bool = True) -> NetProfile:
    """Per-layer load and execute times (medians) and memory: bytes from the layer graph and, as
    MASA's profiler does, the peak resident-set growth sampled from ``/proc/self/statm``."""
    from .graph import read_weights, store
    from .profiler import RssSampler

    store(graph, root)
    x = np.random.default_rng(0).normal(size=(1,) + tuple(graph.input_shape)).astype(np.float32)
    acts = {"input": x}
    out = []
    for _k, ly in enumerate(graph.layers):
        loads, execs, peak = [], [], 0
        for _ in range(repeats):
            with RssSampler(enabled=sample_rss) as rs, Stopwatch() as sw:
                w = read_weights(root, ly) if ly.weights else None
                loaded_ms = sw.lap()
                o = np.empty((1,) + ly.shape, np.float32)
                ly.compute([acts[n] for n in ly.inputs], o, w=w)
            peak = max(peak, rs.peak_delta)
            loads.append(loaded_ms / 1e3)
            execs.append((sw.ms - loaded_ms) / 1e3)
            del w
        acts[ly.name] = o
        out.append(LayerCost(ly.name, ly.kind, [graph.index[n] if n != "input" else -1
                                                for n in ly.inputs], ly.weight_bytes,
                             ly.out_bytes(), ly.scratch_bytes(),
                             float(np.median(loads)) if ly.weights else 0.0,
                             float(np.median(execs)), peak))
    return NetProfile(graph.name, out)
