"""Sweeps: a grid of problems gives the same rows in this process, on a LocalCluster and on a
separately started Dask scheduler and worker; a failing task is a row; a killed sweep resumes."""

import json
import signal
import subprocess
import sys
import time

import pytest

from workbench.errors import InputError
from workbench.lab.sweep import TIMING_COLUMNS, SweepTask, expand, read_journal, sweep, sweep_grid

pytest.importorskip("pandas")


def _same(a, b):
    cols = [c for c in a.columns if c not in TIMING_COLUMNS]
    return a[cols].astype(str).equals(b[cols].astype(str))


def test_braces_expand_in_order_and_bad_braces_are_refused():
    assert expand("max A; max L <= {10,20}ms; MF <= {1,2}GB") == [
        "max A; max L <= 10ms; MF <= 1GB", "max A; max L <= 10ms; MF <= 2GB",
        "max A; max L <= 20ms; MF <= 1GB", "max A; max L <= 20ms; MF <= 2GB"]
    assert expand("max A") == ["max A"]
    for bad in ("L <= {10,}ms", "L <= {10,20ms", "L <= {{1,2},3}"):
        with pytest.raises(InputError):
            expand(bad)


def test_a_typo_in_the_grid_is_one_error_before_anything_runs():
    with pytest.raises(InputError, match="unknown use case"):
        sweep_grid(profiles=["s20fe"], use_cases=["uc9"])
    with pytest.raises(InputError, match="unknown solver"):
        sweep_grid(profiles=["s20fe"], use_cases=["uc1"], solvers=["rasss"])
    with pytest.raises(InputError, match="no profile named"):
        sweep_grid(profiles=["nokia3310"], use_cases=["uc1"])


GRID = dict(profiles=["s20fe", "a71"], use_cases=["uc1"],
            slos=["max A; max TP; max L <= {20,41.67}ms"], solvers=["rass", "oodin"])


def test_rows_are_the_same_in_process_and_on_a_local_cluster():
    pytest.importorskip("distributed")
    grid = sweep_grid(**GRID)
    ref = sweep(grid, workers=0)
    assert len(ref) == 8 and set(ref["status"]) == {"ok"}
    assert list(ref["key"]) == [t.key() for t in grid]
    assert _same(ref, sweep(grid, workers=2))


def test_rows_are_the_same_on_a_separately_started_scheduler_and_worker(dask_cluster):
    address, start_worker = dask_cluster
    assert address.startswith("tcp://127.0.0.1:")
    start_worker()
    grid = sweep_grid(**GRID)
    assert _same(sweep(grid, workers=0), sweep(grid, scheduler=address))


def test_workers_in_another_directory_need_none_of_the_clients_files(dask_cluster, tmp_path,
                                                                      monkeypatch, capsys):
    """A scheduler and a worker started apart, the worker in a directory of its own: the sweep
    names its profile by a path relative to the client's directory, which the worker cannot
    open, and still runs, because each task carries its profile's text; the CLI finds the
    scheduler from its --scheduler-file, checks versions and reports every row."""
    import shutil

    from workbench.cli import main
    from workbench.profiles import resolve_profile

    address, start_worker = dask_cluster
    client_dir, worker_dir = tmp_path / "client", tmp_path / "worker"
    client_dir.mkdir()
    worker_dir.mkdir()
    shutil.copy(resolve_profile("s20fe"), client_dir / "mine.json")
    start_worker(cwd=str(worker_dir))
    monkeypatch.chdir(client_dir)
    assert main(["sweep", "--profiles", "mine.json", "--use-cases", "uc1", "--solvers", "rass",
                 "--scheduler-file", str(start_worker.scheduler_file), "-o", "res.csv",
                 "--quiet"]) == 0, capsys.readouterr().err
    rows = (client_dir / "res.csv").read_text().splitlines()
    assert len(rows) == 2 and ",ok," in rows[1]
    assert address in capsys.readouterr().err
    assert not (worker_dir / "mine.json").exists()
    # A scheduler file that is not one is one line naming it.
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["sweep", "--profiles", "mine.json", "--use-cases", "uc1",
                 "--scheduler-file", str(bad), "-o", "r2.csv"]) == 1
    err = capsys.readouterr().err
    assert "bad.json" in err and "--scheduler-file" in err and "Traceback" not in err
    bad.write_text('{"address": 5}')
    assert main(["sweep", "--profiles", "mine.json", "--use-cases", "uc1",
                 "--scheduler-file", str(bad), "-o", "r2.csv"]) == 1
    assert "not a Dask scheduler address" in capsys.readouterr().err
    # --workers starts a cluster of its own: with an existing scheduler it is refused.
    assert main(["sweep", "--profiles", "mine.json", "--use-cases", "uc1", "--workers", "2",
                 "--scheduler-file", str(start_worker.scheduler_file), "-o", "r3.csv"]) == 1
    assert "--workers" in capsys.readouterr().err


