"""`workbench solve`: the JSON contract, the Table-7-shaped text, and errors."""

import json

import pytest

from workbench.cli import main


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_json_contract_for_uc1(capsys):
    out = _json(capsys, ["solve", "--use-case", "uc1", "--device", "s20fe", "--json"])
    assert out["status"] == "ok"
    assert set(out["designs"]) == {"d0", "d1", "d2", "dm", "dw", "dwm"}
    d0 = out["designs"]["d0"]
    assert d0["config"] == "uc1:efficientnet-lite0:FFX8:CPU:t4:xnn" and d0["optimality"] > 1
    assert out["triggers"] == ["CPU", "GPU", "NPU"]
    # one policy entry for every combination of trigger flags and the memory flag
    assert len(out["policy"]) == 2 ** 4
    assert {frozenset(p["when"]) for p in out["policy"]} == {frozenset(["CPU", "GPU", "NPU",
                                                                        "memory"])}
    assert {"evaluate", "sort", "search", "total"} <= set(out["timing_ms"])


def test_text_output_is_shaped_like_table7(capsys):
    assert main(["solve", "--use-case", "uc1", "--device", "s20fe"]) == 0
    out = capsys.readouterr().out
    assert "c_CPU  c_GPU  c_NPU  c_m  d_new" in out
    assert "d0 = <EfficientNet Lite0 FFX8, CPU_{4,T}>" in out
    assert "T      T      T      T    dwm = dm" in out


