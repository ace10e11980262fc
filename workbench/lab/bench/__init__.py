"""The benchmarks' committed outputs (``reports/bench/*.json``, written by ``benchmarks/``):
reading them (:mod:`.outputs`, which reports and experiments quote instead of measuring again)
and the benchmark page (:mod:`.page`: every target with its verdict and history).

The lowest package of the lab: it reads files and imports nothing else of the lab."""

from .outputs import bench_file as bench_file
from .outputs import bench_section as bench_section
