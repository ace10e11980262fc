"""Measure the host: every zoo variant on every hardware option of this machine, for real.

Hardware options: threads {1, 2} x XNNPACK on/off (``OpResolverType.AUTO`` vs
``BUILTIN_WITHOUT_DEFAULT_DELEGATES``) x CPU core sets as separate processors (``CPU[0]``,
``CPU[1]``, ``CPU[0,1]``) pinned with ``os.sched_setaffinity``, so load on one core is a processor
issue the runtime can escape. Protocol: CARIn's (5 warm-up runs, then 100 timed runs) unless told
otherwise. Peak memory is measured in an isolated subprocess (``workbench.host._memprobe``): the peak
resident set while the model is loaded and run, over the resident set before loading it. Energy
comes from RAPL when readable, else from a stated power model (and the rows say so).
Co-execution of the multi-DNN tasks (h3, h4) is measured with the interpreters running at once in
threads, each pinned to its configuration's cores.

A killed run resumes: every measured row is appended to ``<out>.partial.jsonl`` (keyed by its model
file's checksum, its option and the protocol) and skipped when a run measuring the same row starts
again, even if that run adds or drops models or options.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from .. import processors
from ..errors import InputError
from ..power import HOST_CORE
from ..procfs import cpu_model
from ..profiles.importers import config_id
from ..profiles.schema import (
    CoExecution,
    Config,
    CpuCluster,
    Device,
    Engine,
    EngineOptions,
    FailedConfig,
    Profile,
    Provenance,
    Task,
)
from ..runtime.executor import Pinned
from ..runtime.interpreter import fill_batch, open_interpreter, placeholder, to_input
from ..timing import probe_env, samples_ms
from . import datasets as ds

#: Modelled power of one busy core when RAPL cannot be read (this is a VM: /sys/class/powercap
#: is absent); see workbench.power.
MODELLED_CORE_POWER_W = HOST_CORE.busy_w


@dataclass(frozen=True)
class Option:
    """One hardware option: a processor (core set), threads and XNNPACK."""

    processor: str
    cores: tuple[int, ...]
    threads: int
    xnnpack: bool


def _cpu_cores(processor: str) -> tuple[int, ...]:
    cores = processors.cores(processor)
    if cores is None:
        raise InputError("the host profiler runs on CPU core sets only", where="processor",
                         value=processor)
    return cores


def core_sets() -> list[tuple[int, ...]]:
    """Each available core alone, then all of them together."""
    cores = sorted(processors.machine_cores())
    sets: list[tuple[int, ...]] = [(c,) for c in cores]
    if len(cores) > 1:
        sets.append(tuple(cores))
    return sets


def host_options(threads: Iterable[int] = (1, 2), *, xnnpack: Iterable[bool] = (True, False),
                 processor_ids: Iterable[str] | None = None) -> list[Option]:
    """This machine's hardware options: core sets x threads x XNNPACK on/off, optionally only
    some processors (``CPU[0]``, ``CPU[0,1]``; an unknown one is an InputError naming it)."""
    sets = core_sets()
    if processor_ids is not None:
        known = {processors.cpu_set(cs): cs for cs in sets}
        wanted = list(processor_ids)
        for p in wanted:
            if p not in known:
                raise InputError(f"not a processor of this machine; it has {', '.join(known)}",
                                 where="processors", value=p)
        sets = [known[p] for p in wanted]
    threads = list(threads)
    if not threads or any(t < 1 for t in threads):
        raise InputError("threads must be positive integers", where="threads", value=threads)
    return [Option(processors.cpu_set(cs), cs, t, x) for cs in sets for t in threads
            for x in xnnpack]


# --- timing -----------------------------------------------------------------------------------

def make_interpreter(path: str | os.PathLike, *, threads: int, xnnpack: bool, batch: int = 1):
    """A LiteRT interpreter with the option's threads and resolver, input resized to ``batch``."""
    return open_interpreter(path, threads=threads, xnnpack=xnnpack, batch=batch)


