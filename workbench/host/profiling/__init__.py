"""Measure the host: every zoo variant on every hardware option of this machine, for real.

Hardware options: threads {1, 2} x XNNPACK on/off (``OpResolverType.AUTO`` vs
``BUILTIN_WITHOUT_DEFAULT_DELEGATES``) x CPU core sets as separate processors (``CPU[0]``,
``CPU[1]``, ``CPU[0,1]``) pinned with ``os.sched_setaffinity``, so load on one core is a processor
issue the runtime can escape. Protocol: CARIn's (5 warm-up runs, then 100 timed runs) unless told
otherwise. Peak memory is measured in an isolated subprocess (``workbench.host._memprobe``): the peak
resident set while the model is loaded and run, over the resident set before loading it. Energy
comes from RAPL when readable, else from a stated power model (and the rows say so).
Co-execution of the multi-DNN tasks (h3, h4) is measured with the interpreters running at once in
threads, each pinned to its configuration's cores.

A killed run resumes: every measured row is appended to ``<out>.partial.jsonl`` (keyed by its model
file's checksum, its option and the protocol) and skipped when a run measuring the same row starts
again, even if that run adds or drops models or options.

The package's modules: :mod:`.options` (hardware options, protocols), :mod:`.measuring` (one
file under one option), :mod:`.machine` (the device record), :mod:`.variants` (what is
profiled), :mod:`.partial` (resuming), :mod:`.rows` (the measuring loop), :mod:`.build` (the
profile) and :mod:`.coexecution`.
"""

from ...runtime.executor import Pinned as Pinned
from .build import profile_host as profile_host
from .build import profile_variants as profile_variants
from .coexecution import measure_coexecution as measure_coexecution
from .coexecution import run_concurrently as run_concurrently
from .machine import MODELLED_CORE_POWER_W as MODELLED_CORE_POWER_W
from .machine import host_device as host_device
from .measuring import cannot_run as cannot_run
from .measuring import latency_stats as latency_stats
from .measuring import make_interpreter as make_interpreter
from .measuring import measure as measure
from .measuring import measure_memory as measure_memory
from .measuring import read_rapl_uj as read_rapl_uj
from .measuring import sample_input as sample_input
from .measuring import time_invocations as time_invocations
from .options import PROTOCOLS as PROTOCOLS
from .options import Option as Option
from .options import Protocol as Protocol
from .options import core_sets as core_sets
from .options import host_options as host_options
from .options import protocol as protocol
from .partial import Partial as Partial
from .partial import _row_key as _row_key
from .variants import TaskInputs as TaskInputs
from .variants import Variant as Variant
from .variants import with_interval as with_interval
from .variants import zoo_variants as zoo_variants
