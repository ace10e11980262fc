"""MASA's scheduler (its Alg. 1) and the Bulk, DeepEye, CA-WAIT and CA-PREEMPT policies: the
state (ready tasks, memory held, jobs) that both drivers (simulated and real) advance."""

from __future__ import annotations

import bisect
import itertools
import math

from ...errors import InputError
from .model import ADMISSIONS, ANON_SHARE, CACHE_FACTOR, POLICIES, SWAP_BPS, Job, NetProfile, Policy, RunResult, Task
from .paging import Residency


class Scheduler:
    """The shared state and policies. Drivers call :meth:`submit`, :meth:`dispatch` and
    :meth:`complete`; memory is accounted in bytes against ``budget``.

    ``admission`` says when an arrived job's tasks join the ready group: ``"on-arrival"`` (MASA
    Alg. 1 read literally: the scheduler pulls every job from the arrival queue as it comes) or
    ``"when-idle"`` (this workbench's extension: the next job is pulled only when no task at
    all is ready, so small loads of later jobs cannot lock memory the running ones need)."""

    def __init__(self, nets: dict[str, NetProfile], *, policy: str | Policy = Policy.MASA,
                 budget: int, workers: int = 2, swap_bps: float = SWAP_BPS,
                 admission: str = "on-arrival", cache_factor: float = CACHE_FACTOR,
                 anon_share: float = ANON_SHARE, slack_bytes: int = 0):
        if policy not in POLICIES:
            raise InputError(f"unknown policy; known: {', '.join(POLICIES)}", where="policy",
                             value=policy)
        if admission not in ADMISSIONS:
            raise InputError(f"unknown admission rule; known: {', '.join(ADMISSIONS)}",
                             where="admission", value=admission)
        if workers < 1:
            raise InputError("at least one worker is needed", where="workers", value=workers)
        if budget <= 0:
            raise InputError("the memory budget must be positive", where="budget", value=budget)
        self.nets, self.policy, self.budget = nets, Policy(policy), int(budget)
        self.workers, self.swap_bps, self.admission = workers, swap_bps, admission
        # Paging is modelled (see .paging): what is resident, least recently used first, in
        # the budget plus the slack a real limit leaves beside it; a load's file goes through
        # the page cache (cache_factor x its weights). Off when swap_bps is infinite (a real
        # run under a real limit, where the kernel pages).
        self.cache_factor = cache_factor
        self.mem = (Residency(self.budget + int(slack_bytes), anon_share=anon_share)
                    if math.isfinite(swap_bps) else None)
        self.used = 0
        self.peak = 0
        self.busy = 0
        self.ready = _Ready()
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
        self.fifo: list[tuple] = []  # (job id, net) not finished, in order of activation
        self.depth: dict[tuple, int] = {}  # (job id, net) -> upstream networks above it

    # -- building tasks ---------------------------------------------------------------------
    def submit(self, job: Job, now: float) -> None:
        """A job arrives: its tasks become ready at once (``on-arrival``) or it waits in the
        arrival queue until no task is ready (``when-idle``)."""
        job.done_at = None
        if any(n not in self.nets for n in job.nets):
            bad = next(n for n in job.nets if n not in self.nets)
            raise InputError("job names an unprofiled network", where=f"job {job.id}", value=bad)
        if self.admission == "on-arrival":
            self._activate(job)
        else:
            self.backlog.append(job)

    def _activate(self, job: Job) -> None:
        self.open_nets[job.id] = set(range(len(job.nets)))
        for i in range(len(job.nets)):
            d, p = 0, job.parents.get(i)
            while p is not None:
                d, p = d + 1, job.parents.get(p)
            self.depth[(job.id, i)] = d
            self.fifo.append((job.id, i))
        for i in range(len(job.nets)):
            parent = job.parents.get(i)
            if self.policy is Policy.CA_WAIT and parent is not None:
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
        if self.policy.layerwise:
            for k, lc in enumerate(L):
                if lc.weight_bytes:
                    ld = mk("load", [k], lc.weight_bytes, lc.load_s)
                    self._edge(ld, execs[k])
                    tasks.append(ld)
        elif self.policy is Policy.BULK:
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
        # MASA's order within a kind (see _pick); CA-PREEMPT puts upstream networks first.
        depth = self.depth[key] if self.policy is Policy.CA_PREEMPT else 0
        for t in tasks:
            t.key = (depth, t.req, job.arrival, t.seq)
            if t.deps == 0:
                self.ready.add(t)

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
            # when-idle: pull the next job only when nothing is ready at all (when ready tasks
            # wait for memory, more jobs would only lock more of it).
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
        if self.policy is Policy.BULK:
            # "Bulk executes one DNN at a time by first loading all layers at once and then
            # executing them" (MASA 5.1): only the oldest unfinished network's tasks may start.
            head = self.fifo[:1]
            return min((t for t in self.ready if (t.job.id, t.net) in head),
                       key=lambda t: t.seq, default=None)
        if self.policy is Policy.DEEPEYE:
            # DeepEye runs one network's layers at a time and overlaps loading with them: the
            # oldest network executes; its loads and the next network's loads may run beside
            # it (memory-unaware, first come first served).
            head = self.fifo[:2]
            ok = [t for t in self.ready if (t.job.id, t.net) in head
                  and (t.kind != "exec" or (t.job.id, t.net) == head[0])]
            return min(ok, key=lambda t: (self.fifo.index((t.job.id, t.net)), t.seq),
                       default=None)
        # MASA Alg. 1: execution before loading, each by increasing memory; a task is valid when
        # it fits the free memory or no worker is busy (progress guarantee). CA-PREEMPT starts
        # upstream networks first (MASA 4.5) and lets downstream ones run beside them when
        # memory allows.
        free, idle = self.free, self.busy == 0
        for kind in ("exec", "load"):
            t = self.ready.first(kind, free=None if idle else free)
            if t is not None:
                return t
        return None

    def _start(self, t: Task, now: float) -> None:
        self.busy += 1
        key = (t.job.id, t.net)
        name = t.job.nets[t.net]
        layers = self.nets[name].layers
        ops: list[tuple[str, tuple, int]] = []
        if t.kind == "exec":
            k = t.layers[0]
            lc = layers[k]
            if (*key, "w", k) in self.hold:
                ops.append(("touch", (*key, "w", k), 0))
            ops += [("touch", (*key, "out", src), 0) for src in set(lc.inputs) if src >= 0]
            for what, n in (("out", lc.out_bytes), ("scratch", lc.scratch_bytes)):
                self._hold((*key, what, k), n)
                ops.append(("new", (*key, what, k), n))
        else:
            for layer in t.layers:
                n = layers[layer].weight_bytes
                self._hold((*key, "w", layer), n)
                ops += [("file", (name, layer), int(self.cache_factor * n)),
                        ("new", (*key, "w", layer), n)]
        t.overcommit = max(0, self.used - self.budget)
        if self.mem is not None:
            paged_in, paged_out = self.mem.use(ops)
            t.penalty = (paged_in + paged_out) / self.swap_bps
        else:
            t.penalty = 0.0
        t.start = now

    def _hold(self, key, nbytes: int) -> None:
        if nbytes:
            self.hold[key] = self.hold.get(key, 0) + nbytes
            self.used += nbytes
            self.peak = max(self.peak, self.used)

    def _release(self, key) -> None:
        self.used -= self.hold.pop(key, 0)
        if self.mem is not None:
            self.mem.free(key)

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
            if self.policy.layerwise:
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
                self.ready.add(s)

    def _finish_net(self, job: Job, i: int, now: float) -> None:
        self._release_net((job.id, i))
        self._unqueue((job.id, i))
        self.open_nets[job.id].discard(i)
        children = [c for c, p in job.parents.items() if p == i]
        if self.policy.context_aware and children:
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
        self._unqueue(key)
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

    def _unqueue(self, key: tuple) -> None:
        if key in self.fifo:
            self.fifo.remove(key)

    def result(self, jobs: list[Job], wall: float = 0.0) -> RunResult:
        return RunResult(self.policy, self.budget, self.workers, jobs, self.tasks, self.peak,
                         sum(1 for t in self.tasks if t.overcommit), sum(
                             1 for t in self.tasks if t.aborted), wall,
                         paged_out_bytes=self.mem.paged_out if self.mem is not None else 0)


