"""The device side of a profile: CPU clusters and accelerators as the spec sheet gives them, the
device, its compute engines with their tunable options, and the tasks its table serves."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator, model_validator

from ... import processors
from ...memorymodes import MemoryMode
from .base import (
    MAX_BATCH,
    MAX_CORE_ID,
    MAX_THREADS,
    PRECISIONS,
    Arithmetic,
    DeviceName,
    EngineKind,
    Precision,
    TaskName,
    _Strict,
)


class CpuCluster(_Strict):
    """A cluster of identical CPU cores (big.LITTLE devices have several)."""

    core: str = Field(description="Core type, e.g. 'Cortex-A76'.")
    count: int = Field(ge=1, le=MAX_CORE_ID + 1)
    ghz: float = Field(gt=0, le=6.0, description="Maximum clock in GHz (at most 6: a number in MHz "
                                                  "is refused, not modelled as a 1000x faster core).")
    core_ids: list[Annotated[int, Field(ge=0, le=MAX_CORE_ID)]] | None = Field(
        default=None, description="OS core ids, where known.")


class Accelerator(_Strict):
    """A GPU, NPU or DSP as the spec sheet names it, with its peak throughput where known (the
    phone model runs an accelerator from these figures, never from its name)."""

    name: DeviceName
    clock_mhz: float | None = Field(default=None, gt=0)
    fp32_gflops: float | None = Field(default=None, gt=0, description="Peak FP32 GFLOPS (GPU).")
    fp16_gflops: float | None = Field(default=None, gt=0, description="Peak FP16 GFLOPS (GPU).")
    int8_tops: float | None = Field(default=None, gt=0, description="Peak int8 TOPS (NPU, DSP).")
    fp16_tflops: float | None = Field(default=None, gt=0,
                                      description="Peak FP16 TFLOPS (NPU, DSP), where it has FP16.")
    note: str | None = None


class Device(_Strict):
    """What the device is (CARIn Table 6, OODIn Table I)."""

    name: DeviceName = Field(min_length=1, description="Short id, e.g. 's20fe'.")
    display_name: DeviceName | None = None
    soc: DeviceName | None = None
    launch: str | None = None
    os: str | None = None
    cpu_clusters: list[CpuCluster] = Field(default_factory=list)
    gpu: Accelerator | None = None
    npu: Accelerator | None = None
    dsp: Accelerator | None = None
    ram_gb: float | None = Field(default=None, gt=0)
    ram_mhz: float | None = Field(default=None, gt=0)
    dram_gbps: float | None = Field(default=None, gt=0, description=(
        "Peak DRAM bandwidth in GB/s (default for modelling: ram_mhz x 2 transfers x 64-bit bus)."))
    tdp_w: float | None = Field(default=None, gt=0)
    battery_mah: float | None = Field(default=None, gt=0)
    governors: list[str] = Field(default_factory=list, description="DVFS governors available.")
    note: str | None = Field(default=None, description="Where the spec's numbers come from.")

    @property
    def n_cores(self) -> int:
        return sum(c.count for c in self.cpu_clusters)


class EngineOptions(_Strict):
    """The tunable options of a compute engine, op(ce) in CARIn section 6.4."""

    threads: list[Annotated[int, Field(ge=1, le=MAX_THREADS)]] = Field(default_factory=list)
    xnnpack: list[bool] = Field(default_factory=list)
    delegate_precision: list[Arithmetic] = Field(default_factory=list)
    governors: list[str] = Field(default_factory=list)
    memory_modes: list[MemoryMode] = Field(default_factory=list)

    @field_validator("threads")
    @classmethod
    def _positive_threads(cls, v: list[int]) -> list[int]:
        if any(t < 1 for t in v):
            raise ValueError("thread counts must be >= 1")
        return v


class Engine(_Strict):
    """A compute engine the configurations can run on (a 'processor' in the table)."""

    name: str = Field(description="Processor id used by the configurations, e.g. 'GPU', 'CPU[0]'.")
    kind: EngineKind
    precisions: list[Precision] = Field(
        default_factory=lambda: list(PRECISIONS),
        description="Model precisions the engine can run (natively or by fallback).")
    native: list[Arithmetic] = Field(
        default_factory=list, description="Arithmetic the engine runs natively.")
    core_ids: list[Annotated[int, Field(ge=0, le=MAX_CORE_ID)]] | None = Field(
        default=None, description="CPU affinity of this processor.")
    options: EngineOptions = Field(default_factory=EngineOptions)

    @field_validator("name")
    @classmethod
    def _known_processor(cls, v: str) -> str:
        processors.kind(v)
        return v

    @model_validator(mode="after")
    def _kind_matches_name(self) -> "Engine":
        if processors.kind(self.name) != self.kind:
            raise ValueError(f"engine {self.name!r} has kind {self.kind!r}; "
                             f"expected {processors.kind(self.name)!r}")
        return self


class Task(_Strict):
    """A DL task whose models are in the table; says how to read its accuracy column."""

    name: TaskName = Field(min_length=1)
    metric: str = Field(default="top1", description="What A holds, e.g. 'top1', 'MAE', 'mAP'.")
    higher_is_better: bool = True
    dataset: str | None = None
    batch: int = Field(default=1, ge=1, le=MAX_BATCH)
