"""The lab: what is built on the solvers to reproduce the papers and explore designs, in packages
named for what they hold (lowest first, imports flow down): ``bench`` (the benchmarks' committed
outputs), ``experiments`` (the papers' evaluations), ``reproduction`` (the ledger), ``viz``
(plots), ``explorer`` (the Pareto explorer), ``sweep`` (many problems at once, on Dask too) and
``reports`` (notebooks executed into reports, their metrics and index)."""
