"""A profiling farm on Dask: workers that each hold a device, jobs that need that device.

Each device is a Dask *worker resource* (``dask worker ADDRESS --resources "device-s20fe=1"``,
started on the machine the phone is plugged into); a job submitted with
``resources={"device-s20fe": 1}`` runs only on that worker, one at a time, so two profiling runs
never share a phone. Nothing here reaches a phone (docs/profiling-farm.md says what would have
to be added: adb, benchmark_model, pushing models); the test stands two local workers in for
two devices.
"""

from __future__ import annotations

from typing import Any, Callable

#: The resource name of a device on its worker.
PREFIX = "device-"


def resource(device: str) -> str:
    """The worker resource that stands for ``device`` (what ``--resources`` names)."""
    if not device or any(c in device for c in " =,"):
        from ...errors import InputError

        raise InputError("a device name without spaces, '=' or ','", where="device", value=device)
    return PREFIX + device


def run_on_devices(client: Any, fn: Callable[..., Any], jobs: dict[str, list[tuple]]
                   ) -> dict[str, list[Any]]:
    """Run ``fn(*args)`` for every job on the worker holding its device; results per device in
    job order. A device no worker holds waits for one to join (Dask's resource semantics)."""
    futures = {dev: [client.submit(fn, *args, resources={resource(dev): 1}, pure=False)
                     for args in arg_list] for dev, arg_list in jobs.items()}
    return {dev: [f.result() for f in fs] for dev, fs in futures.items()}


def devices_here(*job: Any) -> tuple:
    """The job's arguments and the devices the worker running it holds: what a profiling job
    records as where it ran (and what the farm's test checks)."""
    from distributed import get_worker

    held = get_worker().state.total_resources
    return (*job, sorted(k[len(PREFIX):] for k in held if k.startswith(PREFIX)))
