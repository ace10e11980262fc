"""Measuring the (variant, option) rows of a profile one at a time, each appended to the partial
file as soon as it is measured."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from ...procfs import cpu_model
from ...profiles.importers import config_id
from .machine import MODELLED_CORE_POWER_W, _engine_note
from .measuring import cannot_run, latency_stats, measure, measure_memory, read_rapl_uj
from .options import Option
from .partial import Partial, _row_key
from .variants import TaskInputs, Variant


def _measure_rows(variants: list[Variant], inputs: dict[str, TaskInputs], options: list[Option],
                  partial: Partial, *, warmup: int, runs: int, rapl: bool,
                  progress: bool) -> list[str]:
    """Measure every (variant, option) row ``partial`` does not hold yet, appending each to it
    as soon as it is measured; returns every row's id, in order."""
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
        energy = (e1 - e0) / 1000.0 / runs if rapl and e1 is not None and e0 is not None \
            and e1 >= e0 else None
        partial.add(_row(v, o, d, cid, s, energy, mem_cache[mkey], warmup=warmup, runs=runs,
                         cpu=cpu), key)
        partial.end()
    if bar is not None:
        bar.close()
    return ids


def _row(v: Variant, o: Option, d: TaskInputs, cid: str, s: np.ndarray, energy: float | None,
         mem: dict[str, float], *, warmup: int, runs: int, cpu: str) -> dict:
    """A measured row: latency statistics of the samples ``s``, energy per run (None: RAPL gave
    none, so it is modelled), memory from the probe."""
    st = latency_stats(s, d.batch)
    busy = min(o.threads, len(o.cores))
    if energy is not None:
        e_note = "E from RAPL (package)"
    else:
        energy = MODELLED_CORE_POWER_W * busy * st["L"]
        e_note = f"E modelled: {MODELLED_CORE_POWER_W:g} W per busy core (RAPL unreadable)"
    return {
        "id": cid, "task": v.task, "model": v.model, "arch": v.arch,
        "precision": v.precision, "processor": o.processor, "threads": o.threads,
        "xnnpack": o.xnnpack, "batch": d.batch, "A": v.metric, "S": v.size_mb,
        "params": v.params, "W": v.flops * d.batch, **st, "L_n": runs, "E": energy,
        **({"A_n": v.metric_n} if v.metric_n and v.metric is not None else {}),
        **({"A_lo": v.metric_lo, "A_hi": v.metric_hi}
           if v.metric is not None and v.metric_lo is not None and v.metric_hi is not None
           else {}),
        "MF": mem["model_mb"], "source": "measured",
        "note": f"{runs} runs after {warmup} warm-up on {cpu}"
                f"{_engine_note(v.path)}; MF over a "
                f"{mem['base_mb']:.0f}"
                f" MB runtime; {e_note}"}


def _current_a(rows: list[dict], variants: list[Variant]) -> None:
    """A is the registry's, not a measurement of the row: a row kept from an earlier run (the
    same file, option and protocol) takes the model's A as it is now (re-added on new data,
    say), never the A it was first written with."""
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
