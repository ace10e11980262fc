"""`import workbench` stays light: a device runtime has only numpy and LiteRT."""

import subprocess
import sys

HEAVY = ["tensorflow", "torch", "plotly", "ipywidgets", "pydantic", "pandas"]


def _loaded_after(stmt: str) -> set[str]:
    code = (f"import sys; {stmt}; "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(filter(None, r.stdout.strip().split(",")))


def test_import_workbench_loads_no_heavy_module():
    assert _loaded_after("import workbench") == set()


def test_computation_modules_load_no_plotting_or_ml_frameworks():
    loaded = _loaded_after("import workbench.profiles, workbench.moo, workbench.papers, "
                           "workbench.cli, workbench.profiles.phone_model")
    assert not loaded & {"tensorflow", "torch", "plotly", "ipywidgets"}


def test_the_runtime_imports_only_numpy_and_the_standard_library():
    code = ("import sys; import workbench.runtime, workbench.runtime.run; "
            "print(','.join(sorted({m.split('.')[0] for m in sys.modules})))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    third_party = set(r.stdout.strip().split(",")) - set(sys.stdlib_module_names) - {
        "workbench", "numpy"}
    assert {m for m in third_party if not m.startswith("_")} == set()
