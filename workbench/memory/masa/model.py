"""MASA's data: per-layer costs of a network, jobs, tasks, run results, and the policies."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

# The simulator's paging model (see .paging), modelled: fitted to MASA runs under a real memory
# limit on this machine (Table 1's networks, a swap file on its disk; Intel Xeon, 2026-11;
# benchmarks/bench_memory.py --only masa, reports/bench/memory.json "masa_pressure.fit").
SWAP_BPS = 141e6  # bytes/s paged out plus paged in
CACHE_FACTOR = 0.5  # reclaimable bytes a load leaves charged per weight byte it reads
ANON_SHARE = 0.35  # share of reclaim taken from anonymous memory while page cache remains


class Policy(StrEnum):
    """The scheduling policies. MASA and the context-aware ones load and unload per layer;
    Bulk and DeepEye hold a network's weights until it finishes and run tasks first come,
    first served, memory-unaware."""

    MASA = "masa"
    BULK = "bulk"
    DEEPEYE = "deepeye"
    CA_WAIT = "ca-wait"
    CA_PREEMPT = "ca-preempt"

    @property
    def layerwise(self) -> bool:
        """Per-layer loads, weights freed once the layer has run (MASA's memory model)."""
        return self in (Policy.MASA, Policy.CA_WAIT, Policy.CA_PREEMPT)

    @property
    def context_aware(self) -> bool:
        """A network whose parent's outcome is negative is not needed (waited for or aborted)."""
        return self in (Policy.CA_WAIT, Policy.CA_PREEMPT)


POLICIES = tuple(p.value for p in Policy)
# When an arrived job's tasks become ready: MASA Alg. 1 read literally, or this workbench's
# extension (see Scheduler).
ADMISSIONS = ("on-arrival", "when-idle")


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

    def batched(self, size: int) -> "NetProfile":
        """This network run on ``size`` inputs at once (MASA Fig. 12), as its scheduler
        estimates it: each layer's activations, scratch and execution time scale with the batch;
        its weights and load time do not (loaded once)."""
        if size == 1:
            return self
        return NetProfile(self.name, [LayerCost(
            x.name, x.kind, x.inputs, x.weight_bytes, x.out_bytes * size, x.scratch_bytes * size,
            x.load_s, x.exec_s * size) for x in self.layers])

    def misestimated(self, factor: float) -> "NetProfile":
        """This network with every layer's memory estimate (weights, activations, scratch)
        multiplied by ``factor``, as a profiler that under- or over-estimates would give it
        (MASA Fig. 13(b)); the weights really read and the times are unchanged."""
        return NetProfile(self.name, [LayerCost(
            x.name, x.kind, x.inputs, int(x.weight_bytes * factor), int(x.out_bytes * factor),
            int(x.scratch_bytes * factor), x.load_s, x.exec_s, x.rss_peak_bytes)
            for x in self.layers])

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
    key: tuple = ()  # the scheduler's order among ready tasks of its kind


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
    paged_out_bytes: int = 0  # simulated runs: what the paging model paged out (modelled)

    @property
    def response(self) -> np.ndarray:
        return np.array([j.done_at - j.arrival for j in self.jobs if j.done_at is not None])

    @property
    def makespan(self) -> float:
        """When the last finished job finished (NaN when none did)."""
        return max((j.done_at for j in self.jobs if j.done_at is not None), default=float("nan"))

    @property
    def mean_response(self) -> float:
        return float(self.response.mean()) if len(self.response) else float("nan")
