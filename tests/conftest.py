import json
import os
from pathlib import Path

import pytest

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Two workers on two cores: OpenMP threads (torch's) that spin while they wait take the core
    # the other worker needs (a 10 s multi-exit build took minutes). Waiting threads sleep here;
    # set before any test imports torch, and inherited by the subprocesses and kernels tests run.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("KMP_BLOCKTIME", "0")

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[1]

try:  # Hypothesis writes nothing into the tree: no example database, and its other caches
    # (e.g. constants collected from the source) in a temporary folder, not ./.hypothesis.
    import tempfile

    from hypothesis import settings
    from hypothesis.configuration import set_hypothesis_home_dir

    set_hypothesis_home_dir(tempfile.mkdtemp(prefix="workbench-hypothesis-"))
    settings.register_profile("workbench", database=None)
    settings.load_profile("workbench")
except ImportError:  # pragma: no cover - hypothesis is a dev dependency
    pass


#: Fixtures that train the quick zoo (about 80 s once per session): tests using them are slow.
SLOW_FIXTURES = {"quick_zoo", "quick_profile"}


#: Tests that time things, limit memory or CPU, or load the whole machine: `make test` runs them
#: alone after the rest has run on both cores (pytest-xdist), so another test's load cannot move
#: what they measure. Whole modules, and single tests of modules that are otherwise safe.
SERIAL_MODULES = {
    "test_runtime_live", "test_runtime_trust", "test_runtime_light_install", "test_throttle",
    "test_pressure", "test_memory", "test_flexnn_fig10", "test_masa_ledger",
    "test_explorer_browser", "test_explorer_trust", "test_registry_trust", "test_oodin_load",
    "test_profiling_stats", "test_host_pipeline", "test_sweep",
}
SERIAL_TESTS = {
    "test_multiexit_torch.py": ("test_trace_driven_serving", "test_serving_calibrates",
                                "test_the_limiter_holds", "test_work_conserving",
                                "test_the_runtime_serves", "test_workbench_run_serves",
                                "test_the_runtime_holds"),
}


#: Module fixtures that build something expensive (a trained net, converted models): the tests
#: using one stay on one pytest-xdist worker (``--dist loadgroup``), so it is built once.
GROUPED_FIXTURES = {"h1", "keras_gallery", "multi", "two_inputs", "rnn", "cnn", "files", "models",
                    "memory_rows"}


def pytest_collection_modifyitems(config, items):
    """The tiers, decided in one place. Slow: zoo training (the quick-zoo fixtures), notebook
    runs and whatever a module marks slow itself (the torch engine, the browser, a fresh venv).
    Serial: :data:`SERIAL_MODULES` and :data:`SERIAL_TESTS`, and every test that trains the quick
    zoo (its fixture is built once in the serial run rather than once per worker)."""
    for item in items:
        if item.get_closest_marker("notebook") or SLOW_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.slow)
        module = item.path.stem
        if (module in SERIAL_MODULES or SLOW_FIXTURES & set(item.fixturenames)
                or item.name.startswith(SERIAL_TESTS.get(item.path.name, ("\0",)))):
            item.add_marker(pytest.mark.serial)
        elif GROUPED_FIXTURES & set(item.fixturenames) and config.pluginmanager.hasplugin(
                "xdist"):
            item.add_marker(pytest.mark.xdist_group(module))


@pytest.fixture(scope="session", autouse=True)
def workspace_home(tmp_path_factory):
    """Every test runs in a throw-away workspace (WORKBENCH_HOME), so nothing a test writes by
    default (dataset caches, zoo models, profiles, quick reports) lands in the source tree.
    Profile names still find the checkout's committed profiles."""
    home = tmp_path_factory.mktemp("home")
    saved = os.environ.get("WORKBENCH_HOME")
    os.environ["WORKBENCH_HOME"] = str(home)
    yield home
    if saved is None:
        os.environ.pop("WORKBENCH_HOME", None)
    else:
        os.environ["WORKBENCH_HOME"] = saved


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture
def minimal_profile() -> dict:
    """A small valid profile as parsed JSON, for tests that corrupt one field at a time."""
    return {
        "device": {"name": "toy", "cpu_clusters": [{"core": "Cortex-A76", "count": 4, "ghz": 2.0}]},
        "source": "modelled",
        "provenance": {"method": "hand-written test fixture"},
        "engines": [{"name": "CPU", "kind": "CPU"}, {"name": "GPU", "kind": "GPU",
                                                      "precisions": ["FP32", "FP16"]}],
        "tasks": [{"name": "cls", "metric": "top1"}],
        "configs": [
            {"id": "a", "task": "cls", "model": "net", "precision": "FP32", "processor": "CPU",
             "threads": 4, "xnnpack": True, "A": 70.0, "L": 5.0, "L_min": 4.0, "L_max": 7.0,
             "MF": 20.0, "source": "modelled"},
            {"id": "b", "task": "cls", "model": "net", "precision": "FP16", "processor": "GPU",
             "A": 70.1, "L": 4.0, "MF": 40.0, "source": "modelled"},
        ],
    }


@pytest.fixture
def write_json(tmp_path):
    def _write(data, name="profile.json"):
        p = tmp_path / name
        p.write_text(json.dumps(data))
        return p
    return _write


