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
until the network finishes. In the simulator, policies that overcommit the budget pay a
*modelled* paging penalty: a task that starts with ``O`` bytes in use beyond the budget is slowed
by ``2*min(O, its working set)/swap_bps`` (page out and back in), a load also by the page-cache
copy of its file (``cache_factor``). :func:`run_real` sleeps that penalty unless
``swap_bps=math.inf``, as it runs under a real memory limit
(``workbench.lab.experiments.masa_pressure``), where the kernel pages and paging is measured.
"""

from .drivers import calibrate_overhead, run_real, simulate
from .model import ADMISSIONS, POLICIES, SWAP_BPS, Job, LayerCost, NetProfile, Policy, RunResult, Task
from .profiling import profile_network
from .scheduler import Scheduler
from .workloads import context_jobs, periodic_jobs, stochastic_jobs

__all__ = ["ADMISSIONS", "POLICIES", "SWAP_BPS", "Job", "LayerCost", "NetProfile", "Policy", "RunResult",
           "Scheduler", "Task", "calibrate_overhead", "context_jobs", "periodic_jobs",
           "profile_network", "run_real", "simulate", "stochastic_jobs"]
