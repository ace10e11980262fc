"""Values a schema or a flag accepts must not break the solver, and importers must not accept
malformed numbers: strict types, many-core hosts, contention parameters, weights, evolutionary
budgets, solver names, benchmark_model numbers, CSV latency order, concurrent imports."""

import json
import multiprocessing
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_profile

from workbench.cli import main
from workbench.errors import InputError
from workbench.moo.problem import DiscreteProblem
from workbench.profiles import load_profile
from workbench.profiles.importers import import_benchmark_log, import_csv
from workbench.solvers import rass, solve

ROWS = [dict(id="a", model="a", L=10.0, A=70.0), dict(id="b", model="b", L=5.0, A=60.0)]


def _profile_file(tmp_path, change):
    d = json.loads(make_profile(ROWS).model_dump_json(exclude_none=True))
    change(d)
    p = tmp_path / "p.json"
    p.write_text(json.dumps(d))
    return p


@pytest.mark.parametrize("change, where", [
    (lambda d: d["configs"][0].update(L=True), "configs[0].L"),
    (lambda d: d["configs"][0].update(threads="4"), "configs[0].threads"),
    (lambda d: d["configs"][0].update(batch=2.0), "configs[0].batch"),
    (lambda d: d["configs"][0].update(threads=10 ** 6), "configs[0].threads"),
    (lambda d: d["device"]["cpu_clusters"][0].update(count=10 ** 9), "count"),
    (lambda d: d["configs"][0].update(processor="CPU[99999]"), "configs[0].processor"),
    (lambda d: d["contention"].update(cpu_oversubscription=-5.0), "contention"),
    (lambda d: d["contention"].update(cross_processor=1e200), "contention"),
    # Found by the attack (benchmarks/bench_attack.py): accepted before.
    (lambda d: d["configs"][0].update(L=0.0), "configs[0].L"),  # infinite throughput
    (lambda d: d["configs"][0].update(L_p99=0.0), "configs[0].L_p99"),
    (lambda d: d["configs"][0].update(batch=10 ** 9), "configs[0].batch"),
    (lambda d: d["tasks"].append(dict(d["tasks"][0])), "tasks[1].name"),
    (lambda d: d.update(configs=[]), "configs"),
])
def test_profile_values_that_would_break_the_solver_are_refused(tmp_path, change, where):
    with pytest.raises(InputError) as e:
        load_profile(_profile_file(tmp_path, change))
    assert where in str(e.value) and "p.json" in str(e.value)


def test_a_many_core_host_solves_instead_of_overflowing():
    """Core ids >= 64 raised OverflowError in the co-execution model."""
    rows = [dict(id=f"{t}-{p}", task=t, model=t, processor=p, threads=2, L=5.0 + k, A=70.0 - k)
            for t in ("t1", "t2") for k, p in enumerate(["CPU[0,1]", "CPU[100,101]", "CPU[70]"])]
    prof = make_profile(rows, cores=128)
    res = rass(DiscreteProblem(prof, "max A; min L", tasks=["t1", "t2"]))
    assert res.ok
    d0 = [prof.config(c).processor for c in res.designs["d0"].configs]
    assert all(p.startswith("CPU[") for p in d0)


@pytest.mark.parametrize("weights, msg", [
    ("A=inf", "weight"), ("A=1e200", "weight"), ("A=0,L=0", "weight 0"), ("A=nan", "weight"),
    ({"A": float("inf")}, "weight"), ({"A": True}, "weight"),
])
def test_weights_that_make_optimality_nan_or_inf_are_refused(weights, msg):
    prof = make_profile(ROWS)
    with pytest.raises(InputError, match=msg):
        DiscreteProblem(prof, "max A; min L", weights=weights)


@pytest.mark.parametrize("opts", [dict(n_gen=0), dict(pop_size=0), dict(pop_size=-3),
                                  dict(n_gen=10 ** 9), dict(pop_size=True)])
def test_evolutionary_budgets_are_checked(opts):
    with pytest.raises(InputError):
        solve(DiscreteProblem(make_profile(ROWS), "max A; min L"), "nsga2", **opts)


@pytest.mark.parametrize("argv", [["--generations", "0"], ["--pop-size", "0"],
                                  ["--pop-size", "-1"], ["--generations", "x"]])
def test_cli_budgets_are_one_line(tmp_path, capsys, argv):
    p = _profile_file(tmp_path, lambda d: None)
    with pytest.raises(SystemExit) as e:
        main(["solve", "--profile", str(p), "--slo", "max A", "--solver", "nsga2", *argv])
    assert e.value.code == 2 and argv[0] in capsys.readouterr().err


@pytest.mark.parametrize("name", ["this.x", "os.system", "pymoo.algorithms.moo.nsga2.np",
                                  "pymoo.algorithms.moo.nsga2.os", "antigravity.fly"])
def test_a_solver_name_never_imports_an_arbitrary_module(name):
    """`--solver this.x` printed the Zen of Python."""
    code = ("import sys; from conftest import make_profile; from workbench.solvers import solve;"
            "from workbench.moo.problem import DiscreteProblem; from workbench.errors import "
            "InputError\nrows=[dict(id='a', L=1.0, A=2.0)]\n"
            f"try:\n    solve(DiscreteProblem(make_profile(rows), 'max A'), {name!r})\n"
            "except InputError as e:\n    print('refused', e)\n"
            "print('loaded', sorted(m for m in ('this', 'antigravity') if m in sys.modules))")
    tests = Path(__file__).parent
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=tests)
    assert r.returncode == 0, r.stderr[-1500:]
    assert "refused" in r.stdout and "loaded []" in r.stdout
    assert "Beautiful is better" not in r.stdout