def test_a_design_at_the_utopia_point_reads_as_such(capsys):
    """A71 UC1 at 10 ms: d0 is best in both objectives among the six feasible rows, so its
    optimality has no finite value; the table says why (in ASCII), JSON keeps "inf"."""
    argv = ["solve", "--use-case", "uc1", "--device", "a71", "--slo",
            "max A; max TP; max L <= 10ms"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    d0 = next(line for line in out.splitlines() if line.startswith("d0 "))
    assert out.isascii() and "inf (best in every objective)" in d0
    assert _json(capsys, argv + ["--json"])["designs"]["d0"]["optimality"] == "inf"


def test_profile_with_task_weights_and_other_solvers(capsys):
    out = _json(capsys, ["solve", "--profile", "a71", "--task", "uc3-audio", "--task",
                         "uc3-vision", "--slo", "min L; max A; L <= 100", "--weights", "A=3",
                         "--solver", "oodin", "--json"])
    assert out["solver"] == "oodin" and len(out["designs"]["d0"]["configs"]) == 2
    out = _json(capsys, ["solve", "--use-case", "uc2", "--device", "pixel7", "--solver", "nsga2",
                         "--pop-size", "20", "--generations", "10", "--json"])
    assert out["solver"] == "nsga2" and out["extra"]["evaluations"] > 0


def test_tables_make_a_multi_dnn_problem(tmp_path, capsys):
    (tmp_path / "vision.csv").write_text(
        "config,model,precision,processor,threads,A,L,MF\n"
        "v1,lite0,FP32,GPU,,75,10,30\nv2,lite0,FFX8,CPU,4,74,8,12\n")
    (tmp_path / "audio.csv").write_text(
        "config,model,precision,processor,threads,A,L,MF\n"
        "a1,yamnet,FP32,GPU,,0.4,4,20\na2,yamnet,FP32,CPU,2,0.4,6,15\n")
    out = _json(capsys, ["solve", "--table", str(tmp_path / "vision.csv"), "--table",
                         str(tmp_path / "audio.csv"), "--slo", "min L; max A", "--json"])
    assert out["status"] == "ok" and len(out["designs"]["d0"]["configs"]) == 2
    # An id in two tables is named with both files (it said "use replace", which no flag does).
    (tmp_path / "again.csv").write_text((tmp_path / "vision.csv").read_text().replace("v2", "a1"))
    assert main(["solve", "--table", str(tmp_path / "audio.csv"), "--table",
                 str(tmp_path / "again.csv"), "--slo", "min L; max A"]) == 1
    err = capsys.readouterr().err
    assert "again.csv: column config: config id also in" in err and "audio.csv" in err
    assert "'a1'" in err and err.count("\n") == 1


def test_infeasible_is_an_answer_not_an_error(capsys):
    out = _json(capsys, ["solve", "--use-case", "uc1", "--device", "s20fe", "--slo",
                         "max A; max L <= 1ms", "--json"])
    assert out["status"] == "infeasible" and out["designs"] == {}
    assert out["nearest"][0]["broken"]


@pytest.mark.parametrize("argv, message", [
    (["solve", "--use-case", "uc1", "--device", "s20fe", "--slo", "max A; max Lat"],
     "unknown metric 'Lat'"),
    (["solve", "--use-case", "uc9", "--device", "s20fe"], "unknown use case"),
    (["solve", "--use-case", "uc1"], "needs a device: --device"),
    (["solve", "--use-case", "r1", "--profile", "s20fe", "--table", "x.csv"], "exactly one"),
    (["solve", "--profile", "s20fe"], "--slo is required"),
    (["solve", "--profile", "s20fe", "--slo", "max A"], "choose which to run"),
    (["solve", "--use-case", "uc1", "--device", "s20fe", "--solver", "simplex"], "unknown solver"),
    (["solve", "--use-case", "uc1", "--device", "s20fe", "--weights", "E=2"], "matches no"),
    # a task from another use case would solve another problem under uc1's name
    (["solve", "--use-case", "uc1", "--device", "s20fe", "--task", "uc2"],
     "--task: not a task of use case uc1"),
])
def test_errors_exit_one_with_a_message(argv, message, capsys):
    assert main(argv) == 1
    assert message in capsys.readouterr().err


def test_named_use_cases_work_with_any_profile_that_has_their_tasks(capsys):
    from workbench.errors import InputError
    from workbench.moo.usecases import scenario

    assert scenario("r1") == (("fashion",), "max A; max TP; max L <= 41.67ms")
    assert scenario("UC1")[1] == "max A; max TP; max L <= 41.67ms"
    with pytest.raises(InputError, match="r2"):
        scenario("r9")
    out = _json(capsys, ["solve", "--use-case", "h1", "--profile", "host", "--json"])
    assert out["status"] == "ok" and out["designs"]["d0"]["configs"]
    # A use case whose tasks the profile lacks is named, not a traceback.
    assert main(["solve", "--use-case", "r1", "--profile", "host"]) == 1
    assert "fashion" in capsys.readouterr().err


def test_real_scale_experiment_rows_compare_three_solvers():
    from workbench.lab.experiments.carin import real_scale

    rows = real_scale.solvers_on("h1", "host", pop_size=16, n_gen=16)
    assert [r.solver for r in rows] == ["rass", "oodin", "nsga2"]
    assert rows[0].optimality_ratio == pytest.approx(1.0) and rows[0].source == "measured"
    assert all(r.optimality_ratio is None or r.optimality_ratio <= 1.0 + 1e-9 for r in rows)
    scale = real_scale.scale_rows("host")
    assert {r.task for r in scale} >= {"h1"} and all(r.a_kind == "measured" for r in scale
                                                      if r.task == "h1")
    # The committed real-scale profile: ImageNet accuracy is cited, Fashion-MNIST's measured,
    # and the weightless architectures' is agreement with their own FP32 (measured).
    kinds = {r.task: r.a_kind for r in real_scale.scale_rows("host-real")}
    assert kinds["imagenet"] == "cited" and kinds["fashion"] == "measured"


def test_nsga2_returns_its_front_as_designs_and_csv_keeps_them(tmp_path, capsys):
    import csv

    args = ["solve", "--use-case", "uc2", "--device", "pixel7", "--solver", "nsga2",
            "--pop-size", "20", "--generations", "10", "--seed", "3"]
    out = _json(capsys, [*args, "--json", "--csv", str(tmp_path / "front.csv")])
    front = out["front"]
    assert front and all(set(p["objectives"]) == set(out["designs"]["d0"]["objectives"])
                         for p in front)
    # Best optimality first, and d0 is its best point.
    opts = [p["optimality"] for p in front]
    assert opts == sorted(opts, reverse=True) and front[0]["config"] == out["designs"]["d0"]["config"]
    rows = list(csv.DictReader((tmp_path / "front.csv").read_text().splitlines()))
    assert [r["role"] for r in rows] == ["d0"] + [p["role"] for p in front]
    assert main(args) == 0  # the text form lists the front too
    text = capsys.readouterr().out
    assert f"the front NSGA2 found ({len(front)} designs" in text
    # Its settings and how its front compares with the exact one, as sentences, not a dict.
    assert "NSGA2 (pymoo): population 20, 10 generations, seed 3" in text
    tail = text.split("NSGA2 (pymoo)")[1]
    assert "hypervolume" in tail and "{" not in tail and "hv_ratio" not in tail


def test_solver_notes_print_as_sentences(capsys):
    from workbench.cli.solve import extra_lines

    lines = extra_lines({"notes": {"dwm": "only dm is available"}, "front": [1, 2],
                         "timing_ms": {"rank": 0.123456}})
    assert lines == ["dwm: only dm is available", "timing_ms: rank 0.1235"]


def test_csv_of_rass_designs(tmp_path, capsys):
    import csv

    assert main(["solve", "--use-case", "uc1", "--device", "s20fe", "--csv",
                 str(tmp_path / "d.csv")]) == 0
    rows = list(csv.DictReader((tmp_path / "d.csv").read_text().splitlines()))
    assert {r["role"] for r in rows} == {"d0", "d1", "d2", "dw", "dm", "dwm"}
    assert rows[0]["design"] and float(rows[0]["optimality"]) > 1


def test_a_sampling_solver_that_finds_nothing_does_not_call_the_problem_infeasible(capsys):
    args = ["solve", "--use-case", "uc2", "--device", "pixel7", "--slo",
            "min L; max A; L <= 0.62ms", "--pop-size", "2", "--generations", "1"]
    assert main([*args, "--solver", "optuna-random"]) == 0
    out = capsys.readouterr().out
    assert "INFEASIBLE" not in out and "no feasible design found in 2 evaluations" in out
    assert main([*args, "--solver", "rass"]) == 0  # the space does hold feasible designs
    assert "INFEASIBLE" not in capsys.readouterr().out


@pytest.mark.parametrize("argv, where", [
    (["--solver", "nsga2", "--seed", "-1"], "--seed"),
    (["--solver", "optuna-tpe", "--seed", "99999999999999999999"], "--seed"),
    (["--solver", "ga"], "solver"),
])
def test_bad_effort_and_single_objective_algorithms_are_one_line(argv, where, capsys):
    try:
        code = main(["solve", "--use-case", "uc2", "--device", "pixel7", *argv])
    except SystemExit as e:  # argparse's usage error: one line, status 2
        code = e.code
    assert code != 0
    err = capsys.readouterr().err
    assert where in err and "Traceback" not in err


def test_ctrl_c_is_one_line_and_status_130(monkeypatch, capsys):
    """Ctrl-C in a long command (a sweep, an evolutionary solve) is the user's choice: one line
    and the shell's status for SIGINT, no traceback."""
    import workbench.cli.profiles as P

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(P, "list_", interrupted)
    assert main(["profiles", "list"]) == 130
    assert capsys.readouterr().err == "interrupted\n"


@pytest.mark.parametrize("target", ["/proc/x.csv", "DIR"])
def test_an_output_that_cannot_be_written_is_one_line(target, tmp_path, capsys):
    path = str(tmp_path) if target == "DIR" else target
    assert main(["solve", "--use-case", "uc1", "--device", "s20fe", "--csv", path]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}") and len(err.strip().splitlines()) == 1


def test_an_empty_slo_is_refused_not_replaced_by_the_use_cases(capsys):
    assert main(["solve", "--use-case", "uc1", "--device", "s20fe", "--slo", " "]) == 1
    assert "--slo is empty" in capsys.readouterr().err


def test_a_design_best_only_in_the_weighted_objectives_says_so(capsys):
    """With A weighted 0 the distance ignores A: d0 is at the utopia point of TP alone and must
    not be called best in every objective (its A is not the best)."""
    assert main(["solve", "--use-case", "uc1", "--device", "s20fe", "--weights", "A=0"]) == 0
    out = capsys.readouterr().out
    assert "inf (best in every weighted objective; A weighted 0)" in out
    assert "best in every objective)" not in out
