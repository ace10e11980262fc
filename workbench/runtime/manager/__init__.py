"""CARIn's Runtime Manager (sections 3.2, 4.3.3-4.3.4): run the current design, watch the device,
raise processor and memory flags with hysteresis, and switch designs by looking up the switching
policy (never re-solving). The manager is :class:`~.core.RuntimeManager`; its parts are
:mod:`.serving`, :mod:`.shares` and :mod:`.designs` (what they share: :mod:`.state`)."""

from ..options import RuntimeOptions as RuntimeOptions
from ..policy import Choice as Choice
from ..policy import DeviceState as DeviceState
from ..policy import Policy as Policy
from ..policy import SwitchingPolicy as SwitchingPolicy
from ..timeline import Timeline as Timeline
from ..timeline import summarise as summarise
from .core import RuntimeManager as RuntimeManager
from .serving import Rejected as Rejected
from .shares import SHARE_MODES as SHARE_MODES
from .shares import _number as _number
from .shares import check_shares as check_shares

__all__ = ["SHARE_MODES", "Choice", "DeviceState", "Policy", "Rejected", "RuntimeManager",
           "RuntimeOptions", "SwitchingPolicy", "Timeline", "summarise"]
