"""Runtime adaptation on this machine, in the shape of CARIn Figs 7-8 and OODIn Figs 7-8.

A measured host profile is solved (RASS, and OODIn for comparison), bundled with the zoo's model
files and run for real by :mod:`workbench.runtime` while events happen: a real CPU stress process
pinned to the core the design uses, a real memory-hungry process, and an injected throttling-like
slowdown (there is no DVFS control in this VM, so throttling is emulated by making invokes on a
core take longer while keeping it busy). The ``throttle`` scenario (OODIn Fig. 8) throttles for
real instead: the engine serving the stream gets 10% of a core through a cgroup CFS quota, then
the engine the runtime moved to, and the runtime has to notice from its requests' latency alone.
Functions return plain data; notebooks draw it.

What CARIn and OODIn share, so a package of its own: :mod:`.adaptation` (CARIn Figs 7-8, OODIn
Fig. 8) and :mod:`.load` (OODIn Fig. 7, under device load). Everything is re-exported here.
"""

from .adaptation import MET_SHARE as MET_SHARE
from .adaptation import SCENARIOS as SCENARIOS
from .adaptation import AdaptationRun as AdaptationRun
from .adaptation import OodinPolicy as OodinPolicy
from .adaptation import RunSummary as RunSummary
from .adaptation import _role as _role  # benchmarks/bench_carin_runtime.py names designs by it
from .adaptation import adaptation as adaptation
from .adaptation import latency_bound_ms as latency_bound_ms
from .adaptation import paper_events as paper_events
from .adaptation import paper_runtime as paper_runtime
from .adaptation import run_summary as run_summary
from .adaptation import scenario_events as scenario_events
from .adaptation import storage_table as storage_table
from .adaptation import throttle_events as throttle_events
from .adaptation import throttle_summary as throttle_summary
from .load import LOAD_FACTORS as LOAD_FACTORS
from .load import LOAD_OPTIONS as LOAD_OPTIONS
from .load import LOAD_STEPS as LOAD_STEPS
from .load import STEP_GAP_S as STEP_GAP_S
from .load import StaticPolicy as StaticPolicy
from .load import check_factors as check_factors
from .load import load_events as load_events
from .load import load_plan as load_plan
from .load import load_ratios as load_ratios
from .load import load_run_summary as load_run_summary
from .load import load_sweep as load_sweep
