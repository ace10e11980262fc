"""The profiling farm's core on Dask: two local workers stand in for two devices; every job for
a device runs on the worker that holds it (docs/profiling-farm.md)."""

import json
import subprocess
import sys
import time

import pytest

from workbench.errors import InputError
from workbench.lab import farm

pytest.importorskip("distributed")


def test_jobs_run_only_on_the_worker_that_holds_their_device(tmp_path):
    from dask.distributed import Client

    file = tmp_path / "scheduler.json"
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host",
                               "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file",
                               str(file)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + 60
        while not file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(file.read_text())["address"]
        for dev in ("a", "b"):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
                 "--no-dashboard", "--resources", f"{farm.resource(dev)}=1"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
            got = farm.run_on_devices(client, farm.devices_here, {"a": [(i,) for i in range(4)],
                                                                  "b": [(i,) for i in range(3)]})
        assert got == {"a": [(i, ["a"]) for i in range(4)], "b": [(i, ["b"]) for i in range(3)]}
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=30)


def test_a_device_name_is_a_resource_name():
    assert farm.resource("s20fe") == "device-s20fe"
    with pytest.raises(InputError):
        farm.resource("s20 fe")
