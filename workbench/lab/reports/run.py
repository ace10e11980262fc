"""Execute the notebooks in ``notebooks/`` with papermill into ``reports/<name>/``.

Each run writes the executed notebook, an HTML page and whatever the notebook records (its
``metrics.json``). All pages load one shared ``reports/assets/plotly.min.js``. Requires the
``notebooks`` extra (papermill, nbconvert).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ... import workspace
from ...errors import InputError
from ...fileio import atomic_write_text


def default_reports_dir(*, quick: bool = False) -> Path:
    """Where reports go unless told: the workspace's ``reports/``; quick runs go to its scratch
    folder so that they never overwrite the committed full reports or their index."""
    return workspace.scratch_dir() / "reports-quick" if quick else workspace.reports_dir()


@dataclass(frozen=True)
class ReportRun:
    """Where one executed report went."""

    name: str
    notebook: Path
    html: Path
    metrics: Path | None
    figures: list[Path]
    seconds: float
    #: Why it failed (one line), when it did; ``failed`` is where its partly run notebook went.
    error: str | None = None
    failed: Path | None = None


def available(notebooks_dir: Path | None = None) -> list[str]:
    """Report names: the numbered notebooks' file stems, e.g. ``00_quickstart`` (an unnumbered
    notebook such as ``explorer.ipynb`` is interactive, not a report)."""
    folder = Path(notebooks_dir) if notebooks_dir else workspace.notebooks_dir()
    return sorted(p.stem for p in folder.glob("*.ipynb")
                  if p.stem.partition("_")[0].isdigit())


def _report_name(stem: str) -> str:
    # "00_quickstart" -> "quickstart": the numeric prefix only orders the notebooks.
    head, _, tail = stem.partition("_")
    return tail if head.isdigit() and tail else stem


def _shared_plotlyjs(reports_dir: Path) -> Path:
    import plotly

    dst = reports_dir / "assets" / "plotly.min.js"
    src = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not dst.exists() or dst.stat().st_size != src.stat().st_size:
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_suffix(".tmp")
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    return dst


_STYLE_RE = re.compile(r"<style[^>]*>(.*?)</style>", re.S)


def _share_styles(html: str, reports_dir: Path, out_dir: Path) -> str:
    """Move the page's inline CSS (nbconvert's theme, ~300 KB, the same for every report) into
    one shared, content-addressed file under ``reports/assets`` and link it."""
    head, sep, rest = html.partition("</head>")
    if not sep:
        return html
    css = "\n".join(m.group(1) for m in _STYLE_RE.finditer(head))
    if not css:
        return html
    name = f"notebook-{hashlib.sha256(css.encode()).hexdigest()[:12]}.css"
    target = reports_dir / "assets" / name
    if not target.exists():
        atomic_write_text(target, css)
    link = f'<link rel="stylesheet" href="{os.path.relpath(target, out_dir)}">'
    first = True

    def repl(_m: re.Match) -> str:
        nonlocal first
        out, first = (link if first else ""), False
        return out

    head = _STYLE_RE.sub(repl, head)
    # Drop shared stylesheets no page links any more (left by an older nbconvert theme).
    pages = [p.read_text("utf-8", errors="replace") for p in reports_dir.glob("*/*.html")
             if p.parent != out_dir] + [head]
    for old in (reports_dir / "assets").glob("notebook-*.css"):
        if old.name != name and not any(old.name in p for p in pages):
            old.unlink()
    return head + sep + rest


def _check_figures_ours(figures: Path) -> None:
    """A report's ``figures/`` is replaced whole by a run with PNGs: refuse when it holds
    anything a report did not write (a folder, a link, a file other than a PNG), so a reports
    folder pointed at a user's own files deletes none of them."""
    if not figures.exists() and not figures.is_symlink():
        return
    strangers = ([figures] if figures.is_symlink() or not figures.is_dir() else
                 [p for p in figures.iterdir()
                  if p.is_symlink() or not p.is_file() or p.suffix != ".png"])
    if strangers:
        raise InputError("refusing to replace this folder with the report's figures: it holds "
                         f"what no report wrote ({strangers[0].name})", file=figures)


