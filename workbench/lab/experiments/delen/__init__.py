"""Delen's evaluations (section 6) on this machine, as functions returning plain rows.

Multi-exit nets are trained here (PyTorch) on the host datasets, exported to ONNX and executed
for real with onnxruntime; request traces (Poisson, stepped bursts) drive the trace-driven server
(:mod:`workbench.multiexit.serve`), whose clock is virtual but whose every request really runs.
Latency is measured; energy is MODELLED (``workbench.power``: dynamic energy per request at 5 W
per busy core; battery life adds a Jetson Nano's idle power: RAPL is unreadable here). Rates are
set relative to this machine's capacity (the paper's 30 requests/s on a Jetson Nano running
ResNet-50 becomes a rate that loads our small models as heavily).

The modules: :mod:`.builds` (the nets and their measured exit profiles), :mod:`.figures` (one
function per figure), :mod:`.checks` (beside the paper). Everything is re-exported here.
"""

from .builds import MODELS as MODELS
from .builds import REAL as REAL
from .builds import REALS as REALS
from .builds import Built as Built
from .builds import build as build
from .builds import build_profile as build_profile
from .builds import build_real as build_real
from .builds import real_folder as real_folder
from .builds import storage_rows as storage_rows
from .checks import PAPER as PAPER
from .checks import paper_checks as paper_checks
from .figures import DELEN_BATTERY_WH as DELEN_BATTERY_WH
from .figures import DELEN_USABLE as DELEN_USABLE
from .figures import capacity_rate as capacity_rate
from .figures import combined_thresholds as combined_thresholds
from .figures import ended_by as ended_by
from .figures import fig5 as fig5
from .figures import fig7 as fig7
from .figures import fig7_overload as fig7_overload
from .figures import fig8 as fig8
from .figures import fig9 as fig9
from .figures import fig10 as fig10
from .figures import fig11 as fig11
from .figures import fig13 as fig13
from .figures import fig14_15 as fig14_15
from .figures import overload_onset as overload_onset
from .figures import policies_for as policies_for
from .figures import savings as savings
