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