#: Notebooks run only when asked for by name, with a user's parameters (not by ``run_all``):
#: ``designs`` is the report on a user's own profile (``workbench report --profile``).
ON_REQUEST = ("designs",)


def run_report(name: str, *, parameters: dict[str, Any] | None = None,
               reports_dir: str | os.PathLike | None = None,
               notebooks_dir: str | os.PathLike | None = None, quick: bool = False,
               progress: bool = True, png: bool = False, show_code: bool = False,
               out_name: str | None = None) -> ReportRun:
    """Execute one notebook with papermill and render it to HTML.

    The HTML is the evaluation: text, figures and tables, without the code cells (the executed
    notebook beside it keeps them; ``show_code`` puts them in the HTML too).

    Args:
        name: Notebook stem (``00_quickstart``) or report name (``quickstart``).
        parameters: Values for the notebook's ``parameters`` cell; ``output_dir`` and ``quick``
            are always passed.
        reports_dir: Folder that receives ``<report name>/`` (default: see
            :func:`default_reports_dir`).
        quick: Ask the notebook for its small, fast configuration.
        png: Also save every figure as a PNG under ``<report>/figures/`` (kaleido + a system
            Chromium; skipped with a note when that fails).
        out_name: The report's folder and file names (default: the report's name), so that
            reports of one notebook on several profiles sit side by side.

    Returns:
        ReportRun naming the executed notebook, its HTML and its metrics.json (if written).
    """
    import papermill  # noqa: F401  (the notebooks extra is checked before anything is made)

    t_start = time.perf_counter()
    notebooks_dir = Path(notebooks_dir) if notebooks_dir else workspace.notebooks_dir()
    reports_dir = Path(reports_dir) if reports_dir else default_reports_dir(quick=quick)
    home = workspace.home()
    stem = _notebook_stem(name, notebooks_dir)
    report = out_name or _report_name(stem)
    out_dir = reports_dir / report
    out_dir.mkdir(parents=True, exist_ok=True)
    js = _shared_plotlyjs(reports_dir)
    # Relative to the workspace when possible: the committed reports should not name a home
    # folder. Notebooks run in the workspace, so their relative paths (profiles/, datasets/) too.
    resolved = out_dir.resolve()
    shown = resolved.relative_to(home) if resolved.is_relative_to(home) else resolved
    params = dict(parameters or {}, output_dir=str(shown), quick=quick)
    executed = out_dir / f"{report}.ipynb"
    tmp = out_dir / f".{report}.partial.ipynb"
    figures_tmp = out_dir / ".figures.partial"
    figures = out_dir / "figures"
    if png:  # checked before the run: the PNGs replace this folder when it ends
        _check_figures_ours(figures)
    shutil.rmtree(figures_tmp, ignore_errors=True)
    with _report_env(os.path.relpath(js, out_dir), figures_tmp.resolve() if png else None):
        _execute(notebooks_dir / f"{stem}.ipynb", tmp, params, home=home, progress=progress,
                 report=report, figures_tmp=figures_tmp)
    _keep_executed(tmp, executed)
    if png and figures_tmp.exists():
        shutil.rmtree(figures, ignore_errors=True)
        os.replace(figures_tmp, figures)
    html = render_html(executed, reports_dir=reports_dir, show_code=show_code)
    metrics = out_dir / "metrics.json"
    if metrics.exists():
        _round_metrics(metrics)
    return ReportRun(name=report, notebook=executed, html=html,
                     metrics=metrics if metrics.exists() else None,
                     figures=sorted(figures.glob("*.png")) if figures.exists() else [],
                     seconds=time.perf_counter() - t_start)


