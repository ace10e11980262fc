"""Import configuration tables made by other tools: CSV tables and LiteRT ``benchmark_model`` logs.

CSV columns: ``config, model, precision, processor`` (required) plus any of
``A, S, W, L, L_std, L_min, L_max, L_p50, L_p90, L_p99, TP, E, MF`` and the optional descriptive
columns ``task, arch, params, threads, xnnpack, delegate_precision, governor, memory_mode,
memory_budget_mb, batch, source, note``. Units: ms (latency), MB (MF, S), FLOPs (W), mJ (E),
samples/s (TP). Empty cells and ``-`` mean "not available".

Numbers are read exactly or refused with their line: ASCII digits and a ``.`` decimal point only
(Python's ``float()`` would also take full-width or Arabic-Indic digits and ``1_000``). A CSV cell
has no thousands separators (``"5,741"`` could be 5.741 with a decimal comma); in a
benchmark_model log a comma between groups of three digits is one (``5,741.6`` is 5741.6), a comma
and a space separate the timings fields, and any other comma in a number is refused.

The parts: :mod:`.common` (ids, numbers, wrapping rows in a profile), :mod:`.csvtable` (CSV
tables), :mod:`.benchlog` (``benchmark_model`` logs and importing benchmark runs),
:mod:`.litert` (``litert-benchmark`` output), :mod:`.edit` (attaching accuracy, merging).
"""

from .benchlog import import_benchmark_log as import_benchmark_log
from .benchlog import parse_benchmark_log as parse_benchmark_log
from .common import config_id as config_id
from .common import slug as slug
from .csvtable import METRIC_COLUMNS as METRIC_COLUMNS
from .csvtable import OPTIONAL_COLUMNS as OPTIONAL_COLUMNS
from .csvtable import REQUIRED_COLUMNS as REQUIRED_COLUMNS
from .csvtable import import_csv as import_csv
from .csvtable import import_tables as import_tables
from .edit import accuracy_table as accuracy_table
from .edit import attach_accuracy as attach_accuracy
from .edit import merge as merge

__all__ = ["import_csv", "import_tables", "import_benchmark_log", "parse_benchmark_log", "merge",
           "config_id", "slug", "accuracy_table", "attach_accuracy"]
