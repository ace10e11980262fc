"""Plotly figures of workbench results. Computation lives elsewhere; these modules only draw:
:mod:`.embed` (showing a figure in a notebook or report, with its caption), :mod:`.figures` (the
reports' figures), :mod:`.tables` (rows as tables with display labels) and :mod:`.labels` (text
on figures). The explorer's own figures are :mod:`workbench.lab.explorer.figures`.

Requires the ``notebooks`` extra (plotly).
"""

from ...errors import MissingExtra

try:
    import plotly.graph_objects  # noqa: F401  (checked first: its message before any other)
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise MissingExtra("plotly", "notebooks", needs="workbench.lab.viz") from exc

from .embed import DATA_KINDS as DATA_KINDS  # noqa: E402
from .embed import PNG_ENV as PNG_ENV  # noqa: E402
from .embed import REPORT_ENV as REPORT_ENV  # noqa: E402
from .embed import data_kinds as data_kinds  # noqa: E402
from .embed import show as show  # noqa: E402
from .figures import PAPER_MARKER as PAPER_MARKER  # noqa: E402
from .figures import fronts as fronts  # noqa: E402
from .figures import hv_trace as hv_trace  # noqa: E402
from .figures import lines as lines  # noqa: E402
from .figures import method_bars as method_bars  # noqa: E402
from .figures import paper_line as paper_line  # noqa: E402
from .figures import paper_marks as paper_marks  # noqa: E402
from .figures import runtime_timeline as runtime_timeline  # noqa: E402
from .figures import tradeoff_scatter as tradeoff_scatter  # noqa: E402
from .labels import label_boxes as label_boxes  # noqa: E402
from .labels import label_positions as label_positions  # noqa: E402
from .tables import frame as frame  # noqa: E402
from .tables import label as label  # noqa: E402
from .tables import table as table  # noqa: E402
