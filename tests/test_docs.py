"""The documentation: the site builds without a warning, every Python block runs, every JSON block
parses, and every shell line names a real command: a `workbench` line is parsed by the real
command-line parser (a renamed command or option fails here), a `make` line names a Makefile
target, a `python` line a module or file that exists."""

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)


def blocks(page: Path, lang: str) -> list[str]:
    return [body for kind, body in FENCE.findall(page.read_text()) if kind == lang]


def shell_lines(body: str) -> list[list[str]]:
    """A shell block's commands as argument lists (continuations joined, comments dropped)."""
    return [shlex.split(line, comments=True)
            for line in body.replace("\\\n", " ").splitlines() if line.strip()
            and not line.lstrip().startswith("#")]


def _id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p, "python")], ids=_id)
def test_every_python_block_runs(page, tmp_path, monkeypatch, capsys):
    """A page's Python blocks run in order in one namespace, in an empty folder."""
    monkeypatch.chdir(tmp_path)
    ns: dict = {"__name__": "__docs__"}
    for k, body in enumerate(blocks(page, "python")):
        try:
            exec(compile(body, f"{_id(page)} python block {k + 1}", "exec"), ns)
        except Exception as e:  # name the page and block, not only the line
            raise AssertionError(f"{_id(page)}, python block {k + 1}: {type(e).__name__}: {e}") from e


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p, "json")], ids=_id)
def test_every_json_block_parses(page):
    for body in blocks(page, "json"):
        json.loads(body)


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][\w-]*):", text, re.M))


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p, "bash")], ids=_id)
def test_every_shell_line_names_a_real_command(page):
    from workbench.cli import build_parser

    targets = _make_targets()
    for body in blocks(page, "bash"):
        for argv in shell_lines(body):
            where = f"{_id(page)}: {' '.join(argv)}"
            head = argv[0]
            if head == "workbench":
                try:
                    build_parser().parse_args(argv[1:])
                except SystemExit as e:
                    pytest.fail(f"{where}: the command line refuses it (exit {e.code})")
            elif head == "make":
                assert set(argv[1:]) <= targets, f"{where}: no such Makefile target"
            elif head == "python" and argv[1] == "-m":
                import importlib.util

                assert importlib.util.find_spec(argv[2]), f"{where}: no such module"
            elif head == "python":
                assert (ROOT / argv[1]).is_file(), f"{where}: no such file"
            elif head == "pip":
                assert argv[1] == "install", where  # CI's own setup runs the install lines
            else:
                pytest.fail(f"{where}: the docs' shell blocks hold workbench, make, python and "
                            "pip lines only (write anything else as a text block)")


