"""A loaded bundle (:class:`Bundle`: its checked manifest, which designs are usable and why the
others are not, the verified bytes of the models it serves) and :func:`load_bundle`, which reads
one. Standard library only."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import processors
from .files import ModelFault, read_verified
from .manifest import _need, check_config, check_design, check_models, check_policy, check_tasks, read_manifest
from .specs import MANIFEST, BundleError, ConfigSpec, DesignSpec, cores_of


@dataclass
class Bundle:
    """A loaded bundle. ``usable`` holds the roles whose every model file passed its checksum;
    ``problems`` says why each other design was removed."""

    root: Path
    manifest: dict[str, Any]
    tasks: list[dict[str, Any]]
    configs: dict[str, ConfigSpec]
    designs: dict[str, DesignSpec]
    triggers: list[str]
    policy_vector: list[str | None]
    fallback: list[str]
    bad_files: dict[str, str] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    _blobs: dict[str, bytes] = field(default_factory=dict, repr=False)

    @property
    def task_names(self) -> list[str]:
        return [t["name"] for t in self.tasks]

    @property
    def usable(self) -> list[str]:
        return [r for r in self.designs if r not in self.problems]

    def path_of(self, config_id: str) -> Path:
        return self.root / self.configs[config_id].file

    def model_bytes(self, config_id: str) -> bytes:
        """The configuration's model, read once and verified (cached: every later load runs the
        same bytes). Raises ModelFault if the file is missing or not what the manifest names."""
        return self.file_bytes(self.configs[config_id].file)

    def file_bytes(self, rel: str) -> bytes:
        """Any file the manifest lists, read once and verified (a multi-exit segment)."""
        blob = self._blobs.get(rel)
        if blob is None:
            blob = self._blobs[rel] = read_verified(self.root / rel,
                                                    self.manifest["models"][rel]["sha256"])
        return blob

    def weights_dir(self, config_id: str) -> Path:
        """Where a memory-mode configuration's program reads its weight files from."""
        return (self.root / self.configs[config_id].file).parent

    def release(self, keep: set[str]) -> None:
        """Forget the bytes of models no configuration in ``keep`` uses (memory pressure); a
        later load reads and verifies them again."""
        files = {f for c in keep if c in self.configs for f in self.configs[c].files}
        for rel in list(self._blobs):  # list(): another thread may be adding a model
            if rel not in files:
                self._blobs.pop(rel, None)

    def remove(self, role: str, reason: str) -> None:
        """Take a design out of service (e.g. its model failed to load)."""
        self.problems.setdefault(role, reason)

    def remove_config(self, config_id: str, reason: str) -> list[str]:
        """Take every design using a configuration out of service; returns their roles."""
        hit = [r for r, d in self.designs.items() if config_id in d.configs]
        for r in hit:
            self.remove(r, reason)
        return hit


def load_bundle(root: str | os.PathLike, *, verify: bool = True) -> Bundle:
    """Read and check a bundle folder.

    Args:
        root: The bundle folder (holding ``manifest.json``).
        verify: Check every model file's sha256 (a missing, truncated or altered file removes the
            designs that need it, with the reason in ``Bundle.problems``).

    Raises:
        BundleError: The manifest is missing, not JSON, of another format, or inconsistent
            (names the field); or no design is usable.
    """
    root = Path(root)
    mpath = root / MANIFEST
    m = read_manifest(root, mpath)
    tasks = check_tasks(m, mpath)
    names = [t["name"] for t in tasks]
    models = check_models(m, root, mpath)
    configs: dict[str, ConfigSpec] = {}
    for cid, c in _need(m, "configs", dict, mpath, "").items():
        configs[cid] = check_config(cid, c, names, models, mpath)
    designs: dict[str, DesignSpec] = {}
    for role, d in _need(m, "designs", dict, mpath, "").items():
        designs[role] = check_design(role, d, names, configs, mpath)
    if not designs:
        raise BundleError("the bundle has no designs", file=mpath, where="designs")
    triggers, vector, fallback = check_policy(m, designs, mpath)
    b = Bundle(root, m, tasks, configs, designs, triggers, vector, fallback)
    if verify:
        _verify(b, models)
    _remove_undrivable(b)
    if not b.usable:
        why = "; ".join(f"{r}: {p}" for r, p in b.problems.items())
        raise BundleError(f"no usable design ({why})", file=root)
    return b


def _verify(b: Bundle, models: dict) -> None:
    """Hash every model file; a bad one removes the designs whose configurations need it."""
    # The same check the runtime makes of the bytes it serves (read, not kept: loading a
    # design reads and checks them again, so a file changed after this is caught then).
    for f, info in models.items():
        try:
            read_verified(b.root / f, info["sha256"])
        except ModelFault as e:
            b.bad_files[f] = e.reason
    for cid, c in b.configs.items():
        bad = [f for f in c.files if f in b.bad_files]
        if bad:
            b.remove_config(cid, f"{bad[0]}: {b.bad_files[bad[0]]}")


def _remove_undrivable(b: Bundle) -> None:
    """Remove the designs needing a processor this runtime cannot drive or cores this machine
    lacks."""
    have = processors.machine_cores()
    for role, d in b.designs.items():
        for cid in d.configs:
            cores = cores_of(b.configs[cid].processor)
            if cores is None:
                b.remove(role, f"{b.configs[cid].processor} cannot be driven by this runtime")
            elif not set(cores) <= have:
                b.remove(role, f"{b.configs[cid].processor} needs cores this machine lacks (it "
                         f"has {','.join(map(str, sorted(have)))})")