class _Ready:
    """The ready tasks, in the order they became ready (Bulk, DeepEye) and, per kind, sorted by
    MASA's key (kept sorted as tasks come and go: the ready group grows long when jobs queue up,
    and a pick then looks only as far as the first task that fits)."""

    def __init__(self) -> None:
        self.tasks: dict[Task, None] = {}
        self.by_kind: dict[str, list[tuple[tuple, Task]]] = {}

    def add(self, t: Task) -> None:
        self.tasks[t] = None
        bisect.insort(self.by_kind.setdefault(t.kind, []), (t.key, t))

    def remove(self, t: Task) -> None:
        del self.tasks[t]
        group = self.by_kind[t.kind]
        del group[bisect.bisect_left(group, (t.key,))]  # keys are unique (they end in seq)

    def first(self, kind: str, *, free: int | None) -> Task | None:
        """The first task of ``kind`` in key order that needs at most ``free`` bytes (None: any).
        Keys run (depth, req, ...): within a depth the first task needs the least, so only the
        first task of each depth needs looking at."""
        group = self.by_kind.get(kind)
        i = 0
        while group and i < len(group):
            key, t = group[i]
            if free is None or t.req <= free:
                return t
            i = bisect.bisect_left(group, ((key[0] + 1,),))  # the next depth
        return None

    def __contains__(self, t: object) -> bool:
        return t in self.tasks

    def __iter__(self):
        return iter(self.tasks)

    def __bool__(self) -> bool:
        return bool(self.tasks)
