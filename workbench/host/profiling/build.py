"""Building a measured profile: every row measured (or resumed), co-execution of the multi-DNN
tasks, then the engines, tasks and provenance, validated and saved."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Iterable

from ...errors import InputError
from ...procfs import cpu_model
from ...profiles.schema import (
    Config,
    Engine,
    EngineOptions,
    FailedConfig,
    Profile,
    Provenance,
    Task,
)
from .. import datasets as ds
from .coexecution import measure_coexecution
from .machine import MODELLED_CORE_POWER_W, _versions, host_device
from .measuring import read_rapl_uj
from .options import Option, host_options
from .partial import Partial
from .rows import _current_a, _measure_rows
from .variants import TaskInputs, Variant, with_interval, zoo_variants


def profile_host(zoo_root: Path, out: Path, *, tasks: Iterable[str] | None = None,
                 warmup: int = 5, runs: int = 100, threads: tuple[int, ...] = (1, 2),
                 coexec_seconds: float = 1.0, data_root: Path | None = None,
                 progress: bool = True, quick: bool = False,
                 options: list[Option] | None = None) -> Profile:
    """Measure every zoo variant on every host option and write the host profile.

    Args:
        zoo_root: Where ``workbench zoo build`` put the models.
        out: The profile to write (e.g. ``profiles/host.json``); ``<out>.partial.jsonl`` holds
            progress so a killed run resumes.
        warmup, runs: CARIn's protocol by default (5 and 100).
        coexec_seconds: How long each multi-DNN co-execution is measured.
        quick: Test-sized datasets for the sample inputs.
        options: The hardware options (default: every core set x ``threads`` x XNNPACK on/off).

    Returns:
        The validated Profile (also saved to ``out``).
    """
    variants = zoo_variants(zoo_root, tasks)
    if not variants:
        raise InputError("no built models: run `workbench zoo build` first", file=zoo_root)
    data = {t: ds.load(t, quick=quick, root=data_root) for t in {v.task for v in variants}}
    inputs = {t: TaskInputs.of(d) for t, d in data.items()}
    variants = [with_interval(v, len(data[v.task].x_test), data[v.task].metric) for v in variants]
    return profile_variants(variants, inputs, out, warmup=warmup, runs=runs,
                            options=options or host_options(threads), coexec_seconds=coexec_seconds,
                            progress=progress)


def profile_variants(variants: list[Variant], inputs: dict[str, TaskInputs], out: Path, *,
                     warmup: int, runs: int, options: list[Option],
                     coexec_seconds: float = 0.0, progress: bool = True,
                     notes: Iterable[str] = ()) -> Profile:
    """Measure model variants on hardware options and write a measured profile.

    Every (variant, option) row is appended to ``<out>.partial.jsonl`` as soon as it is measured,
    so a killed run resumes where it stopped. Rows are keyed by the model file's checksum, the
    option and the protocol: a run that adds a model measures only that model's rows, and a row
    whose file or protocol changed is measured again.
    """
    from ...profiles.store import save_profile

    if not variants:
        raise InputError("nothing to profile: no model variants", file=out)
    if not options:
        raise InputError("nothing to profile: no hardware options left", file=out)
    partial = Partial(Path(str(out) + ".partial.jsonl"))
    rapl = read_rapl_uj() is not None
    ids = _measure_rows(variants, inputs, options, partial, warmup=warmup, runs=runs, rapl=rapl,
                        progress=progress)
    rows = partial.configs(dict.fromkeys(ids))
    _current_a(rows, variants)
    configs = [Config(**row) for row in rows if "failed" not in row]
    failed = [FailedConfig(**{k: v for k, v in row.items() if k in FailedConfig.model_fields},
                           reason=row["failed"]) for row in rows if "failed" in row]
    if not configs:
        raise InputError(f"no configuration could run: {failed[0].reason}", file=out)
    tasks_present = sorted({c.task for c in configs})
    coexec = measure_coexecution(configs, variants, inputs, seconds=coexec_seconds,
                                 progress=progress) if coexec_seconds > 0 else []
    engines = _engines(options)
    task_objs = [Task(name=t, metric=inputs[t].metric, higher_is_better=inputs[t].higher_is_better,
                      dataset=inputs[t].description, batch=inputs[t].batch) for t in tasks_present]
    prov = _provenance(variants, options, warmup=warmup, runs=runs, rapl=rapl,
                       coexecuted=len(coexec), failed=len(failed), notes=notes)
    profile = Profile(device=host_device(), source="measured", provenance=prov, engines=engines,
                      tasks=task_objs, configs=configs, coexecution=coexec, failed=failed)
    save_profile(profile, out)
    partial.path.unlink(missing_ok=True)
    partial.end()
    return profile


def _engines(options: list[Option]) -> list[Engine]:
    """One engine per core set, with the threads and XNNPACK settings measured on it."""
    engines = []
    for cores in dict.fromkeys(o.cores for o in options):
        mine = [o for o in options if o.cores == cores]
        engines.append(Engine(name=mine[0].processor, kind="CPU", core_ids=list(cores),
                              options=EngineOptions(
                                  threads=sorted({o.threads for o in mine}),
                                  xnnpack=sorted({o.xnnpack for o in mine}, reverse=True))))
    return engines


def _provenance(variants: list[Variant], options: list[Option], *, warmup: int, runs: int,
                rapl: bool, coexecuted: int, failed: int, notes: Iterable[str]) -> Provenance:
    """How the profile was measured: engines and versions, the protocol, MF and E, in words."""
    onnx = any(str(v.path).endswith(".onnx") for v in variants)
    threads = sorted({o.threads for o in options})
    return Provenance(
        method="measured on this machine with "
               + ("onnxruntime" if all(str(v.path).endswith(".onnx") for v in variants) else
                  "the LiteRT interpreter and onnxruntime (.onnx variants)" if onnx else
                  "the LiteRT interpreter") + " (workbench profile)",
        tool_version=_versions().get("ai_edge_litert"), created=date.today().isoformat(),
        host={"cpu": cpu_model(), **_versions(onnx)},
        notes=[f"MEASURED here on {cpu_model()}: {runs} timed runs after {warmup} warm-up runs "
               f"per configuration; threads {threads}",
               "MF: peak resident memory while loading and running the model in a fresh process,"
               " over the resident memory before loading it",
               "E: " + ("RAPL package energy" if rapl else
                        f"MODELLED, {MODELLED_CORE_POWER_W:g} W per busy core (RAPL unreadable)"),
               f"co-execution: {coexecuted} combinations of the multi-DNN tasks measured with "
               "the interpreters running at once", *notes]
        + ([f"{failed} configurations could not run here: see 'failed' for each reason"]
           if failed else []))