LOG = """STARTING!
Graph: [m_fp32.tflite]
Num threads: [1]
count=50 first=1000 curr=1000 min={lo} max={hi} avg=1000 std={std}
Inference timings in us: Init: 100, First inference: 1200, Warmup (avg): 1000, Inference (avg): {avg}
"""


@pytest.mark.parametrize("fields, msg", [
    (dict(avg="1.2.3"), "line 5"), (dict(avg="--"), "line 5"), (dict(avg="e"), "line 5"),
    (dict(avg="1e400"), "line 5"), (dict(avg="0"), "> 0"), (dict(avg="-5"), "line 5"),
    (dict(lo="2000", hi="900"), "min is greater than max"), (dict(std="nan"), "line 4"),
])
def test_malformed_numbers_in_benchmark_logs_name_the_line(tmp_path, fields, msg):
    vals = dict(lo="900", hi="1100", std="10", avg="1000") | fields
    p = tmp_path / "run.log"
    p.write_text(LOG.format(**vals))
    with pytest.raises(InputError, match=msg) as e:
        import_benchmark_log(p, model="m", precision="FP32")
    assert "run.log" in str(e.value)


def test_a_csv_with_l_min_above_l_max_names_the_column(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("config,model,precision,processor,L,L_min,L_max\nc1,m,FP32,CPU,5,7,6\n")
    with pytest.raises(InputError, match="column L_min"):
        import_csv(p)


def _import_into(args):
    from workbench.cli import main as cli_main
    return cli_main(args)


def test_concurrent_imports_into_one_profile_lose_no_rows(tmp_path):
    base = tmp_path / "base.json"
    base.write_text(make_profile([dict(id="seed", model="s", L=1.0, A=1.0)]).model_dump_json(
        exclude_none=True))
    tables = []
    for k in range(6):
        t = tmp_path / f"t{k}.csv"
        t.write_text(f"config,model,precision,processor,L,A\nr{k},m{k},FP32,CPU,{k + 1},50\n")
        tables.append(["profiles", "import", str(t), "--into", str(base)])
    with multiprocessing.get_context("fork").Pool(6) as pool:
        assert pool.map(_import_into, tables) == [0] * 6
    ids = {c.id for c in load_profile(base).configs}
    assert ids == {"seed", *(f"r{k}" for k in range(6))}


def test_rows_the_slo_cannot_rank_are_named_not_silently_dropped(tmp_path, capsys):
    p = _profile_file(tmp_path, lambda d: d["configs"][0].pop("L"))
    assert main(["solve", "--profile", str(p), "--slo", "max A; min L"]) == 0
    assert "1 configuration of task 't' lacks a value the SLO needs and is left out" in \
        capsys.readouterr().out


@pytest.mark.parametrize("slo", ["max A; max L <= -5ms", "max A; MF <= -1MB"])
def test_a_negative_bound_is_refused_with_a_caret(slo):
    from workbench.moo.slo import SLOError, parse_slo

    with pytest.raises(SLOError, match="never negative") as e:
        parse_slo(slo)
    assert "^" in str(e.value)


def test_a_weight_given_twice_is_refused():
    from workbench.moo.slo import parse_weights

    with pytest.raises(InputError, match="twice"):
        parse_weights("A=1, A=2")


@pytest.mark.parametrize("fields, msg", [
    (dict(threads="-2"), "line 3"), (dict(threads="x"), "line 3"), (dict(threads="0"), "line 3"),
    (dict(count="0"), "line 4"), (dict(mem="nan"), "line 6"), (dict(mem="-1"), "line 6"),
])
def test_bad_thread_counts_runs_and_memory_in_logs_name_the_line(tmp_path, fields, msg):
    vals = dict(threads="4", count="50", mem="9.5") | fields
    p = tmp_path / "run.log"
    p.write_text(LOG2.format(**vals))
    with pytest.raises(InputError, match=msg):
        import_benchmark_log(p, model="m", precision="FP32")


def test_num_threads_minus_one_is_the_runtimes_default(tmp_path):
    p = tmp_path / "run.log"
    p.write_text(LOG2.format(threads="-1", count="50", mem="9.5"))
    prof = import_benchmark_log(p, model="m", precision="FP32")
    assert prof.configs[0].threads is None and prof.configs[0].MF == 9.5


LOG2 = """STARTING!
Graph: [m_fp32.tflite]
Num threads: [{threads}]
count={count} first=1000 curr=1000 min=900 max=1100 avg=1000 std=10
Inference timings in us: Init: 100, First inference: 1200, Warmup (avg): 1000, Inference (avg): 1000
Peak memory footprint (MB): init=3.1 overall={mem}
"""


@pytest.mark.parametrize("bad, flag", [
    (["--period-ms", "1e9"], "--period-ms"), (["--period-ms", "-1"], "--period-ms"),
    (["--memory-low-mb", "1e15"], "--memory-low-mb"), (["--memory-used-high-mb", "nan"],
                                                       "--memory-used-high-mb"),
    (["--rate", "inf"], "--rate"), (["--duration", "1e12"], "--duration"),
])
def test_run_flags_are_checked_before_the_bundle_is_read(tmp_path, capsys, bad, flag):
    """The run flags that are runtime options are checked by RuntimeOptions itself (one place),
    and named by flag, before anything is loaded."""
    assert main(["run", str(tmp_path / "no-bundle"), *bad]) == 1
    err = capsys.readouterr().err
    assert flag in err and "no-bundle" not in err and len(err.strip().splitlines()) == 1
