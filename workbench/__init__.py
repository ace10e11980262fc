"""workbench: analysis and optimisation of DNNs on heterogeneous edge devices under SLOs.

`import workbench` stays light on purpose: it imports no tensorflow, torch, plotly, ipywidgets or
even pydantic, so that `workbench.runtime` can be installed on a device with only numpy and the
LiteRT interpreter. Import the submodule you need, e.g. `from workbench import profiles`.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