def sample_input(it, x: np.ndarray | None = None) -> np.ndarray:
    """An input for the interpreter: real samples (quantised if the input is int8) or a
    placeholder."""
    inp = it.get_input_details()[0]
    if x is None:
        return placeholder(inp)
    return to_input(fill_batch(x, inp["shape"][0]), inp)


def time_invocations(invoke, *, warmup: int, runs: int, clock=time.perf_counter_ns) -> np.ndarray:
    """Latency samples (ms) of ``runs`` calls after ``warmup`` untimed ones (``clock`` in ns)."""
    return np.asarray(samples_ms(invoke, runs=runs, warmup=warmup, clock=clock))


def latency_stats(samples: np.ndarray, batch: int = 1) -> dict[str, float]:
    """Mean, std (population), min, max, p50, p90, p99 in ms and throughput in samples/s."""
    s = np.asarray(samples, dtype=float)
    if s.size == 0 or not np.all(np.isfinite(s)) or np.any(s < 0):
        raise InputError("latency samples must be finite, non-negative and not empty")
    mean = float(s.mean())
    return {"L": mean, "L_std": float(s.std()), "L_min": float(s.min()), "L_max": float(s.max()),
            "L_p50": float(np.percentile(s, 50)), "L_p90": float(np.percentile(s, 90)),
            "L_p99": float(np.percentile(s, 99)), "TP": batch * 1000.0 / mean if mean > 0 else 0.0}


def measure(path: str | os.PathLike, option: Option, *, batch: int, x: np.ndarray | None,
            warmup: int, runs: int) -> np.ndarray:
    """Latency samples of one model file under one hardware option (pinned to its cores)."""
    with Pinned(option.cores):
        it = make_interpreter(path, threads=option.threads, xnnpack=option.xnnpack, batch=batch)
        inp = it.get_input_details()[0]
        it.set_tensor(inp["index"], sample_input(it, x))
        return time_invocations(it.invoke, warmup=warmup, runs=runs)


