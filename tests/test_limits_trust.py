"""Limits of the command line and of sweeps, refused before any work with the limit named; a
resumed sweep reuses only rows of the same inputs; ``--force`` replaces only what workbench wrote."""

import json
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.errors import InputError, WorkbenchError


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    """Relative outputs (``-o r.csv``) land in a temporary folder, should a limit not hold."""
    monkeypatch.chdir(tmp_path)


def _usage_error(capsys, argv) -> str:
    """argparse's refusal: exit status 2 and the last stderr line (the one naming the option)."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


# ---- 1. limits ------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["1000", "257", "0", "1,65", "2,-1", "x", ","])
def test_profile_threads_out_of_range_are_refused_before_measuring(capsys, value):
    err = _usage_error(capsys, ["profile", "--quick", "--threads", value, "--quiet"])
    assert "--threads" in err and "1..64" in err


def test_profile_threads_in_range_parse_as_a_list():
    from workbench.cli import build_parser

    args = build_parser().parse_args(["profile", "--threads", "1, 2,64"])
    assert args.threads == [1, 2, 64]
    assert build_parser().parse_args(["profile"]).threads is None


@pytest.mark.parametrize("argv,option", [
    (["profile", "--runs", "0"], "--runs"), (["profile", "--warmup", "-1"], "--warmup"),
    (["profile", "--real", "--train-samples", "0"], "--train-samples"),
    (["multiexit", "build", "--epochs", "0"], "--epochs"),
    (["multiexit", "build", "--width", "-8"], "--width"),
    (["multiexit", "build", "--points", "0"], "--points"),
    (["memory", "modes", "--model", "VGG-FC", "--reps", "0"], "--reps"),
    (["profiles", "show", "s20fe", "--limit", "-3"], "--limit"),
])
def test_other_counts_are_bounded(capsys, argv, option):
    err = _usage_error(capsys, argv)
    assert option in err and ".." in err


@pytest.mark.parametrize("argv", [["sweep", "--devices", "s20fe", "--use-cases", "uc1", "-o",
                                   "r.csv", "--workers", "100000"],
                                  ["sweep", "--devices", "s20fe", "--use-cases", "uc1", "-o",
                                   "r.csv", "--workers", "-1"],
                                  ["report", "--workers", "100000"]])
def test_workers_are_bounded(capsys, argv):
    err = _usage_error(capsys, argv)
    assert "--workers" in err and "0..256" in err


def test_sweep_and_dask_client_refuse_too_many_workers():
    from workbench.lab.sweep import SweepTask, dask_client, sweep

    with pytest.raises(InputError, match="256"):
        sweep([SweepTask("s20fe", "uc1", None, None, "rass")], workers=100_000)
    with pytest.raises(InputError, match="256"):
        dask_client(100_000, None)


@pytest.mark.parametrize("argv,option", [
    (["sweep", "--pop-size", "0"], "--pop-size"),
    (["sweep", "--pop-size", "1"], "--pop-size"),
    (["sweep", "--generations", "0"], "--generations"),
    (["sweep", "--generations", "100001"], "--generations"),
    (["sweep", "--repeat", "0"], "--repeat"),
    (["solve", "--pop-size", "100001"], "--pop-size"),
    (["solve", "--generations", "0"], "--generations"),
])
def test_evolutionary_effort_is_bounded_in_solve_and_sweep(capsys, argv, option):
    rest = (["--devices", "s20fe", "--use-cases", "uc1", "-o", "r.csv"] if argv[0] == "sweep"
            else ["--use-case", "uc1", "--device", "s20fe", "--solver", "nsga2"])
    err = _usage_error(capsys, argv + rest)
    assert option in err and ".." in err


def test_the_cli_limit_on_effort_is_the_solvers():
    from workbench.cli._format import MAX_EFFORT
    from workbench.solvers.evolutionary import MAX_EFFORT as SOLVERS

    assert MAX_EFFORT == SOLVERS


def test_a_grid_with_a_bad_effort_is_refused(tmp_path):
    from workbench.lab.sweep import load_grid, sweep_grid

    with pytest.raises(InputError, match="pop_size"):
        sweep_grid(profiles=["s20fe"], use_cases=["uc1"], solvers=["nsga2"], pop_size=0)
    with pytest.raises(InputError, match="n_gen"):
        sweep_grid(profiles=["s20fe"], use_cases=["uc1"], solvers=["nsga2"], n_gen=10**9)
    f = tmp_path / "grid.json"
    f.write_text(json.dumps({"profiles": ["s20fe"], "use_cases": ["uc1"], "solvers": ["nsga2"],
                             "pop_size": 0}))
    with pytest.raises(InputError, match="pop_size"):
        load_grid(f)


NINE_BY_TEN = "max A; " + "; ".join(f"L <= {{{','.join(str(i) for i in range(10))}}}ms"
                                    for _ in range(9))


def test_a_huge_brace_grid_is_refused_before_it_is_expanded():
    from workbench.lab.sweep import MAX_PROBLEMS, expand, sweep_grid

    with pytest.raises(InputError) as e:
        expand(NINE_BY_TEN)
    assert "1,000,000,000" in str(e.value) and f"{MAX_PROBLEMS:,}" in str(e.value)
    # Each grid alone is small; together (SLOs x weights) they are not.
    with pytest.raises(InputError) as e:
        sweep_grid(profiles=["s20fe"], use_cases=["uc1"],
                   slos=["max A; L <= {" + ",".join(str(i) for i in range(1, 1001)) + "}ms"],
                   weights=["A={" + ",".join(str(i) for i in range(1, 1001)) + "}"])
    assert "1,000,000" in str(e.value) and f"{MAX_PROBLEMS:,}" in str(e.value)


def test_the_cli_refuses_a_huge_brace_grid_in_one_line(tmp_path, capsys):
    assert main(["sweep", "--devices", "s20fe", "--use-cases", "uc1", "--slo", NINE_BY_TEN,
                 "--workers", "0", "--quiet", "-o", str(tmp_path / "r.csv")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "100,000" in err
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def silent_server():
    """A local TCP port that accepts connections and never says a word."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    conns = []

    def serve():
        while True:
            try:
                conns.append(srv.accept()[0])
            except OSError:
                return

    threading.Thread(target=serve, daemon=True).start()
    yield f"tcp://127.0.0.1:{srv.getsockname()[1]}"
    srv.close()
    for c in conns:
        c.close()


