"""The profiling farm's core on Dask: two local workers stand in for two devices; every job for
a device runs on the worker that holds it (docs/profiling-farm.md)."""

import pytest

from workbench.errors import InputError
from workbench.lab.sweep import farm


def test_jobs_run_only_on_the_worker_that_holds_their_device(dask_cluster):
    from dask.distributed import Client

    address, start_worker = dask_cluster
    for dev in ("a", "b"):
        start_worker("--resources", f"{farm.resource(dev)}=1")
    with Client(address, timeout="30s") as client:
        client.wait_for_workers(2, timeout=60)
        got = farm.run_on_devices(client, farm.devices_here, {"a": [(i,) for i in range(4)],
                                                              "b": [(i,) for i in range(3)]})
    assert got == {"a": [(i, ["a"]) for i in range(4)], "b": [(i, ["b"]) for i in range(3)]}


def test_a_device_name_is_a_resource_name():
    assert farm.resource("s20fe") == "device-s20fe"
    with pytest.raises(InputError):
        farm.resource("s20 fe")
