"""The benchmark page: each target beside its value, its verdict and its history from git."""

import json
import subprocess
from pathlib import Path

from workbench.lab.bench.page import _fmt, bench_targets, render_page

ROOT = Path(__file__).resolve().parents[1]


def _write(folder: Path, name: str, data) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(data))


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin",
                        "GIT_COMMITTER_DATE": "2026-01-02T00:00:00", "HOME": str(repo)})


def test_targets_verdicts_and_history_from_git(tmp_path):
    bench = tmp_path / "reports" / "bench"
    fast = {"what": "speed", "cpu": "Test CPU", "targets": {
        "solve_ms": {"target": 1.0, "measured": 2.0, "q1": 1.5, "q3": 2.5, "n": 7, "unit": "ms",
                     "met": False},
        "peak_mb": {"target": 100, "measured": 50, "met": True},
        "open": {"target": 3, "measured": 3.1, "q1": 2.0, "q3": 4.0, "met": None},
        "bare": 5}}
    _write(bench, "fast.json", dict(fast, targets=dict(fast["targets"], solve_ms=dict(
        fast["targets"]["solve_ms"], measured=0.5, met=True))))
    _write(bench, "plain.json", {"what": "no targets here"})
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "first")
    _write(bench, "fast.json", fast)  # the regression: 0.5 ms -> 2.0 ms
    _git(tmp_path, "commit", "-qam", "second")

    benches = {b.file: b for b in bench_targets(bench)}
    assert benches["plain.json"].targets == []
    t = {x.name: x for x in benches["fast.json"].targets}
    assert set(t) == {"solve_ms", "peak_mb", "open"}  # a bare number has no measured value
    assert [v for _, _, v in t["solve_ms"].history] == [0.5, 2.0]
    assert [t[k].verdict for k in ("solve_ms", "peak_mb", "open")] == ["not met", "met",
                                                                       "not shown"]
    page = render_page(list(benches.values()), tmp_path / "index.html").read_text()
    assert "Targets: 1 met, 1 not met, 1 without a verdict" in page
    row = page[page.index("<td>solve_ms</td>"):].split("</tr>")[0]
    assert "2 ms" in row and "1.5 – 2.5" in row and "not met" in row
    assert row.count("<polyline") == 1 and 'class="bad"' in row  # history drawn, last point red
    assert "Test CPU" in page and "no targets here" in page


def test_without_git_there_is_no_history(tmp_path):
    bench = tmp_path / "reports" / "bench"
    _write(bench, "a.json", {"targets": {"x": {"target": 1, "measured": 0.5, "met": True}}})
    (b,) = bench_targets(bench)
    assert b.targets[0].history == [] and b.targets[0].verdict == "met"


def test_a_broken_benchmark_file_is_named_and_the_rest_shown(tmp_path):
    bench = tmp_path / "bench"
    _write(bench, "good.json", {"targets": {"x": {"target": 1, "measured": 0.5, "met": True,
                                                  "judged": 3, "unit": ["ms"]}}})
    (bench / "bad.json").write_text("{not json")
    (bench / "list.json").write_text("[1, 2]")
    _write(bench, "odd.json", {"targets": {"odd": {"target": float("nan"), "measured":
                                                   float("inf"), "met": "yes", "n": True}}})
    got = {b.file: b for b in bench_targets(bench, history=0)}
    assert "not a benchmark output" in got["bad.json"].error and got["bad.json"].targets == []
    assert "JSON object" in got["list.json"].error
    (odd,) = got["odd.json"].targets
    assert (odd.target, odd.measured, odd.met, odd.n) == (None, None, None, None)
    assert odd.verdict == "no verdict"
    page = render_page(list(got.values()), tmp_path / "p.html").read_text()
    assert "bad.json" in page and "<td>x</td>" in page
    assert "nan" not in page.lower() and "inf" not in page.lower().replace("infeasible", "")


def test_the_committed_page_shows_every_committed_target():
    """reports/bench/index.html is rebuilt with the benchmarks (`workbench report --ledger`):
    a benchmark that changes its targets without the page fails here."""
    page = (ROOT / "reports" / "bench" / "index.html").read_text()
    for b in bench_targets(ROOT / "reports" / "bench", history=0):
        for t in b.targets:
            row = page[page.index(f"<h2>{b.file}</h2>"):].split("<h2>")[1]
            assert f"<td>{t.name}</td>" in row, (b.file, t.name)
            cell = row[row.index(f"<td>{t.name}</td>"):].split("</tr>")[0]
            assert f">{_fmt(t.measured)} " in cell and t.verdict in cell, (b.file, t.name)