def make_profile(rows, *, tasks=None, cores=4, clusters=None, contention=None, coexecution=None,
                 name="toy"):
    """A validated Profile from compact rows: dicts with id, processor, and metric fields."""
    from workbench.profiles import profile_from_dict

    rows = [dict({"processor": "CPU"}, **r) for r in rows]
    procs = sorted({r["processor"] for r in rows})
    kinds = {p: p.split("[")[0] for p in procs}
    task_names = tasks or sorted({r.get("task", "t") for r in rows})
    configs = []
    for r in rows:
        c = {"model": r.get("model", "m"), "precision": r.get("precision", "FP32"),
             "task": r.get("task", "t"), "source": "modelled"}
        c.update({k: v for k, v in r.items() if k not in ("higher",)})
        configs.append(c)
    return profile_from_dict({
        "device": {"name": name, "cpu_clusters": clusters or [{"core": "c", "count": cores,
                                                               "ghz": 2.0}]},
        "source": "modelled", "provenance": {"method": "test fixture"},
        "engines": [{"name": p, "kind": kinds[p]} for p in procs],
        "tasks": [{"name": t, "higher_is_better": not t.endswith("-mae")} for t in task_names],
        "configs": configs,
        "coexecution": coexecution or [],
        "contention": contention or {"same_processor_share": 1.0, "cpu_oversubscription": 0.5,
                                     "cross_processor": 0.1},
    })


@pytest.fixture
def hand_profile():
    """The hand-worked single-DNN example of tests/test_rass.py."""
    return make_profile([
        dict(id="a", model="m1", processor="CPU", threads=4, A=70, L=10, L_max=12, TP=100, W=1e9, MF=20),
        dict(id="b", model="m2", processor="CPU", threads=4, A=75, L=20, L_max=25, TP=50, W=2e9, MF=30),
        dict(id="c", model="m1", processor="GPU", A=70, L=8, L_max=9, TP=125, W=1e9, MF=50),
        dict(id="d", model="m2", processor="NPU", A=75, L=15, L_max=16, TP=200 / 3, W=2e9, MF=40),
        dict(id="e", model="m3", processor="CPU", threads=4, A=80, L=50, L_max=60, TP=20, W=4e9, MF=60),
    ])


@pytest.fixture(scope="session")
def quick_zoo(tmp_path_factory):
    """The quick zoo (h1, h3-vision, h3-audio), trained and quantised once per test session."""
    pytest.importorskip("tensorflow")
    from workbench.host import zoo

    root = tmp_path_factory.mktemp("zoo")
    data = tmp_path_factory.mktemp("data")
    recs = zoo.build(["h1", "h3"], quick=True, root=root, data_root=data, progress=False)
    return root, data, recs


@pytest.fixture(scope="session")
def quick_profile(quick_zoo, tmp_path_factory):
    """The quick zoo measured on this machine (few runs): (Profile, path)."""
    from workbench.host import profiling

    root, data, _ = quick_zoo
    out = tmp_path_factory.mktemp("prof") / "host.json"
    return profiling.profile_host(root, out, warmup=1, runs=5, coexec_seconds=0.1,
                                  data_root=data, progress=False, quick=True), out


#: The SLO of the runtime tests' h1 bundle.
H1_SLO = "max A; max TP; avg L <= 50ms"


@pytest.fixture(scope="module")
def h1_problem(quick_profile):
    """h1 of the quick host profile under H1_SLO."""
    from workbench.moo.problem import DiscreteProblem

    prof, _ = quick_profile
    return DiscreteProblem(prof, H1_SLO, tasks=["h1"])


@pytest.fixture
def h1_bundle(h1_problem, quick_zoo, tmp_path):
    """A RASS bundle of h1 with the quick zoo's real model files: (folder, result)."""
    from workbench.bundling import make_bundle
    from workbench.solvers import rass

    res = rass(h1_problem)
    make_bundle(res, h1_problem, tmp_path / "h1", models=quick_zoo[0])
    return tmp_path / "h1", res


@pytest.fixture
def dask_cluster(tmp_path):
    """A Dask scheduler started as its own process on 127.0.0.1 (as on a real cluster), and a
    function that starts a worker process for it (extra command-line arguments, e.g.
    ``--resources``); yields ``(address, start_worker)`` and stops everything afterwards."""
    import subprocess
    import sys
    import time

    pytest.importorskip("distributed")
    file = tmp_path / "scheduler.json"
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host",
                               "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file",
                               str(file)], **quiet)]
    try:
        deadline = time.monotonic() + 60
        while not file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(file.read_text())["address"]

        def start_worker(*args: str, cwd: str | None = None) -> None:
            procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker",
                                           address, "--nthreads", "1", "--no-dashboard", *args],
                                          cwd=cwd, **quiet))

        start_worker.scheduler_file = file  # type: ignore[attr-defined]
        yield address, start_worker
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=30)


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A workspace of this test's own (the models registry, scratch)."""
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path / "ws"))
    return tmp_path / "ws"


def one_error_line(capsys, *names):
    """The command's stderr was one `error:` line naming each of ``names``; returns it."""
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    for n in names:
        assert n in err, err
    return err


def stop_group(proc) -> None:
    """End a server started in its own process group (it and its kernels): TERM, then KILL."""
    import signal
    import subprocess

    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
            proc.wait(15)
            break
        except (ProcessLookupError, subprocess.TimeoutExpired):
            continue
