"""CARIn's evaluations (section 7) as functions returning plain rows; notebooks draw them.

Every function works on device profiles (the modelled phones by default) and reports optimality
in RASS's normalisation of the problem at hand, as CARIn's Figs 3-6 do.

The modules: :mod:`.designs` (designs against the baselines and the paper, Figs 3-6, Tables
7-8), :mod:`.solvers` (solve times, RASS against the evolutionary solvers), :mod:`.phone_trust`
(how far the modelled phones, calibrated to CARIn's tables, can be trusted) and
:mod:`.real_scale` (CARIn's solvers on the host at real scale). The first two are re-exported
here (``from workbench.lab.experiments import carin``).
"""

from .designs import CARIN_DEVICES as CARIN_DEVICES
from .designs import PAPER_GAINS as PAPER_GAINS
from .designs import PAPER_OBJECTIVE_GAINS as PAPER_OBJECTIVE_GAINS
from .designs import MappingRow as MappingRow
from .designs import MethodRow as MethodRow
from .designs import ObjectiveGainRow as ObjectiveGainRow
from .designs import PaperGainRow as PaperGainRow
from .designs import UseCaseGainRow as UseCaseGainRow
from .designs import as_dicts as as_dicts
from .designs import designs_vs_baselines as designs_vs_baselines
from .designs import gains_per_use_case as gains_per_use_case
from .designs import gains_summary as gains_summary
from .designs import gains_vs_paper as gains_vs_paper
from .designs import objective_gains as objective_gains
from .designs import per_mapping as per_mapping
from .designs import policy_comparison as policy_comparison
from .solvers import VERSUS_SOLVERS as VERSUS_SOLVERS
from .solvers import SolveTimeRow as SolveTimeRow
from .solvers import TracePoint as TracePoint
from .solvers import VersusRow as VersusRow
from .solvers import VersusSummary as VersusSummary
from .solvers import hv_over_time as hv_over_time
from .solvers import oodin_solve_times as oodin_solve_times
from .solvers import rass_vs_evolutionary as rass_vs_evolutionary
from .solvers import versus_by_solver as versus_by_solver
from .solvers import versus_summary as versus_summary
