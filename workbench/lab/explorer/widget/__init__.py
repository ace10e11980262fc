"""The interactive Pareto explorer: ``Explorer().widget`` in JupyterLab, or as a page
(``workbench explore`` serves ``notebooks/explorer.ipynb`` with Voila). Needs the ``notebooks``
extra (ipywidgets, plotly, anywidget).

* :mod:`.page`: the :class:`Explorer` (its widgets, their events, the update, NSGA-II in the
  background, sessions);
* :mod:`.controls`: the controls a session opens (objective switches and weights, constraint
  sliders);
* :mod:`.views`: what the page shows as HTML (designs, errors, download links).
"""

from ....errors import MissingExtra

try:
    import ipywidgets  # noqa: F401  (checked first: the install hint before any other error)
    import plotly.graph_objects  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise MissingExtra("ipywidgets and plotly", "notebooks", needs="the explorer") from exc

from .page import Explorer as Explorer  # noqa: E402
