"""Two drivers of the one :class:`~.scheduler.Scheduler`: :func:`simulate` (discrete events from
per-layer profiles, fast, for what-if widgets) and :func:`run_real` (worker threads that read each
layer's weights from its file and execute it with the NumPy kernels)."""

from __future__ import annotations

import contextlib
import gc
import heapq
import itertools
import queue
import threading
import time
from pathlib import Path

import numpy as np

from .model import ANON_SHARE, CACHE_FACTOR, SWAP_BPS, Job, NetProfile, Policy, RunResult, Task
from .scheduler import Scheduler


def simulate(nets: dict[str, NetProfile], jobs: list[Job], *, policy: str | Policy = Policy.MASA,
             budget: int, workers: int = 2, swap_bps: float = SWAP_BPS,
             overhead_s: float = 0.0, admission: str = "on-arrival",
             cache_factor: float = CACHE_FACTOR, anon_share: float = ANON_SHARE,
             slack_bytes: int = 0) -> RunResult:
    """Discrete-event run with task durations from the profiles (+ modelled paging, see
    :mod:`.paging`: ``swap_bps``, ``cache_factor``, ``anon_share``, and ``slack_bytes`` of
    memory beside the budget before the kernel reclaims).

    ``overhead_s`` is added to every task: the real runner's dispatch cost per task (see
    :func:`calibrate_overhead`)."""
    with _gc_paused():
        return _simulate(nets, jobs, policy, budget, workers, swap_bps, overhead_s, admission,
                         cache_factor, anon_share, slack_bytes)


