"""The Pareto explorer: edit SLOs, re-solve, see the space, the front and the designs.

* :mod:`.session`: the computation (a :class:`Session` re-solves on every edit and returns an
  :class:`Exploration`, plain data; ~10-40 ms for 10^4 configurations);
* :mod:`.state`: saved sessions (:class:`ExplorerState`), checked before anything is read or
  solved, since one may come from a link anyone can send;
* :mod:`.figures`: drawing an exploration (plotly);
* :mod:`.widget`: the ipywidgets page (:class:`~.widget.Explorer`; ``workbench explore`` serves
  ``notebooks/explorer.ipynb`` with Voila).

The computation and the sessions are re-exported here; the figures and the widget need the
``notebooks`` extra and are imported from their modules.
"""

from .session import MAX_POINTS as MAX_POINTS
from .session import MAX_SLO as MAX_SLO
from .session import MAX_WEIGHT as MAX_WEIGHT
from .session import Exploration as Exploration
from .session import Session as Session
from .session import check_slo_length as check_slo_length
from .session import export_rows as export_rows
from .state import MAX_PATH as MAX_PATH
from .state import MAX_SESSION as MAX_SESSION
from .state import ExplorerState as ExplorerState
from .state import check_controls as check_controls
from .state import check_state as check_state
from .state import load_state as load_state
from .state import parse_state as parse_state
from .state import save_state as save_state
from .state import session_of as session_of
from .state import session_profile as session_profile
from .state import state_json as state_json