def _notebook_stem(name: str, notebooks_dir: Path) -> str:
    """The notebook a report name (``quickstart``) or stem (``00_quickstart``) names, or an
    InputError listing the known ones."""
    stems = {s: s for s in available(notebooks_dir)} | {_report_name(s): s
                                                         for s in available(notebooks_dir)}
    stems |= {s: s for s in ON_REQUEST if (notebooks_dir / f"{s}.ipynb").is_file()}
    if name not in stems:
        raise InputError(f"no notebook named {name!r} (known: {', '.join(available(notebooks_dir))})",
                         file=notebooks_dir)
    return stems[name]


@contextlib.contextmanager
def _report_env(plotlyjs: str, png_dir: Path | None) -> Iterator[None]:
    """The environment a report's notebook reads while it runs (:mod:`..viz.embed`): the shared
    plotly.js (relative to the report) and where PNG figures go (None: no PNGs); restored
    afterwards."""
    from ..viz.embed import PNG_ENV, REPORT_ENV

    saved = {k: os.environ.get(k) for k in (REPORT_ENV, PNG_ENV)}
    os.environ[REPORT_ENV] = plotlyjs
    if png_dir is not None:
        os.environ[PNG_ENV] = str(png_dir)
    else:
        os.environ.pop(PNG_ENV, None)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _execute(notebook: Path, tmp: Path, params: dict[str, Any], *, home: Path, progress: bool,
             report: str, figures_tmp: Path) -> None:
    """Run ``notebook`` with papermill into ``tmp``, in the workspace."""
    import papermill as pm

    home.mkdir(parents=True, exist_ok=True)  # a fresh WORKBENCH_HOME: the notebooks run there
    try:
        pm.execute_notebook(str(notebook), str(tmp), parameters=params,
                            cwd=str(home), progress_bar=progress, kernel_name="python3",
                            # ipykernel warns on every start that its local TCP socket is
                            # unencrypted (it is bound to 127.0.0.1 and keyed): noise here.
                            extra_arguments=["--IPKernelApp.log_level=ERROR"])
    except BaseException:
        # No half-executed notebook left where a report belongs: it goes to the scratch
        # folder, where the failing cell's output can be read.
        if tmp.exists():
            keep = workspace.scratch_dir() / "reports-failed" / f"{report}.ipynb"
            keep.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, keep)
        shutil.rmtree(figures_tmp, ignore_errors=True)
        raise


def _keep_executed(tmp: Path, executed: Path) -> None:
    """The executed notebook, without per-run noise (timestamps, durations, absolute paths),
    where the report belongs."""
    # Imported here, not at the top: the package's __init__ imports this module, and
    # ``python -m workbench.lab.reports.notebook_format`` must find it not yet loaded.
    from . import notebook_format

    atomic_write_text(executed, notebook_format.dumps(
        notebook_format.scrub_executed(json.loads(tmp.read_text(encoding="utf-8")))))
    tmp.unlink()


def _round_metrics(metrics: Path) -> None:
    from . import notebook_format  # see _keep_executed

    notebook_format.round_metrics_file(metrics)


def render_html(executed: str | os.PathLike, *, reports_dir: str | os.PathLike,
                show_code: bool = False) -> Path:
    """Render an executed report notebook (``<reports_dir>/<name>/<name>.ipynb``) to the HTML
    beside it, without running anything: text, figures and tables (``show_code``: the code
    cells too), sharing the reports' stylesheet."""
    import nbformat
    from nbconvert import HTMLExporter

    executed = Path(executed)
    nb = nbformat.read(executed, as_version=4)
    exporter = HTMLExporter(template_name="lab")
    exporter.exclude_input_prompt = True
    exporter.exclude_input = not show_code
    exporter.exclude_output_prompt = True
    body, _ = exporter.from_notebook_node(nb)
    body = _share_styles(body, Path(reports_dir), executed.parent)
    return atomic_write_text(executed.with_suffix(".html"), body)


