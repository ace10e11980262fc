"""MASA's evaluation on this machine (notebook 16_masa, benchmarks/bench_memory.py).

* :mod:`.figures`: one function per figure on the memory-study networks, times simulated from
  per-layer profiles measured here (typed rows, and the summaries the report and the benchmark
  both quote: :func:`gains`, :func:`tightest_gains`);
* :mod:`.table1`: the networks of MASA's Table 1 at their published sizes;
* :mod:`.pressure`: real runs under a memory cgroup with swap, so paging is measured;
* :mod:`.paging`: the simulator's paging model fitted to those runs;
* :mod:`.studies`: the committed benchmark outputs read back as typed studies.

Everything is re-exported here (``from workbench.lab.experiments import masa``).
"""

from .figures import COMPARED as COMPARED
from .figures import HEAVY as HEAVY
from .figures import LIGHT as LIGHT
from .figures import VARIANTS as VARIANTS
from .figures import BatchRow as BatchRow
from .figures import ContextRow as ContextRow
from .figures import GainRow as GainRow
from .figures import NetworkRow as NetworkRow
from .figures import OptimalityRow as OptimalityRow
from .figures import RealVsSimRow as RealVsSimRow
from .figures import ResponseRow as ResponseRow
from .figures import batching as batching
from .figures import context as context
from .figures import deterministic as deterministic
from .figures import gains as gains
from .figures import median_abs_error_pct as median_abs_error_pct
from .figures import network_table as network_table
from .figures import optimality as optimality
from .figures import real_vs_sim as real_vs_sim
from .figures import run as run
from .figures import scheduler_of as scheduler_of
from .figures import stochastic as stochastic
from .figures import tightest_gains as tightest_gains
from .figures import workers_effect as workers_effect
from .paging import PAGING_GRID as PAGING_GRID
from .paging import FitRow as FitRow
from .paging import Paging as Paging
from .paging import fit_paging as fit_paging
from .pressure import ALLOWANCE_MB as ALLOWANCE_MB
from .pressure import POLICIES as POLICIES
from .pressure import BatchRun as BatchRun
from .pressure import InstancesRun as InstancesRun
from .pressure import PressureRun as PressureRun
from .pressure import batching_real as batching_real
from .pressure import jobs_for as jobs_for
from .pressure import run_instances as run_instances
from .pressure import run_limited as run_limited
from .pressure import under_pressure as under_pressure
from .studies import GridCell as GridCell
from .studies import GridStudy as GridStudy
from .studies import NetworkSize as NetworkSize
from .studies import PressureStudy as PressureStudy
from .studies import grid_figure as grid_figure
from .studies import load_grid as load_grid
from .studies import load_pressure as load_pressure
from .table1 import TABLE1 as TABLE1
from .table1 import budgets as budgets
from .table1 import layer_sizes as layer_sizes
from .table1 import prepare as prepare
from .table1 import table1_graph as table1_graph
from .table1 import table1_model as table1_model