@contextlib.contextmanager
def _gc_paused():
    """A what-if allocates thousands of tasks; a full garbage collection in the middle of one
    costs 4-5x the simulation itself (measured: 150 ms against 30 ms). Nothing it builds needs
    the cycle collector while it runs; collection resumes afterwards."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _simulate(nets, jobs, policy, budget, workers, swap_bps, overhead_s, admission,
              cache_factor, anon_share, slack_bytes) -> RunResult:
    jobs = [_fresh(j) for j in jobs]
    s = Scheduler(nets, policy=policy, budget=budget, workers=workers, swap_bps=swap_bps,
                  admission=admission, cache_factor=cache_factor, anon_share=anon_share,
                  slack_bytes=slack_bytes)
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


def run_real(graphs: dict, roots: dict[str, Path], jobs: list[Job], *, policy: str | Policy = Policy.MASA,
             budget: int, workers: int = 2, nets: dict[str, NetProfile],
             swap_bps: float = SWAP_BPS, x: np.ndarray | dict | None = None,
             admission: str = "on-arrival") -> RunResult:
    """Run for real: ``workers`` threads read layer weights from ``roots[net]`` and execute the
    layers of ``graphs[net]`` (LayerGraph); the modelled paging penalty is slept (pass
    ``swap_bps=math.inf`` when the run's paging is real, under a memory limit). Arrival times
    are seconds from the start. ``x`` is the input of every network, or one per network name
    (default: zeros of each network's input shape), to which keys ``(job id, network)`` add a
    job's own input. Each job's network outputs are kept in ``job.outputs``."""
    jobs = [_fresh(j) for j in jobs]
    s = Scheduler(nets, policy=policy, budget=budget, workers=workers, swap_bps=swap_bps,
                  admission=admission)
    run = _RealRun(graphs, roots, s, x)
    threads = [threading.Thread(target=run.worker, args=(w,), daemon=True) for w in range(workers)]
    for th in threads:
        th.start()
    pending = sorted(jobs, key=lambda j: j.arrival)
    idle, running = workers, 0
    try:
        while True:
            now = time.perf_counter() - run.t0
            while pending and pending[0].arrival <= now:
                s.submit(pending.pop(0), now)
            for t in s.dispatch(now, idle):
                idle -= 1
                running += 1
                run.work_q.put(t)
            if not pending and running == 0:
                break
            wait = max(0.0, pending[0].arrival - now) if pending else None
            try:
                t, err = run.done_q.get(timeout=wait)
            except queue.Empty:
                continue  # an arrival is due
            if err is not None:
                raise err
            running -= 1
            idle += 1
            s.complete(t, time.perf_counter() - run.t0)
            run.settle(t)
    finally:
        for _ in threads:
            run.work_q.put(None)
        for th in threads:
            th.join(timeout=5)
    return s.result(jobs, time.perf_counter() - run.t0)


class _RealRun:
    """What the worker threads of :func:`run_real` share: the scheduler, the task queues, each
    network's input, and per (job, network) the weights and activations held in memory."""

    def __init__(self, graphs: dict, roots: dict[str, Path], s: Scheduler,
                 x: np.ndarray | dict | None) -> None:
        from ..graph import read_weights

        self.read_weights = read_weights
        self.graphs, self.roots, self.s = graphs, roots, s
        # (job, net) -> {"w": {layer: weights}, "a": {layer: out}}
        self.state: dict[tuple, dict] = {}
        self.lock = threading.Lock()
        self.done_q: queue.Queue = queue.Queue()
        self.work_q: queue.Queue = queue.Queue()
        self.t0 = time.perf_counter()
        self.xs = {k: (x[k] if isinstance(x, dict) else x) if x is not None
                   else np.zeros((1,) + tuple(g.input_shape), np.float32) for k, g in graphs.items()}
        if isinstance(x, dict):  # a job's own image for a network: key (job id, network)
            self.xs.update({k: v for k, v in x.items() if isinstance(k, tuple)})

    def execute(self, t: Task) -> None:
        """Load a task's weights, or run its layer on the activations it reads."""
        g = self.graphs[t.job.nets[t.net]]
        key = (t.job.id, t.net)
        with self.lock:
            st = self.state.setdefault(key, {"w": {}, "a": {}})
        if t.kind != "exec":
            for k in t.layers:
                ws = self.read_weights(self.roots[t.job.nets[t.net]], g.layers[k])
                with self.lock:
                    st["w"][k] = ws
        else:
            k = t.layers[0]
            ly = g.layers[k]
            name = t.job.nets[t.net]
            xs = self.xs
            xin = [st["a"][g.index[n]] if n != "input" else xs.get((t.job.id, name), xs[name])
                   for n in ly.inputs]
            out = np.empty((xin[0].shape[0],) + ly.shape, np.float32)  # the batch (Fig. 12)
            ly.compute(xin, out, w=st["w"].get(k) if ly.weights else None)
            with self.lock:
                st["a"][k] = out
                if self.s.policy.layerwise:
                    st["w"].pop(k, None)
        if t.penalty:
            time.sleep(t.penalty)

    def worker(self, wid: int) -> None:
        while True:
            t = self.work_q.get()
            if t is None:
                return
            a = time.perf_counter()
            try:
                self.execute(t)
                err = None
            except BaseException as e:  # reported on the scheduler thread
                err = e
            t.duration = time.perf_counter() - a - t.penalty
            t.worker = wid
            self.done_q.put((t, err))

    def settle(self, t: Task) -> None:
        """After the scheduler took a finished task: keep a finished network's output and drop
        its state, or free the activations no consumer needs any more. (A function of its own:
        a name in the scheduling loop held Bulk's and DeepEye's weights through the next
        network's loads.)"""
        s = self.s
        key = (t.job.id, t.net)
        with self.lock:
            if t.aborted or key in s.aborted_nets:
                self.state.pop(key, None)
            elif t.kind == "exec":
                st = self.state[key]
                last = len(self.graphs[t.job.nets[t.net]].layers) - 1
                if s.remaining[key] == 0:
                    t.job.outputs[t.net] = st["a"][last]
                    self.state.pop(key, None)
                else:  # free activations no consumer needs any more
                    for src in list(st["a"]):
                        if s.consumers.get((*key, src), 1) == 0:
                            st["a"].pop(src, None)


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
        over.append((real.makespan - sim.makespan) / n)
    return max(0.0, float(np.median(over)))