def measure_memory(path: str | os.PathLike, *, threads: int, xnnpack: bool, batch: int,
                   runs: int = 5, timeout: float = 120) -> dict[str, float]:
    """Peak memory (MB) of loading and running a model, in a fresh process (see _memprobe)."""
    cmd = [sys.executable, "-m", "workbench.host._memprobe", str(path), str(threads),
           "1" if xnnpack else "0", str(batch), str(runs)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       env=probe_env(OMP_NUM_THREADS="1"))
    if r.returncode != 0:
        raise RuntimeError(f"memory probe failed for {path}: {r.stderr.strip()[-300:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def read_rapl_uj() -> int | None:
    """Package energy counter (uJ) when RAPL is readable here, else None."""
    p = Path("/sys/class/powercap/intel-rapl:0/energy_uj")
    try:
        return int(p.read_text())
    except (OSError, ValueError):
        return None


def cannot_run(exc: BaseException, option: Option, path: str | os.PathLike = "") -> str:
    """Why the engine (LiteRT; onnxruntime for a .onnx file) could not run a model under an
    option, in one line."""
    from .intake import litert_reason

    if str(path).endswith(".onnx"):
        why = " ".join(str(exc).split())[:300] or type(exc).__name__
        return why if "no XNNPACK" in why else f"onnxruntime cannot run it with these options: {why}"
    why = litert_reason(exc, xnnpack=option.xnnpack)
    return why if why.startswith("the graph uses") else \
        f"LiteRT cannot run it with these options: {why}"


# --- the host profile -------------------------------------------------------------------------

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
        from ..runtime.ort import version

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


@dataclass(frozen=True)
class Variant:
    task: str
    model: str
    arch: str
    precision: str
    path: Path
    sha256: str
    size_mb: float
    params: int
    flops: int
    metric: float | None
    #: A's sample count and 95% interval, where known.
    metric_n: int | None = None
    metric_lo: float | None = None
    metric_hi: float | None = None


def zoo_variants(root: Path, tasks: Iterable[str] | None = None) -> list[Variant]:
    """Every available quantised variant the zoo holds (record.json + variants.json)."""
    out = []
    for rec_path in sorted(Path(root).glob("*/*/record.json")):
        rec = json.loads(rec_path.read_text())
        if tasks and rec["task"] not in tasks:
            continue
        for v in rec.get("variants", []):
            if v.get("available"):
                out.append(Variant(rec["task"], rec["model"], rec["arch"], v["precision"],
                                   rec_path.parent / v["file"], v["sha256"], v["size_mb"],
                                   v["params"], v["flops"], v["test_metric"]))
    return out


def with_interval(v: Variant, n: int, label: str) -> Variant:
    """A zoo variant with A's sample count and, for a proportion (top-1), its Wilson interval:
    the zoo's records keep the test accuracy, and the test set's size gives n. Other metrics
    need per-sample errors the record does not keep: their A has n but no interval."""
    from dataclasses import replace

    from .. import taskmetrics

    if v.metric is None or v.metric_n is not None or n < 1:
        return v
    m = taskmetrics.BY_LABEL.get(label)
    if m is None or m.interval != "wilson":
        return replace(v, metric_n=n)
    lo, hi = taskmetrics.wilson(round(v.metric / 100 * n), n)
    return replace(v, metric_n=n, metric_lo=min(100 * lo, v.metric),
                   metric_hi=max(100 * hi, v.metric))


def _row_key(v: Variant, o: Option, warmup: int, runs: int, cpu: str) -> str:
    """What a measured row depends on: the model file's bytes, the option, the protocol and the
    CPU it runs on.

    Keyed per row, not per run, so adding a model to a profile (or dropping one) re-measures only
    what changed; a row measured on a different file or protocol is measured again, and so is
    one measured on another CPU (a cloud machine's CPU changes from day to day, and the profile's
    device record names the CPU that measured every row)."""
    return hashlib.sha256(json.dumps([v.sha256, o.processor, o.threads, o.xnnpack, warmup, runs,
                                      cpu]).encode()).hexdigest()[:16]


class Partial:
    """Rows measured so far, appended one JSON line at a time (flushed), for resuming.

    Each line is a row with a ``_key`` (:func:`_row_key`); a later line replaces an earlier one of
    the same id. A file of another format starts afresh."""

    FORMAT = "workbench-partial/2"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: dict[str, dict] = {}
        if path.exists():
            lines = path.read_text().splitlines()
            try:
                ok = bool(lines) and json.loads(lines[0]).get("format") == self.FORMAT
            except (json.JSONDecodeError, AttributeError):
                ok = False
            if ok:
                for line in lines[1:]:
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError:
                        break  # a line cut by the kill: measure that row again
                    self.rows[row["id"]] = row
            else:
                path.unlink()
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"format": self.FORMAT}) + "\n")

    def done(self, cid: str, key: str) -> bool:
        row = self.rows.get(cid)
        return row is not None and row.get("_key") == key

    def add(self, row: dict, key: str) -> None:
        row = {**row, "_key": key}
        self.rows[row["id"]] = row
        with self.path.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def configs(self, ids: Iterable[str]) -> list[dict]:
        """The rows of ``ids`` (in that order) without their keys."""
        return [{k: v for k, v in self.rows[i].items() if k != "_key"} for i in ids]

    # A row being measured is named in a file beside the partial one until its result is
    # appended. A process that dies inside LiteRT (a crash, not an exception) leaves the file:
    # the next run tries that row once more, and after a second death records it as failed
    # instead of dying on it for ever. An interrupt (Ctrl-C) is not the row's fault: it clears
    # the file.
    @property
    def _current(self) -> Path:
        return self.path.with_name(self.path.name + ".measuring")

    def deaths(self, cid: str, key: str) -> int:
        """How many runs died while measuring this row."""
        try:
            cur = json.loads(self._current.read_text())
        except (OSError, ValueError):
            return 0
        return int(cur.get("deaths", 0)) + 1 if cur.get("id") == cid and \
            cur.get("_key") == key else 0

    def begin(self, cid: str, key: str, deaths: int) -> None:
        """Name the row being measured, with how many runs already died on it."""
        from ..fileio import atomic_write_text

        atomic_write_text(self._current, json.dumps({"id": cid, "_key": key, "deaths": deaths}))

    def end(self) -> None:
        self._current.unlink(missing_ok=True)