def test_a_scheduler_address_that_is_no_scheduler_fails_fast_in_one_line(tmp_path,
                                                                          silent_server):
    pytest.importorskip("distributed")
    cmd = [sys.executable, "-m", "workbench", "sweep", "--devices", "s20fe", "--use-cases", "uc1",
           "--scheduler", silent_server, "--quiet", "-o", str(tmp_path / "r.csv")]
    # Before, this waited forever; the timeout only keeps a regression from hanging the suite.
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[-1].startswith("error: ")  # checked before the plan line
    assert silent_server in err[-1] and "Traceback" not in r.stderr


def test_a_closed_port_or_a_malformed_address_is_one_error(monkeypatch):
    pytest.importorskip("distributed")
    from workbench.lab.sweep import cluster as sw

    monkeypatch.setattr(sw, "SCHEDULER_TIMEOUT_S", 1.0, raising=False)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    closed = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    s.close()
    with pytest.raises(WorkbenchError, match=closed):
        sw.dask_client(0, closed)
    with pytest.raises(WorkbenchError, match="not-an-address"):
        sw.dask_client(0, "not-an-address")


# ---- 2. resuming is keyed by the inputs' content ----------------------------------------------


def test_a_resumed_sweep_recomputes_the_rows_whose_profile_changed(tmp_path, capsys):
    pytest.importorskip("pandas")
    import pandas as pd

    from workbench.lab.sweep import read_journal, sweep, sweep_grid
    from workbench.profiles import resolve_profile

    prof = tmp_path / "phone.json"
    prof.write_text(resolve_profile("s20fe").read_text())
    out = tmp_path / "res.csv"
    journal = tmp_path / "res.csv.partial.jsonl"
    slo = "max A; max TP; max L <= 41.67ms"
    grid = sweep_grid(profiles=[str(prof), "a71"], use_cases=["uc1"], slos=[slo])
    first = sweep(grid, workers=0, journal=journal)  # an "interrupted" run: its journal stays
    assert list(first["status"]) == ["ok", "ok"]
    before = read_journal(journal)
    # The phone is now 1000 times slower: no configuration meets the latency SLO.
    data = json.loads(prof.read_text())
    for c in data["configs"]:
        c["L"] = c["L"] * 1000
        for k in ("L_min", "L_max", "L_p50", "L_p90", "L_p99", "L_std"):
            if c.get(k) is not None:
                c[k] = c[k] * 1000
    prof.write_text(json.dumps(data))
    assert main(["sweep", "--profiles", str(prof), "a71", "--use-cases", "uc1", "--slo", slo,
                 "--workers", "0", "--quiet", "-o", str(out)]) == 0
    got = pd.read_csv(out)
    assert list(got["status"]) == ["infeasible", "ok"]
    assert "1 of 2 reused" in capsys.readouterr().err
    a71 = got.loc[got["profile"] == "a71"].iloc[0]
    assert float(a71["solve_ms"]) == pytest.approx(before[a71["key"]]["solve_ms"])  # reused


def test_a_resumed_sweep_with_other_options_reuses_nothing_stale(tmp_path):
    from workbench.lab.sweep import reusable, sweep, sweep_grid

    journal = tmp_path / "j.jsonl"
    grid = sweep_grid(profiles=["s20fe"], use_cases=["uc1"], solvers=["nsga2"], pop_size=10,
                      n_gen=2)
    sweep(grid, workers=0, journal=journal)
    assert len(reusable(grid, journal)) == 1
    other = sweep_grid(profiles=["s20fe"], use_cases=["uc1"], solvers=["nsga2"], pop_size=12,
                       n_gen=2)
    assert reusable(other, journal) == {}


# ---- 3. --force replaces only what workbench wrote --------------------------------------------


