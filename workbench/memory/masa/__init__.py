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
until the network finishes. In the simulator, paging is *modelled* (:mod:`.paging`): what is
resident, least recently used first, within the budget; a task pages in what it touches that was
paged out and pages out what its allocations push past the budget, and is slowed by those bytes
over ``swap_bps``. The defaults (:data:`SWAP_BPS`, :data:`CACHE_FACTOR`, :data:`ANON_SHARE`) are
fitted to runs under a real memory limit (``workbench.lab.experiments.masa.pressure``).
:func:`run_real` sleeps the modelled penalty unless ``swap_bps=math.inf``, as it runs under a
real memory limit, where the kernel pages and paging is measured.
"""

from .drivers import calibrate_overhead, run_real, simulate
from .model import (
    ADMISSIONS,
    ANON_SHARE,
    CACHE_FACTOR,
    POLICIES,
    SWAP_BPS,
    Job,
    LayerCost,
    NetProfile,
    Policy,
    RunResult,
    Task,
)
from .profiling import profile_network
from .scheduler import Scheduler
from .workloads import context_jobs, periodic_jobs, stochastic_jobs

__all__ = ["ADMISSIONS", "ANON_SHARE", "CACHE_FACTOR", "POLICIES", "SWAP_BPS", "Job", "LayerCost",
           "NetProfile", "Policy", "RunResult", "Scheduler", "Task", "calibrate_overhead",
           "context_jobs", "periodic_jobs", "profile_network", "run_real", "simulate",
           "stochastic_jobs"]