@dataclass(frozen=True)
class Protocol:
    """How many untimed warm-up runs and timed runs each configuration gets."""

    warmup: int
    runs: int


#: ``full`` is CARIn's protocol (5 warm-up runs, then 100 timed runs); ``quick`` is for trying a
#: model out and for tests (the rows say which protocol measured them).
PROTOCOLS: dict[str, Protocol] = {"quick": Protocol(2, 20), "full": Protocol(5, 100)}


def protocol(name: str) -> Protocol:
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise InputError(f"unknown protocol; expected one of {', '.join(PROTOCOLS)}",
                         where="protocol", value=name) from None


@dataclass(frozen=True)
class TaskInputs:
    """What profiling needs of a task: sample inputs (None: zeros) and how A is read."""

    task: str
    x: np.ndarray | None
    batch: int
    metric: str
    higher_is_better: bool
    description: str
    #: Per-model sample inputs where a task's models take different shapes (EfficientNet-Lite0/1/2
    #: at 224/240/260); a model not listed takes ``x``.
    x_of: dict[str, np.ndarray] = field(default_factory=dict)

    def sample(self, model: str) -> np.ndarray | None:
        return self.x_of.get(model, self.x)

    @classmethod
    def of(cls, d: ds.Dataset) -> "TaskInputs":
        return cls(d.task, d.x_test[:d.batch], d.batch, d.metric, d.higher_is_better,
                   d.description)


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
    from ..profiles.store import save_profile

    if not variants:
        raise InputError("nothing to profile: no model variants", file=out)
    if not options:
        raise InputError("nothing to profile: no hardware options left", file=out)
    partial = Partial(Path(str(out) + ".partial.jsonl"))
    rapl = read_rapl_uj() is not None
    mem_cache: dict[tuple, dict] = {}
    todo = [(v, o) for v in variants for o in options]
    it: Iterable = todo
    bar = None
    if progress:
        from tqdm import tqdm
        it = bar = tqdm(todo, desc="profiling", unit="config")
    ids: list[str] = []
    cpu = cpu_model()
    for v, o in it:
        cid = config_id(v.model, v.precision, o.processor, task=v.task, threads=o.threads,
                        xnnpack=o.xnnpack)
        ids.append(cid)
        key = _row_key(v, o, warmup, runs, cpu)
        if partial.done(cid, key):
            continue
        if bar is not None:
            bar.set_postfix_str(f"{v.model} {v.precision} {o.processor} t{o.threads}"
                                f"{'' if o.xnnpack else ' no-xnn'}")
        d = inputs[v.task]
        ident = {"id": cid, "task": v.task, "model": v.model, "precision": v.precision,
                 "processor": o.processor, "threads": o.threads, "xnnpack": o.xnnpack}
        died = partial.deaths(cid, key)
        if died >= 2:
            partial.add({**ident, "failed": f"the profiling process died twice while measuring "
                         "it (a crash inside LiteRT); delete "
                         f"{partial.path.name} to try it again"}, key)
            partial.end()
            continue
        partial.begin(cid, key, died)
        mkey = (v.path, min(o.threads, len(o.cores)), o.xnnpack)
        try:
            e0 = read_rapl_uj() if rapl else None
            s = measure(v.path, o, batch=d.batch, x=d.sample(v.model), warmup=warmup, runs=runs)
            e1 = read_rapl_uj() if rapl else None
            if mkey not in mem_cache:
                mem_cache[mkey] = measure_memory(v.path, threads=mkey[1], xnnpack=o.xnnpack,
                                                 batch=d.batch)
        except Exception as exc:  # noqa: BLE001 - an option LiteRT cannot run is a failed row
            partial.add({**ident, "failed": cannot_run(exc, o, v.path)}, key)
            partial.end()
            continue
        except BaseException:
            partial.end()  # an interrupt is not the row's fault
            raise
        st = latency_stats(s, d.batch)
        busy = min(o.threads, len(o.cores))
        if rapl and e1 is not None and e0 is not None and e1 >= e0:
            energy, e_note = (e1 - e0) / 1000.0 / runs, "E from RAPL (package)"
        else:
            energy = MODELLED_CORE_POWER_W * busy * st["L"]
            e_note = f"E modelled: {MODELLED_CORE_POWER_W:g} W per busy core (RAPL unreadable)"
        partial.add({
            "id": cid, "task": v.task, "model": v.model, "arch": v.arch,
            "precision": v.precision, "processor": o.processor, "threads": o.threads,
            "xnnpack": o.xnnpack, "batch": d.batch, "A": v.metric, "S": v.size_mb,
            "params": v.params, "W": v.flops * d.batch, **st, "L_n": runs, "E": energy,
            **({"A_n": v.metric_n} if v.metric_n and v.metric is not None else {}),
            **({"A_lo": v.metric_lo, "A_hi": v.metric_hi}
               if v.metric is not None and v.metric_lo is not None and v.metric_hi is not None
               else {}),
            "MF": mem_cache[mkey]["model_mb"], "source": "measured",
            "note": f"{runs} runs after {warmup} warm-up on {cpu}"
                    f"{_engine_note(v.path)}; MF over a "
                    f"{mem_cache[mkey]['base_mb']:.0f}"
                    f" MB runtime; {e_note}"}, key)
        partial.end()
    if bar is not None:
        bar.close()
    onnx = any(str(v.path).endswith(".onnx") for v in variants)
    rows = partial.configs(dict.fromkeys(ids))
    # A is the registry's, not a measurement of the row: a row kept from an earlier run (the
    # same file, option and protocol) takes the model's A as it is now (re-added on new data,
    # say), never the A it was first written with.
    current: dict[tuple, Any] = {(v.task, v.model, v.precision): v for v in variants}
    for row in rows:
        v = current.get((row.get("task"), row.get("model"), row.get("precision")))
        if v is None or "failed" in row:
            continue
        for k in ("A", "A_n", "A_lo", "A_hi"):
            row.pop(k, None)
        row["A"] = v.metric
        if v.metric is not None and v.metric_n:
            row["A_n"] = v.metric_n
        if v.metric is not None and v.metric_lo is not None and v.metric_hi is not None:
            row["A_lo"], row["A_hi"] = v.metric_lo, v.metric_hi
    configs = [Config(**row) for row in rows if "failed" not in row]
    failed = [FailedConfig(**{k: v for k, v in row.items() if k in FailedConfig.model_fields},
                           reason=row["failed"]) for row in rows if "failed" in row]
    if not configs:
        raise InputError(f"no configuration could run: {failed[0].reason}", file=out)
    tasks_present = sorted({c.task for c in configs})
    coexec = measure_coexecution(configs, variants, inputs, seconds=coexec_seconds,
                                 progress=progress) if coexec_seconds > 0 else []
    threads = sorted({o.threads for o in options})
    engines = []
    for cores in dict.fromkeys(o.cores for o in options):
        mine = [o for o in options if o.cores == cores]
        engines.append(Engine(name=mine[0].processor, kind="CPU", core_ids=list(cores),
                              options=EngineOptions(
                                  threads=sorted({o.threads for o in mine}),
                                  xnnpack=sorted({o.xnnpack for o in mine}, reverse=True))))
    task_objs = [Task(name=t, metric=inputs[t].metric, higher_is_better=inputs[t].higher_is_better,
                      dataset=inputs[t].description, batch=inputs[t].batch) for t in tasks_present]
    prov = Provenance(
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
               f"co-execution: {len(coexec)} combinations of the multi-DNN tasks measured with "
               "the interpreters running at once", *notes]
        + ([f"{len(failed)} configurations could not run here: see 'failed' for each reason"]
           if failed else []))
    profile = Profile(device=host_device(), source="measured", provenance=prov, engines=engines,
                      tasks=task_objs, configs=configs, coexecution=coexec, failed=failed)
    save_profile(profile, out)
    partial.path.unlink(missing_ok=True)
    partial.end()
    return profile


