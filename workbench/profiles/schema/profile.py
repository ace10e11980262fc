"""A whole profile: the device, its engines, tasks and configuration table, with what else a
profile may hold (co-execution rows, multi-exit models, failed configurations, provenance) and
the checks across them (unique ids, known engines and tasks)."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, field_validator, model_validator

from ...errors import InputError
from ...metrics import COLUMNS
from .base import ModelName, PathError, Source, TaskName, _Strict
from .config import Config, FailedConfig
from .device import Device, Engine, Task


class CoExecution(_Strict):
    """Metrics of several configurations run concurrently (multi-DNN rows).

    ``latency[i]`` holds the mean latency (ms) of ``configs[i]`` under co-execution, L_i^M.
    """

    configs: list[str] = Field(min_length=2)
    L: list[float] = Field(description="Per-model mean latency under co-execution (ms).")
    L_std: list[float] | None = None
    MF: float | None = Field(default=None, ge=0, description="Combined peak memory (MB).")
    source: Source
    note: str | None = None

    @model_validator(mode="after")
    def _lengths(self) -> "CoExecution":
        for name in ("L", "L_std"):
            vals = getattr(self, name)
            if vals is None:
                continue
            if len(vals) != len(self.configs):
                raise ValueError(f"{name} has {len(vals)} values for {len(self.configs)} configs")
            if any(not math.isfinite(v) or v < 0 for v in vals):
                raise ValueError(f"{name} values must be finite numbers >= 0")
        return self


class Provenance(_Strict):
    """Where a profile came from, so every report can say what it shows."""

    method: str = Field(description="e.g. 'analytical model', 'LiteRT interpreter on host'.")
    tool: str = "workbench"
    tool_version: str | None = None
    created: str | None = Field(default=None, description="ISO date; omitted for modelled "
                                "profiles so regeneration is byte-identical.")
    citation: str | None = None
    host: dict[str, str] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


class ExitRow(_Strict):
    """One exit of a stored multi-exit model (cumulative costs to reach and run it)."""

    exit: int = Field(ge=1)
    latency_ms: float = Field(ge=0)
    accuracy: float = Field(ge=0, le=1)
    flops: float | None = Field(default=None, ge=0)
    energy_mj: float | None = Field(default=None, ge=0)
    confidence_mean: float | None = Field(default=None, ge=0, le=1)


class MultiExitModel(_Strict):
    """Delen's exit profile of one stored multi-exit model on this device. Its operating points
    (each exit, each Pareto threshold vector) appear as configurations named ``ARCH@POINT``."""

    name: ModelName = Field(min_length=1)
    task: TaskName
    arch: ModelName = Field(min_length=1)
    processor: str
    threads: int = Field(default=1, ge=1)
    size_mb: float | None = Field(default=None, ge=0)
    source: Source
    note: str | None = None
    #: Where its segments were stored when it was built (``<zoo>/multiexit/<arch>``, the quick
    #: zoo's for ``--quick``): ``bundle`` looks there first, so a profile finds its own model.
    folder: str | None = Field(default=None, max_length=4096)
    exits: list[ExitRow] = Field(min_length=1)

    @model_validator(mode="after")
    def _ordered(self) -> "MultiExitModel":
        for k, e in enumerate(self.exits):
            if e.exit != k + 1:
                raise PathError(f"exits[{k}].exit", "exits are numbered 1, 2, ... in order",
                                e.exit)
            if k and e.latency_ms < self.exits[k - 1].latency_ms:
                raise PathError(f"exits[{k}].latency_ms", "cumulative latency cannot fall from "
                                "one exit to the next", e.latency_ms)
        return self


class Profile(_Strict):
    """A device profile: the device, its engines, tasks and the configuration table."""

    schema_version: Literal[1] = 1
    device: Device
    source: Source
    provenance: Provenance
    engines: list[Engine] = Field(default_factory=list)
    tasks: list[Task] = Field(default_factory=list)
    configs: list[Config] = Field(default_factory=list)
    coexecution: list[CoExecution] = Field(default_factory=list)
    contention: dict[str, float] = Field(
        default_factory=dict, description="Parameters of the multi-DNN contention model.")
    multi_exit: list[MultiExitModel] = Field(
        default_factory=list, description="Exit profiles of stored multi-exit models (Delen).")
    failed: list[FailedConfig] = Field(
        default_factory=list, description="Configurations tried that could not run, with why.")

    @field_validator("contention")
    @classmethod
    def _finite_parameters(cls, v: dict[str, float]) -> dict[str, float]:
        for k, x in v.items():
            # Negative parameters would make co-running models faster than alone (negative
            # latencies that win every SLO); past 100 the model has lost its meaning.
            if not (math.isfinite(x) and 0 <= x <= 100):
                raise ValueError(f"parameter {k!r} must be a number 0..100, got {x!r}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> "Profile":
        if not self.configs and not self.multi_exit:
            raise PathError("configs", "a profile needs at least one configuration", [])
        tasks = [t.name for t in self.tasks]
        for i, t in enumerate(tasks):
            if t in tasks[:i]:
                raise PathError(f"tasks[{i}].name", "duplicate task", t)
        seen: dict[str, int] = {}
        for i, c in enumerate(self.configs):
            if c.id in seen:
                raise PathError(f"configs[{i}].id",
                                f"duplicate config id (first at configs[{seen[c.id]}])", c.id)
            seen[c.id] = i
        names = [e.name for e in self.engines]
        if len(set(names)) != len(names):
            raise PathError("engines", "duplicate engine names", names)
        if names:
            for i, c in enumerate(self.configs):
                if c.processor not in names:
                    raise PathError(f"configs[{i}].processor", "not an engine of this device "
                                    f"(engines: {', '.join(names)})", c.processor)
        task_names = {t.name for t in self.tasks}
        if task_names:
            for i, c in enumerate(self.configs):
                if c.task not in task_names:
                    raise PathError(f"configs[{i}].task",
                                    f"unknown task (tasks: {', '.join(sorted(task_names))})", c.task)
        for k, m in enumerate(self.multi_exit):
            if task_names and m.task not in task_names:
                raise PathError(f"multi_exit[{k}].task", "unknown task", m.task)
            if names and m.processor not in names:
                raise PathError(f"multi_exit[{k}].processor", "not an engine of this device",
                                m.processor)
        for k, row in enumerate(self.coexecution):
            for cid in row.configs:
                if cid not in seen:
                    raise PathError(f"coexecution[{k}].configs", "unknown config id", cid)
        return self

    # -- convenience --------------------------------------------------------------------------
    def config(self, config_id: str) -> Config:
        """The configuration with this id (KeyError naming the id if absent)."""
        for c in self.configs:
            if c.id == config_id:
                return c
        raise InputError(f"no such configuration in profile {self.device.name!r}", value=config_id)

    def task(self, name: str) -> Task:
        for t in self.tasks:
            if t.name == name:
                return t
        return Task(name=name)

    def engine(self, name: str) -> Engine | None:
        for e in self.engines:
            if e.name == name:
                return e
        return None

    def columns(self, *names: str, task: str | None = None):
        """Metric columns as float numpy arrays (NaN where a row lacks the value).

        Args:
            *names: Metric names from ``COLUMNS`` (default: all of them).
            task: Keep only the rows of this task.
        """
        import numpy as np

        rows = [c for c in self.configs if task is None or c.task == task]
        names = names or COLUMNS
        out = {}
        for n in names:
            if n not in COLUMNS:
                raise InputError(f"unknown metric; known: {', '.join(COLUMNS)}", value=n)
            out[n] = np.array([np.nan if getattr(c, n) is None else getattr(c, n) for c in rows],
                              dtype=float)
        return out
