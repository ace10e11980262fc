"""The reports: executing ``notebooks/`` into ``reports/<name>/`` (:mod:`.run`), what each
report's ``metrics.json`` holds (:mod:`.metrics`), the index page with the reproduction ledger
(:mod:`.index`), notebooks kept diff-friendly (:mod:`.notebook_format`) and the designs report on
a user's own profile (:mod:`.designs`).

The execution API is re-exported here (``from workbench.lab import reports;
reports.run_report(...)``)."""

from .run import AFTER as AFTER
from .run import ON_REQUEST as ON_REQUEST
from .run import ReportRun as ReportRun
from .run import _report_name as _report_name  # the CLI names rendered reports by it
from .run import available as available
from .run import chromium as chromium
from .run import default_reports_dir as default_reports_dir
from .run import render_html as render_html
from .run import run_all as run_all
from .run import run_report as run_report
