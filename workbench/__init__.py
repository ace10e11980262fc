"""workbench: analysis and optimisation of DNNs on heterogeneous edge devices under SLOs.

The front door: the entry points of a whole run, from a profile to a running bundle::

    import workbench as wb

    profile = wb.load_profile("s20fe")                        # a device profile (name or path)
    problem = wb.DiscreteProblem(profile, "max A; max TP; max L <= 41.67ms", tasks=["uc1"])
    result = wb.solve(problem)                                # RASS: designs + switching policy
    wb.make_bundle(result, problem, "bundle/", models="datasets/zoo")
    manager = wb.RuntimeManager(wb.load_bundle("bundle/"))

`import workbench` stays light on purpose: each name is imported on first use, so that importing
the package loads no tensorflow, torch, plotly, ipywidgets or even pydantic, and
`workbench.runtime` runs on a device with only numpy and the LiteRT interpreter.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .version import __version__

#: Entry point -> the module that defines it (imported when the name is first used).
_ENTRY_POINTS = {
    "load_profile": "workbench.profiles",
    "save_profile": "workbench.profiles",
    "Profile": "workbench.profiles",
    "SLO": "workbench.moo.slo",
    "DiscreteProblem": "workbench.moo.problem",
    "use_case": "workbench.moo.usecases",
    "solve": "workbench.solvers",
    "rass": "workbench.solvers",
    "oodin": "workbench.solvers",
    "evolutionary": "workbench.solvers",
    "SolveResult": "workbench.solvers",
    "make_bundle": "workbench.bundling",
    "load_bundle": "workbench.runtime",
    "RuntimeManager": "workbench.runtime",
    "WorkbenchError": "workbench.errors",
    "InputError": "workbench.errors",
}

__all__ = ["DiscreteProblem", "InputError", "Profile", "RuntimeManager", "SLO", "SolveResult",
           "WorkbenchError", "__version__", "evolutionary", "load_bundle", "load_profile",
           "make_bundle", "oodin", "rass", "save_profile", "solve", "use_case"]

if TYPE_CHECKING:  # for type checkers and IDEs; at run time __getattr__ imports lazily
    from .bundling import make_bundle
    from .errors import InputError, WorkbenchError
    from .moo.problem import DiscreteProblem
    from .moo.slo import SLO
    from .moo.usecases import use_case
    from .profiles import Profile, load_profile, save_profile
    from .runtime import RuntimeManager, load_bundle
    from .solvers import SolveResult, evolutionary, oodin, rass, solve  # type: ignore[no-redef]


def __getattr__(name: str) -> Any:
    module = _ENTRY_POINTS.get(name)
    if module is None:
        raise AttributeError(f"module 'workbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next look-up is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_ENTRY_POINTS))