# --- co-execution -----------------------------------------------------------------------------

def _candidates(configs: list[Config], task: str, per_processor: int = 1) -> list[Config]:
    """The fastest configurations of a task on each processor (what a solver would pick)."""
    out = []
    for proc in sorted({c.processor for c in configs if c.task == task}):
        rows = sorted((c for c in configs if c.task == task and c.processor == proc),
                      key=lambda c: c.L if c.L is not None else float("inf"))
        out += rows[:per_processor]
    return out


def run_concurrently(paths: list[Path], options: list[Option], batches: list[int],
                     inputs: list[np.ndarray | None], seconds: float) -> list[np.ndarray]:
    """Run several models at once, each in its own pinned thread, for ``seconds``; latency
    samples (ms) of each while all are running."""
    ready = threading.Barrier(len(paths) + 1)
    stop = threading.Event()
    results: list[list[float]] = [[] for _ in paths]
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            with Pinned(options[k].cores):
                it = make_interpreter(paths[k], threads=options[k].threads,
                                      xnnpack=options[k].xnnpack, batch=batches[k])
                inp = it.get_input_details()[0]
                it.set_tensor(inp["index"], sample_input(it, inputs[k]))
                for _ in range(3):
                    it.invoke()
                ready.wait()
                clock = time.perf_counter_ns
                while not stop.is_set():
                    t0 = clock()
                    it.invoke()
                    results[k].append((clock() - t0) / 1e6)
        except BaseException as exc:  # noqa: BLE001 - reported to the caller below
            errors.append(exc)
            try:
                ready.abort()
            except threading.BrokenBarrierError:
                pass

    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(len(paths))]
    for t in threads:
        t.start()
    try:
        ready.wait()
    except threading.BrokenBarrierError:
        pass
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return [np.array(r) for r in results]


