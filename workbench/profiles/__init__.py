"""Device profiles: schema, JSON storage, importers and the analytical phone model."""

from .schema import (
    LATENCY_FIELDS,
    METRIC_FIELDS,
    PRECISIONS,
    Accelerator,
    CoExecution,
    Config,
    CpuCluster,
    Device,
    Engine,
    EngineOptions,
    Profile,
    Provenance,
    Task,
    processor_kind,
)
from .store import list_profiles, load_profile, profile_from_dict, resolve_profile, save_profile

__all__ = [
    "LATENCY_FIELDS", "METRIC_FIELDS", "PRECISIONS", "Accelerator", "CoExecution", "Config",
    "CpuCluster", "Device", "Engine", "EngineOptions", "Profile", "Provenance", "Task",
    "processor_kind", "list_profiles", "load_profile", "profile_from_dict", "resolve_profile",
    "save_profile",
]
