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
from .device import DeviceMonitor
from .events import Event, EventInjector, parse_events
from .executor import Executor, ExecutorError
from .manager import Rejected, RuntimeManager
from .options import RuntimeOptions
from .policy import Choice, DeviceState, SwitchingPolicy
from .timeline import Timeline

__all__ = ["Bundle", "BundleError", "Choice", "ConfigSpec", "DesignSpec", "DeviceMonitor",
           "DeviceState", "Event", "EventInjector", "Executor", "ExecutorError", "Rejected",
           "RuntimeManager", "RuntimeOptions", "SwitchingPolicy", "Timeline", "load_bundle",
           "parse_events"]
