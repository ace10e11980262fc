"""Deployment bundles as the device reads them: a manifest plus the model files it names.

Standard library only (plus numpy nowhere here): a device reads the manifest, checks each model
file's sha256 and keeps only the designs whose files are intact. A bad manifest is rejected with
the field that is wrong; a bad model file only removes the designs that need it.

Manifest (``manifest.json``)::

    {"format": "workbench-bundle", "version": 1, "solver": "rass", "slo": "...",
     "device": {...}, "tasks": [{"name", "batch", "metric", "higher_is_better"}],
     "models": {"h1/MobileNetV2-1.0/FFX8.tflite": {"sha256": "...", "bytes": 123}},
     "configs": {"<config id>": {"task", "model", "precision", "processor", "cores", "threads",
                                 "xnnpack", "batch", "file", "expected": {"L": ..., "A": ...},
                                 "memory": {"mode": "planned", "budget_mb": 1.5,
                                            "weights": ["models/.../conv1.0-32.bin", ...]}}},
     "designs": {"d0": {"configs": [...], "labels": [...], "optimality": ..., "trigger": ...}},
     "triggers": ["CPU[0]", ...], "policy": [{"when": {...}, "design": "d1"}],
     "policy_vector": ["d0", "d1", ...], "fallback": ["d0", "d1", "dw", ...],
     "storage": {...}}

The package holds what a manifest describes (:mod:`.specs`), the model files and their checks
(:mod:`.files`), the manifest's checks (:mod:`.manifest`) and the loaded bundle (:mod:`.load`).
"""

from .files import MAX_MODEL_BYTES as MAX_MODEL_BYTES
from .files import ModelFault as ModelFault
from .files import inside as inside
from .files import read_verified as read_verified
from .files import sha256_of as sha256_of
from .load import Bundle as Bundle
from .load import load_bundle as load_bundle
from .specs import FORMAT as FORMAT
from .specs import MANIFEST as MANIFEST
from .specs import MAX_BATCH as MAX_BATCH
from .specs import MAX_MANIFEST_BYTES as MAX_MANIFEST_BYTES
from .specs import MAX_THREADS as MAX_THREADS
from .specs import VERSION as VERSION
from .specs import BundleError as BundleError
from .specs import ConfigSpec as ConfigSpec
from .specs import DesignSpec as DesignSpec
from .specs import cores_of as cores_of