def _failed_run(name: str, reports_dir: Path, err: Exception, seconds: float) -> ReportRun:
    """A report that failed, with its error in one line (a notebook's error: the cell and the
    exception, not papermill's traceback)."""
    ename, evalue = getattr(err, "ename", None), getattr(err, "evalue", None)
    cell = getattr(err, "exec_count", None)
    if ename:
        why = f"{ename}: {evalue}" + (f" (cell [{cell}])" if cell is not None else "")
    else:
        why = f"{type(err).__name__}: {err}"
    why = " ".join(why.split())[:400]
    keep = workspace.scratch_dir() / "reports-failed" / f"{name}.ipynb"
    out = reports_dir / name
    return ReportRun(name=name, notebook=out / f"{name}.ipynb", html=out / f"{name}.html",
                     metrics=None, figures=[], seconds=seconds, error=why,
                     failed=keep if keep.exists() else None)


def chromium() -> str | None:
    """A system Chromium for kaleido and the browser test (never a downloaded one)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


#: Reports that read what another report writes: the runtime report runs the zoo and the
#: profile the host report builds (in quick mode, from scratch). Run in parallel, they wait.
AFTER = {"runtime": ("host",)}


def _run_one(name: str, reports_dir: Path, quick: bool, png: bool, show_code: bool,
             progress: bool, *_after: Any) -> ReportRun:
    """One report; its failure is its ReportRun (a Dask task, or one step of the serial loop).
    ``_after``: the runs it waits for (Dask passes their results; only the order matters)."""
    t0 = time.perf_counter()
    try:
        return run_report(name, reports_dir=reports_dir, quick=quick, progress=progress, png=png,
                          show_code=show_code)
    except Exception as e:  # noqa: BLE001 - one report's failure is reported, not fatal
        return _failed_run(name, reports_dir, e, time.perf_counter() - t0)


def run_all(*, names: list[str] | None = None, reports_dir: str | os.PathLike | None = None,
            quick: bool = False, progress: bool = True, png: bool | None = None,
            show_code: bool = False, workers: int = 0, scheduler: str | None = None
            ) -> list[ReportRun]:
    """Execute every report (or ``names``) and rewrite the index.html of ``reports_dir``
    (default: see :func:`default_reports_dir`). PNG figures by default when a Chromium is
    installed and not ``quick``. ``workers`` > 0 (a Dask LocalCluster) or ``scheduler`` runs
    the notebooks as Dask tasks, each in its own kernel; the outputs are the serial run's."""
    from tqdm.auto import tqdm

    if png is None:
        png = not quick and chromium() is not None
    from .index import write_index

    reports_dir = Path(reports_dir) if reports_dir else default_reports_dir(quick=quick)
    names = names or [_report_name(s) for s in available()]
    if workers > 0 or scheduler:
        from ..sweep import dask_client

        _shared_plotlyjs(reports_dir)  # once, before several workers would copy it at once
        client, close = dask_client(workers, scheduler)
        try:
            from dask.distributed import as_completed

            futures: list[Any] = []
            by_name: dict[str, Any] = {}
            for n in names:  # in the serial order, so a report's prerequisites come first
                after = [by_name[a] for a in AFTER.get(_report_name(n), ()) if a in by_name]
                fut = client.submit(_run_one, n, reports_dir.resolve(), quick, png, show_code,
                                    False, *after, pure=False, key=f"report-{n}")
                futures.append(fut)
                by_name[_report_name(n)] = fut
            bar = tqdm(total=len(names), desc="reports", unit="report", disable=not progress)
            for fut in as_completed(futures):
                bar.update(1)
                bar.set_postfix_str(fut.result().name)
            bar.close()
            runs = [f.result() for f in futures]  # in the order asked, as the serial run
        finally:
            close()
    else:
        runs = []
        bar = tqdm(names, desc="reports", unit="report", disable=not progress)
        for name in bar:
            bar.set_postfix_str(name)
            # The notebook's own bar (cell by cell) under the reports' one: long reports move.
            runs.append(_run_one(name, reports_dir, quick, png, show_code, progress))
    write_index(Path(reports_dir))
    return runs
