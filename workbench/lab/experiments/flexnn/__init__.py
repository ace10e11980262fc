"""FlexNN's evaluation on this machine (notebook 17_flexnn, benchmarks/bench_memory.py): the
memory/latency trade-off (Fig. 10), the best point under the paper's criterion, planning time
(Table 2), adaptation to changing budgets (Fig. 14) and what d_m becomes in the optimiser. Rows
are typed with snake_case fields; every number is measured here (NumPy kernels, one compute
thread, one loader thread) except ``simulated_ms``, which is the what-if simulator's prediction.


The modules: :mod:`.tradeoff` (simulated), :mod:`.networks` (the full-size networks),
:mod:`.measured` (measured runs), :mod:`.studies` (the committed benchmark outputs read back),
:mod:`.native` (the "w.o. mem" ablation). Everything is re-exported here.
"""

from .measured import MeasuredPoint as MeasuredPoint
from .measured import MeasuredRow as MeasuredRow
from .measured import PressureRow as PressureRow
from .measured import measured_points as measured_points
from .measured import measured_tradeoff as measured_tradeoff
from .measured import under_pressure as under_pressure
from .native import NativeAllocRunner as NativeAllocRunner
from .native import measure_without_static_memory as measure_without_static_memory
from .networks import FULL_SIZE as FULL_SIZE
from .networks import full_size_graph as full_size_graph
from .networks import gpt2_graph as gpt2_graph
from .networks import squeezenet as squeezenet
from .networks import vit_graph as vit_graph
from .studies import Fig10Comparison as Fig10Comparison
from .studies import Fig10Point as Fig10Point
from .studies import Fig10Study as Fig10Study
from .studies import MeasuredStudy as MeasuredStudy
from .studies import PageCachePoint as PageCachePoint
from .studies import load_fig10 as load_fig10
from .studies import load_measured as load_measured
from .tradeoff import AdaptationRow as AdaptationRow
from .tradeoff import DmRow as DmRow
from .tradeoff import InferenceRow as InferenceRow
from .tradeoff import TradeoffRow as TradeoffRow
from .tradeoff import adaptation as adaptation
from .tradeoff import best_points as best_points
from .tradeoff import dm_with_memory_modes as dm_with_memory_modes
from .tradeoff import planning_ms as planning_ms
from .tradeoff import tradeoff as tradeoff