def test_a_failing_task_is_a_row_and_the_sweep_goes_on():
    import pandas as pd

    tasks = [SweepTask("s20fe", "uc1", None, None, "rass"),
             SweepTask("s20fe", "uc1", "max A; L[nope] <= 5ms", None, "rass"),
             SweepTask("a71", "uc1", None, "A=2,XX=1", "oodin")]
    df = sweep(tasks, workers=0)
    assert list(df["status"]) == ["ok", "error", "error"]
    assert "nope" in df["error"][1] and "XX" in df["error"][2]
    assert pd.isna(df["error"][0]) and df["d0"][0]


def test_a_killed_sweep_resumes_from_its_journal(tmp_path):
    """Kill a CLI sweep mid-way; running it again computes only what the journal lacks and
    gives the rows an uninterrupted run gives."""
    out = tmp_path / "res.csv"
    journal = tmp_path / "res.csv.partial.jsonl"
    cmd = [sys.executable, "-m", "workbench", "sweep", "--devices", "s20fe", "a71", "--use-cases",
           "uc1", "--slo", "max A; max TP; max L <= {20,30,41.67}ms", "--solvers", "nsga2",
           "--workers", "0", "--quiet", "-o", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not journal.exists() or not journal.read_text().strip()):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = read_journal(journal)
    assert 1 <= len(before) < 6 and not out.exists()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "resuming" in r.stderr and not journal.exists()
    import pandas as pd

    got = pd.read_csv(out)
    assert len(got) == 6 and set(got["status"]) == {"ok"}
    # The rows that were in the journal are the ones in the result (not computed again).
    for key, row in before.items():
        assert float(got.loc[got["key"] == key, "solve_ms"].iloc[0]) == pytest.approx(row["solve_ms"])


def test_cli_refuses_an_unknown_output_format(tmp_path, capsys):
    from workbench.cli import main

    assert main(["sweep", "--devices", "s20fe", "--use-cases", "uc1", "-o",
                 str(tmp_path / "r.xlsx")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and ".csv or .parquet" in err


def test_results_are_written_as_csv_or_parquet(tmp_path):
    import pandas as pd

    from workbench.lab.sweep import write_results

    df = sweep(sweep_grid(profiles=["s20fe"], use_cases=["uc1"], solvers=["rass", "oodin"]))
    back = pd.read_csv(write_results(df, tmp_path / "r.csv"))
    assert list(back["solver"]) == ["rass", "oodin"] and list(back.columns) == list(df.columns)
    pytest.importorskip("pyarrow")
    assert pd.read_parquet(write_results(df, tmp_path / "r.parquet")).equals(df)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "r.parquet"]  # no staging left



def test_a_grid_file_gives_the_same_tasks_as_the_flags(tmp_path):
    from workbench.lab.sweep import load_grid

    f = tmp_path / "grid.json"
    f.write_text(json.dumps({"profiles": ["s20fe", "a71"], "use_cases": ["uc1"],
                             "slos": ["max A; max TP; max L <= {20,41.67}ms"],
                             "solvers": ["rass", "oodin"]}))
    assert load_grid(f) == sweep_grid(**GRID)
    f.write_text(json.dumps({"profiles": ["s20fe"], "use_cases": ["uc1"], "solver": ["rass"]}))
    with pytest.raises(InputError) as e:
        load_grid(f)
    assert "grid.json" in str(e.value) and "solver" in str(e.value)


def test_a_cluster_running_other_versions_is_refused_in_one_line():
    from workbench.errors import WorkbenchError
    from workbench.lab.sweep import _check_versions

    class Mismatched:
        def get_versions(self, check=False):
            assert check
            raise ValueError("Mismatched versions found\n\n| Package | Client | Scheduler |\n"
                             "| numpy | 2.4.6 | 1.26.0 |")

    with pytest.raises(WorkbenchError, match="different versions: Mismatched versions found"):
        _check_versions(Mismatched())