def measure_coexecution(configs: list[Config], variants: list[Variant],
                        samples: dict[str, TaskInputs],
                        *, seconds: float, progress: bool = False) -> list[CoExecution]:
    """Measure the multi-DNN groups (h3, h4) for the fastest configuration of each task on each
    processor, every combination, with all models running at once."""
    from itertools import product

    by_key = {(v.task, v.model, v.precision): v for v in variants}
    combos = []
    for tasks in ds.GROUPS.values():
        if len(tasks) < 2 or not all(any(c.task == t for c in configs) for t in tasks):
            continue
        combos += list(product(*[_candidates(configs, t) for t in tasks]))
    out = []
    it: Iterable = combos
    if progress and combos:
        from tqdm import tqdm
        it = tqdm(combos, desc="co-execution", unit="combo")
    for combo in it:
        paths = [by_key[(c.task, c.model, c.precision)].path for c in combo]
        opts = [Option(c.processor, _cpu_cores(c.processor), c.threads or 1,
                       bool(c.xnnpack)) for c in combo]
        batches = [samples[c.task].batch for c in combo]
        inputs = [samples[c.task].x for c in combo]
        lat = run_concurrently(paths, opts, batches, inputs, seconds)
        out.append(CoExecution(configs=[c.id for c in combo],
                               L=[float(s.mean()) for s in lat],
                               L_std=[float(s.std()) for s in lat], source="measured",
                               note=f"{min(len(s) for s in lat)}+ runs each over {seconds:g} s"))
    return out


