"""What a bundle manifest describes, once checked: its format's name, version and limits,
each runnable configuration (:class:`ConfigSpec`) and design (:class:`DesignSpec`), and the error
a bundle that cannot be used at all raises. Standard library only."""

from __future__ import annotations

from dataclasses import dataclass

from ... import processors
from ...errors import InputError

FORMAT = "workbench-bundle"
VERSION = 1
MANIFEST = "manifest.json"

#: What this runtime will run: more threads or a larger batch than this is a manifest error.
MAX_THREADS = processors.MAX_THREADS
MAX_BATCH = processors.MAX_BATCH
MAX_MANIFEST_BYTES = 64 << 20
#: The largest model file a bundle may hold (LiteRT's flatbuffers stop at 2 GiB).
MAX_MODEL_BYTES = 2 << 30


class BundleError(InputError):
    """A bundle that cannot be used at all (bad manifest, no usable design)."""



def cores_of(processor: str, n_cores: int | None = None) -> tuple[int, ...] | None:
    """The CPU cores a (validated) processor id runs on (``CPU[0,1]`` -> (0, 1); ``CPU`` -> every
    core); None for GPU/NPU/DSP, which this runtime cannot drive."""
    return processors.cores(processor, n_cores)


@dataclass(frozen=True)
class ConfigSpec:
    """One runnable configuration: a model file and how to run it."""

    id: str
    task: str
    model: str
    precision: str
    processor: str
    threads: int
    xnnpack: bool
    batch: int
    file: str
    expected: dict[str, float]
    #: ``planned`` or ``streamed``: ``file`` is a layer program run within ``memory_budget_mb``
    #: (:mod:`.programs`), reading ``weight_files`` as it runs; None: a LiteRT model.
    memory_mode: str | None = None
    memory_budget_mb: float | None = None
    weight_files: tuple[str, ...] = ()
    #: A multi-exit operating point: its criteria (text) and the stored model's exit segments
    #: (``file`` is the first), run with early exit (:mod:`.multiexit`); None: one model file.
    criteria: str | None = None
    segments: tuple[str, ...] = ()
    exit_accuracy: tuple[float, ...] = ()
    exit_flops: tuple[float, ...] = ()
    input_shape: tuple[int, ...] = ()
    #: For a model with several outputs, the one its answers are (index in the source model,
    #: serving-signature key, tensor name: see :func:`.interpreter.output_detail`); None: the
    #: model's first output.
    output: tuple[int, str | None, str | None] | None = None
    #: Every output of a model with several, in the source model's order, as ``output`` is:
    #: what a request for every output (``RuntimeManager.submit(every_output=True)``) gets, by
    #: name; empty: the outputs as the file names them.
    outputs: tuple[tuple[int, str | None, str | None], ...] = ()

    @property
    def cores(self) -> tuple[int, ...] | None:
        return cores_of(self.processor)

    @property
    def files(self) -> tuple[str, ...]:
        """Every bundle file the configuration needs."""
        return tuple(dict.fromkeys((self.file, *self.weight_files, *self.segments)))


@dataclass(frozen=True)
class DesignSpec:
    role: str
    configs: tuple[str, ...]
    labels: tuple[str, ...]
    optimality: float | None
    trigger: str | None = None

