"""`import workbench` stays light: a device runtime has only numpy and LiteRT."""

import subprocess
import sys

import pytest

HEAVY = ["tensorflow", "torch", "plotly", "ipywidgets", "pydantic", "pandas", "dask", "distributed"]


def _loaded_after(stmt: str) -> set[str]:
    code = (f"import sys; {stmt}; "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(filter(None, r.stdout.strip().split(",")))


def test_import_workbench_loads_no_heavy_module():
    assert _loaded_after("import workbench") == set()


def test_computation_modules_load_no_plotting_or_ml_frameworks():
    loaded = _loaded_after("import workbench.profiles, workbench.moo, workbench.papers, "
                           "workbench.cli, workbench.profiles.phone_model, workbench.lab.sweep")
    assert not loaded & {"tensorflow", "torch", "plotly", "ipywidgets", "dask", "distributed"}


def test_the_runtime_imports_only_numpy_and_the_standard_library():
    code = ("import sys; import workbench.runtime, workbench.runtime.run; "
            "print(','.join(sorted({m.split('.')[0] for m in sys.modules})))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    third_party = set(r.stdout.strip().split(",")) - set(sys.stdlib_module_names) - {
        "workbench", "numpy"}
    assert {m for m in third_party if not m.startswith("_")} == set()


def test_the_front_door_names_the_entry_points_without_importing_them():
    code = ("import sys, workbench; names = dir(workbench); "
            "print(all(n in names for n in ('solve', 'load_profile', 'RuntimeManager')), "
            "'workbench.solvers' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.split() == ["True", "False"]  # listed, but nothing imported yet


def test_the_front_door_runs_a_whole_solve():
    import workbench as wb

    uc = wb.use_case("uc1")
    problem = wb.DiscreteProblem(wb.load_profile("s20fe"), uc.slo, tasks=list(uc.tasks))
    result = wb.solve(problem)
    assert isinstance(result, wb.SolveResult) and result.ok and "d0" in result.designs
    assert wb.rass(problem).d0.configs == result.d0.configs
    with pytest.raises(AttributeError, match="no_such_entry_point"):
        wb.no_such_entry_point  # noqa: B018


def test_the_front_door_lists_exactly_its_entry_points():
    import workbench

    assert set(workbench.__all__) == set(workbench._ENTRY_POINTS) | {"__version__"}
