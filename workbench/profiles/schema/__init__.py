"""Device profile schema (SPEC section 4): a device, its compute engines and the configuration table.

Units, everywhere in the workbench: latency ``L*`` in ms, memory footprint ``MF`` and size ``S`` in
MB, workload ``W`` in FLOPs, energy ``E`` in mJ, throughput ``TP`` in samples/s, ``params`` as a
count. ``L`` is the mean latency. Every configuration row says where its numbers come from in
``source``: measured (on the device, here), modelled (analytical model), predicted (a learned
predictor) or imported (another tool's output).

The parts: :mod:`.base` (the strict base model, bounds, names, vocabularies), :mod:`.device`
(device, engines, tasks), :mod:`.config` (a configuration row, its metric columns generated from
:mod:`workbench.metrics`), :mod:`.profile` (the whole profile and its cross-checks).
"""

from ...memorymodes import MemoryMode as MemoryMode
from .base import MAX_BATCH as MAX_BATCH
from .base import MAX_CORE_ID as MAX_CORE_ID
from .base import MAX_THREADS as MAX_THREADS
from .base import MAX_VALUE as MAX_VALUE
from .base import PRECISIONS as PRECISIONS
from .base import Arithmetic as Arithmetic
from .base import ConfigId as ConfigId
from .base import DeviceName as DeviceName
from .base import EngineKind as EngineKind
from .base import ModelName as ModelName
from .base import PathError as PathError
from .base import Precision as Precision
from .base import Source as Source
from .base import TaskName as TaskName
from .base import engine_kind as engine_kind
from .base import is_precision as is_precision
from .config import Config as Config
from .config import FailedConfig as FailedConfig
from .config import metric_fields as metric_fields
from .device import Accelerator as Accelerator
from .device import CpuCluster as CpuCluster
from .device import Device as Device
from .device import Engine as Engine
from .device import EngineOptions as EngineOptions
from .device import Task as Task
from .profile import CoExecution as CoExecution
from .profile import ExitRow as ExitRow
from .profile import MultiExitModel as MultiExitModel
from .profile import Profile as Profile
from .profile import Provenance as Provenance
