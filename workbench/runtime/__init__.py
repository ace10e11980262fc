"""The thin device runtime: load a bundle, run its designs, follow the switching policy.

Imports only numpy, the LiteRT interpreter (``ai_edge_litert``, at first use) and the standard
library, so it installs on a device alone::

    pip install numpy ai-edge-litert && pip install --no-deps workbench
    python -m workbench.runtime run BUNDLE --duration 10

    from workbench.runtime import load_bundle, RuntimeManager
    with RuntimeManager(load_bundle("bundles/uc1-host")) as rm:
        y = rm.submit("h1", x).result()
"""

from .bundle import Bundle, BundleError, ConfigSpec, DesignSpec, load_bundle
from .events import Event, parse_events
from .executor import Executor, ExecutorError
from .manager import Choice, DeviceState, Rejected, RuntimeManager, SwitchingPolicy, Timeline

__all__ = ["Bundle", "BundleError", "Choice", "ConfigSpec", "DesignSpec", "DeviceState", "Event",
           "Executor", "ExecutorError", "Rejected", "RuntimeManager", "SwitchingPolicy",
           "Timeline", "load_bundle", "parse_events"]