def test_the_site_builds_without_a_warning(tmp_path):
    """`make docs`: mkdocs in strict mode (a broken link, a page left out of the navigation or
    an API name that no longer exists fails)."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d",
                        str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-3000:]
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert len(list((tmp_path / "site").glob("*/index.html"))) >= 8
    # The docstrings' Sphinx roles reach the page as code, not as ":func:solve" (mkdocs_hooks.py).
    assert "<code>SLO.with_weights</code>" in api
    assert not re.search(r":(func|meth|class|attr|data|mod):<code>", api)


def test_the_readme_is_a_landing_page():
    """At most ~250 lines: what it is, a picture, two commands, an example, links."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    for link in re.findall(r"\]\(([^)#]+)", text):
        assert link.startswith("http") or (ROOT / link).exists(), link


def test_every_block_says_its_language():
    """An unlabelled block would be checked by nothing: each is python, bash, json or text."""
    for page in PAGES:
        for kind, _ in FENCE.findall(page.read_text()):
            assert kind in {"python", "bash", "json", "text"}, f"{_id(page)}: a ```{kind} block"


def _nav_pages(nav) -> list[tuple[str, str]]:
    out = []
    for item in nav:
        for label, target in item.items():
            out.extend(_nav_pages(target) if isinstance(target, list) else [(label, target)])
    return out


def test_every_page_is_titled_as_the_navigation_names_it():
    """A reader who clicks "SLOs and solvers" lands on a page of that title."""
    yaml = pytest.importorskip("yaml")
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    wrong = []
    for label, target in _nav_pages(nav):
        title = next(line[2:].strip() for line in (ROOT / "docs" / target).read_text().splitlines()
                     if line.startswith("# "))
        if target != "index.md" and title != label:
            wrong.append(f"{target}: nav {label!r}, title {title!r}")
    assert wrong == []


#: Shell lines the docs show that the tests do not execute, by leading words, each with why and
#: where the same command runs instead. Every other line of a bash block runs (the next test).
NOT_RUN = {
    "make": "the Makefile's own targets (setup, demo, report, bench take minutes to hours); CI "
            "runs `make test` itself and test_every_shell_line_names_a_real_command checks each",
    "workbench explore": "starts a web server; tests/test_explorer_browser.py drives it",
    "workbench zoo": "trains models (minutes); the host tests' quick_zoo fixture runs it",
    "workbench profile": "measures models on this machine; tests/test_host_pipeline.py runs it",
    "workbench models": "TensorFlow loads and converts the model; tests/test_registry.py runs it",
    "workbench quantise": "TensorFlow conversions; tests/test_registry.py runs it",
    "workbench bundle": "needs the measured models' files; tests/test_runtime_bundle.py runs it",
    "workbench run": "serves a bundle of real models; tests/test_runtime_bundle.py runs it",
    "workbench report": "executes notebooks (minutes); tests/test_own_reports.py runs it",
    "workbench sweep": "hundreds of NSGA-II runs (a minute or more); tests/test_sweep.py runs "
                       "the command on a smaller grid",
    "python -m workbench.runtime": "needs a bundle of real models; "
                                   "tests/test_runtime_light_install.py runs it",
}


def _inputs(cwd: Path) -> None:
    """The files the pages' lines read that the pages describe instead of creating: the examples
    they name (tests/data), the parameter file a user copies to edit, a shipped device spec, and
    two one-task tables cut from the example table."""
    import shutil

    data = ROOT / "tests" / "data"
    shutil.copy(data / "s20fe_uc1_subset.csv", cwd / "table.csv")
    shutil.copy(data / "benchmark_model_s20fe.log", cwd / "run.log")
    phones = ROOT / "workbench" / "data" / "phones"
    shutil.copy(phones / "model_parameters.json", cwd / "edited.json")
    spec = json.loads((phones / "specs" / "pixel7.json").read_text())
    (cwd / "mydevice.json").write_text(json.dumps({**spec, "name": "mydevice"}))
    head, *rows = (data / "s20fe_uc1_subset.csv").read_text().splitlines()
    for name in ("vision", "audio"):
        (cwd / f"{name}.csv").write_text("\n".join(
            [head, *(f"{name}-{r.replace(',uc1,', f',{name},')}" for r in rows)]) + "\n")
    shutil.copytree(ROOT / "profiles", cwd / "profiles",
                    ignore=shutil.ignore_patterns("*.partial.jsonl", "host-quick.json"))


def _not_run(argv: list[str]) -> str | None:
    line = " ".join(argv)
    return next((k for k in NOT_RUN if line == k or line.startswith(k + " ")), None)


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p, "bash")], ids=_id)
def test_every_shell_line_runs(page, tmp_path, monkeypatch, capsys):
    """A page's `workbench` lines run in order, as a user in a checkout would type them, in a
    fresh workspace (WORKBENCH_HOME) holding a copy of the checkout's profiles; each must exit 0.
    The lines NOT_RUN lists are skipped, by name, with the reason, and so are lines that read
    what a skipped line writes (``-o``)."""
    import glob

    from workbench.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path))
    _inputs(tmp_path)
    unmade: set[str] = set()  # what skipped lines would have written: a line reading it skips
    for body in blocks(page, "bash"):
        for argv in shell_lines(body):
            if _not_run(argv) or unmade & set(argv):
                unmade.update(argv[k + 1] for k, a in enumerate(argv[:-1]) if a in ("-o", "--out"))
                continue
            assert argv[0] == "workbench", f"{_id(page)}: {' '.join(argv)}: not in NOT_RUN"
            args = [a for x in argv[1:] for a in (sorted(glob.glob(x)) or [x]
                                                   if any(c in x for c in "*?[") else [x])]
            code = main(args)
            err = capsys.readouterr().err
            assert code == 0, f"{_id(page)}: {' '.join(argv)}: exit {code}: {err[-800:]}"


def test_the_lines_not_run_are_still_shown_somewhere():
    """Each NOT_RUN entry matches a line of the docs: an entry left behind by a docs edit goes."""
    shown = [argv for p in PAGES for body in blocks(p, "bash") for argv in shell_lines(body)]
    assert {k for k in NOT_RUN if not any(_not_run(a) == k for a in shown)} == set()