@pytest.fixture
def tiny_bundle_inputs(tmp_path, minimal_profile):
    """A profile and a zoo folder with (dummy) model files for it: enough for a bundle."""
    for c in minimal_profile["configs"]:
        c["S"] = 1.0  # sizes, for the storage line
    prof = tmp_path / "toy.json"
    prof.write_text(json.dumps(minimal_profile))
    zoo = tmp_path / "zoo"
    rec = zoo / "cls" / "net"
    rec.mkdir(parents=True)
    for prec in ("FP32", "FP16"):
        (rec / f"net-{prec}.tflite").write_bytes(b"not a real model " + prec.encode())
    (rec / "record.json").write_text(json.dumps({
        "task": "cls", "model": "net",
        "variants": [{"precision": p, "file": f"net-{p}.tflite", "available": True}
                     for p in ("FP32", "FP16")]}))
    return ["bundle", "--profile", str(prof), "--slo", "max A; min L", "--models", str(zoo)]


def test_force_replaces_a_bundle_and_an_empty_folder_but_not_a_strangers(tmp_path, capsys,
                                                                          tiny_bundle_inputs):
    out = tmp_path / "b"
    assert main([*tiny_bundle_inputs, "-o", str(out)]) == 0
    assert json.loads((out / "manifest.json").read_text())["format"] == "workbench-bundle"
    assert main([*tiny_bundle_inputs, "-o", str(out)]) == 1  # exists, no --force
    assert "--force" in capsys.readouterr().err
    assert main([*tiny_bundle_inputs, "-o", str(out), "--force"]) == 0  # ours: replaced
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main([*tiny_bundle_inputs, "-o", str(empty), "--force"]) == 0
    assert (empty / "manifest.json").exists()
    capsys.readouterr()

    theirs = tmp_path / "x" / "somefolder"
    (theirs / "sub").mkdir(parents=True)
    (theirs / "thesis.tex").write_text("years of work")
    (theirs / "sub" / "data.csv").write_text("1,2,3")
    assert main([*tiny_bundle_inputs, "-o", str(theirs), "--force"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "somefolder" in err and "not written by workbench" in err
    assert (theirs / "thesis.tex").read_text() == "years of work"
    assert (theirs / "sub" / "data.csv").read_text() == "1,2,3"
    assert sorted(p.name for p in theirs.parent.iterdir()) == ["somefolder"]  # no staging left

    # A manifest that is not a bundle's is not ours either; nor is a file.
    (theirs / "manifest.json").write_text(json.dumps({"format": "something-else"}))
    assert main([*tiny_bundle_inputs, "-o", str(theirs), "--force"]) == 1
    assert (theirs / "thesis.tex").exists()
    f = tmp_path / "notes.txt"
    f.write_text("keep me")
    assert main([*tiny_bundle_inputs, "-o", str(f), "--force"]) == 1
    assert f.read_text() == "keep me"


def test_force_never_deletes_a_file_the_bundle_does_not_list(tmp_path, capsys,
                                                            tiny_bundle_inputs):
    """Replacing a bundle deletes its folder whole: a user's file inside a real bundle, or a
    hand-written manifest beside their files, keeps the folder from being replaced."""
    out = tmp_path / "b"
    assert main([*tiny_bundle_inputs, "-o", str(out)]) == 0
    (out / "notes.md").write_text("my notes")
    assert main([*tiny_bundle_inputs, "-o", str(out), "--force"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "notes.md" in err
    assert (out / "notes.md").read_text() == "my notes"
    (out / "notes.md").unlink()
    (out / "models" / "mine").mkdir()
    assert main([*tiny_bundle_inputs, "-o", str(out), "--force"]) == 1
    assert "mine" in capsys.readouterr().err and (out / "models" / "mine").is_dir()

    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "manifest.json").write_text(json.dumps({"format": "workbench-bundle", "version": 1}))
    (fake / "precious.txt").write_text("keep")
    assert main([*tiny_bundle_inputs, "-o", str(fake), "--force"]) == 1
    assert (fake / "precious.txt").read_text() == "keep"


def test_a_bundle_of_a_profile_without_sizes_has_no_storage_ratio(tmp_path, capsys,
                                                                   tiny_bundle_inputs):
    prof = json.loads(Path(tiny_bundle_inputs[2]).read_text())
    for c in prof["configs"]:
        c.pop("S")
    (tmp_path / "nosize.json").write_text(json.dumps(prof))
    argv = [*tiny_bundle_inputs[:2], str(tmp_path / "nosize.json"), *tiny_bundle_inputs[3:]]
    assert main([*argv, "-o", str(tmp_path / "b")]) == 0  # was a TypeError on None
    out = capsys.readouterr().out
    assert "bundle " in out and "smaller" not in out


def test_a_sweep_in_which_every_problem_failed_exits_1_naming_the_first_error(tmp_path,
                                                                              capsys):
    out = tmp_path / "r.csv"
    assert main(["sweep", "--devices", "s20fe", "--use-cases", "h1", "--workers", "0",
                 "--quiet", "-o", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: every problem failed") and "r.csv" in err[-1]
    assert out.exists()  # the error rows are kept
