"""Device profiles: schema, JSON storage, importers and the analytical phone model."""

from .schema import (
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
)
from .store import list_profiles, load_profile, profile_from_dict, resolve_profile, save_profile

__all__ = [
    "PRECISIONS", "Accelerator", "CoExecution", "Config",
    "CpuCluster", "Device", "Engine", "EngineOptions", "Profile", "Provenance", "Task",
    "list_profiles", "load_profile", "profile_from_dict", "resolve_profile",
    "save_profile",
]
