"""This machine as a profile describes it: the device record, the engine and library versions,
and the modelled core power used where RAPL cannot be read."""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np

from ... import processors
from ...power import HOST_CORE
from ...procfs import cpu_model
from ...profiles.schema import CpuCluster, Device

#: Modelled power of one busy core when RAPL cannot be read (this is a VM: /sys/class/powercap
#: is absent); see workbench.power.
MODELLED_CORE_POWER_W = HOST_CORE.busy_w


def _cpu_ghz() -> float:
    try:
        mhz = [float(line.split(":")[1]) for line in Path("/proc/cpuinfo").read_text().splitlines()
               if line.startswith("cpu MHz")]
        return round(max(mhz) / 1000, 2) if mhz else 1.0
    except (OSError, ValueError):
        return 1.0


def _ram_gb() -> float | None:
    try:
        kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                  if line.startswith("MemTotal"))
        return round(kb / 2 ** 20, 1)
    except (OSError, StopIteration, ValueError):
        return None


def host_device() -> Device:
    cores = sorted(processors.machine_cores())
    return Device(name="host", display_name=f"this machine ({cpu_model()})", soc=cpu_model(),
                  os=f"{platform.system()} {platform.release()}",
                  cpu_clusters=[CpuCluster(core=cpu_model(), count=len(cores), ghz=_cpu_ghz(),
                                           core_ids=cores)],
                  ram_gb=_ram_gb(), governors=[])


def _engine_note(path: Path) -> str:
    """Names the engine in a row's note where it is not LiteRT (the profile's method)."""
    if str(path).endswith(".onnx"):
        from ...runtime.ort import version

        return f" with onnxruntime {version()} (CPU provider)"
    return ""


def _versions(onnx: bool = False) -> dict[str, str]:
    out = {"python": platform.python_version(), "numpy": np.__version__}
    for mod in ("ai_edge_litert", "tensorflow") + (("onnxruntime",) if onnx else ()):
        try:
            from importlib.metadata import version
            out[mod] = version(mod.replace("_", "-") if mod == "ai_edge_litert" else mod)
        except Exception:  # noqa: BLE001 - a version we cannot read is simply not reported
            pass
    return out
