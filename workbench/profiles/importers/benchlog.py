"""LiteRT benchmark output: ``benchmark_model``'s log (timings in us, its statistics lines, the
peak memory), dispatched with ``litert-benchmark``'s (:mod:`.litert`); and the import of such
runs as configuration rows (processor, threads and precision from the log or given).

In a log a comma between groups of three digits is a thousands separator (``5,741.6`` is 5741.6),
a comma and a space separate the timings fields, and any other comma in a number is refused.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ... import processors
from ...errors import InputError
from ...fileio import read_text
from ..schema import PRECISIONS, Config, Device, Precision, Profile, Provenance, Source, is_precision
from ..store import error_from_validation
from .common import _assemble, _device, _num, config_id
from .litert import _parse_litert_json, _parse_litert_text

_RE_TIMINGS = re.compile(r"Inference timings in us:\s*(.*)")
# The timings line is ``Name: number`` fields separated by a comma and a space
# (``Init: 21771, First inference: 9842, ...``); a comma with no space after it is inside a
# number (a thousands separator, checked by _num).
_RE_FIELD_SEP = re.compile(r",\s+")
_RE_FIELD = re.compile(r"([A-Za-z][A-Za-z0-9 ()_-]*?):\s*(\S+)")
#: The timings fields the import reads; the others (Warmup (avg)) may be ``nan``, which is what
#: the tool writes for a phase that ran no iterations.
_TIMINGS_READ = ("Init", "First inference", "Inference (avg)")
# A line with count= is one of the tool's statistics lines, written in one of two forms:
#   count=174 first=5795 curr=5710 min=5585 max=6904 avg=5741.6 std=151
#   count=50 curr=5741(all same)      (every sample equal; newer versions; count=1: no suffix)
# Numbers are taken as any non-space text and checked by _num, so a malformed one is an error
# naming its line rather than a line silently skipped.
_RE_STATS = re.compile(r"\bcount=\S")
_RE_COUNT = re.compile(r"\bcount=(\S+).*?min=(\S+)\s+max=(\S+)\s+avg=(\S+)\s+std=(\S+)")
_RE_COUNT_SAME = re.compile(r"\bcount=(\S+)\s+curr=([^\s(]+)(?:\(all same\))?\s*$")
_RE_PEAK = re.compile(r"Peak memory footprint \(MB\):\s*init=(\S+)\s+overall=(\S+)")
_RE_PARAM = re.compile(r"^(?:[A-Z]+:\s*)?([A-Za-z][A-Za-z0-9 _()/-]*?):\s*\[(.*)\]\s*$")
_PRECISION_TOKENS: dict[str, Precision] = {"fp32": "FP32", "float32": "FP32", "fp16": "FP16",
                                          "float16": "FP16", "dr8": "DR8", "dynamic": "DR8",
                                          "fx8": "FX8", "ffx8": "FFX8"}


def _truthy(v: str | None) -> bool:
    return (v or "").strip().lower() in {"1", "true", "yes"}


def _split_runs(text: str) -> list[list[tuple[int, str]]]:
    """One list of (line number, line) per benchmark run (runs start at 'STARTING!' when the log
    has several)."""
    runs: list[list[tuple[int, str]]] = [[]]
    for n, line in enumerate(text.splitlines(), 1):
        if "STARTING!" in line and any("Inference timings in us" in x for _, x in runs[-1]):
            runs.append([])
        runs[-1].append((n, line))
    return [r for r in runs if any("Inference timings in us" in x for _, x in r)]


def _timings(body: str, *, file: Any, line: int) -> dict[str, float]:
    """The ``Name: number`` fields of a timings line (us)."""
    out: dict[str, float] = {}
    for part in _RE_FIELD_SEP.split(body.strip().rstrip(",")):
        m = _RE_FIELD.fullmatch(part.strip())
        if m is None:
            raise InputError("timings field is not 'Name: number' (fields are separated by ', ')",
                             file=file, where=f"line {line}", value=part)
        key, value = m.group(1).strip(), m.group(2)
        if key not in _TIMINGS_READ and value.lower() in {"nan", "-nan"}:
            continue
        out[key] = _num(value, file=file, line=line, what=key)
    return out


def _stats(line: str, *, file: Any, n: int) -> dict[str, Any]:
    """A count= line as ``runs`` and ``L_min``, ``L_max``, ``L_std`` (ms)."""
    keys = re.findall(r"\b([a-z]+)=", line)
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:  # `std=60 std=70`: which one was measured? Not ours to pick.
        raise InputError(f"{twice[0]}= appears more than once", file=file, where=f"line {n}",
                         value=line)
    m = _RE_COUNT.search(line)
    if m:
        cnt, lo, hi, std = m.group(1), m.group(2), m.group(3), m.group(5)
    else:
        m = _RE_COUNT_SAME.search(line)
        if m is None and re.search(r"\bcount=0\s*$", line):
            raise InputError("the runs before the timings line measured nothing (count=0)",
                             file=file, where=f"line {n}", value=line)
        if m is None:
            raise InputError("a statistics line in an unknown form (expected count=N first=... "
                             "curr=... min=... max=... avg=... std=..., or count=N curr=X(all "
                             "same))", file=file, where=f"line {n}", value=line)
        cnt, lo, hi, std = m.group(1), m.group(2), m.group(2), "0"
    runs = _num(cnt, file=file, line=n, what="count")
    if not runs.is_integer() or runs < 1:
        raise InputError("count is not a whole number >= 1", file=file, where=f"line {n}",
                         value=cnt)
    rec = {"runs": int(runs), "L_min": _num(lo, file=file, line=n, what="min") / 1000,
           "L_max": _num(hi, file=file, line=n, what="max") / 1000,
           "L_std": _num(std, file=file, line=n, what="std") / 1000}
    if rec["L_min"] > rec["L_max"]:
        raise InputError("min is greater than max", file=file, where=f"line {n}", value=(lo, hi))
    return rec


def parse_benchmark_log(text: str, *, file: Any = None) -> list[dict[str, Any]]:
    """Parse LiteRT benchmark output into one dict per run: ``benchmark_model``'s log, or the
    Python ``litert-benchmark`` (ai-edge-litert) as printed or as its ``--result_json`` file.

    Each dict has ``params`` (the tool's ``Name: [value]`` lines; for ``litert-benchmark`` its
    model, accelerators and threads in the same names), ``L`` (mean, ms), and where the output
    has them ``L_min``, ``L_max``, ``L_std``, ``runs``, ``init_ms``, ``first_ms``, ``MF``.
    """
    if text.lstrip().startswith(("{", "[")):
        return _parse_litert_json(text, file=file)
    if "BENCHMARK RESULTS" in text and "Inference timings in us" not in text:
        return _parse_litert_text(text, file=file)
    runs = _split_runs(text)
    if not runs:
        raise InputError("not a LiteRT benchmark output: no 'Inference timings in us' line "
                         "(benchmark_model), no 'BENCHMARK RESULTS' block and not a "
                         "--result_json file (litert-benchmark)", file=file)
    out = []
    for lines in runs:
        rec: dict[str, Any] = {"params": {}}
        last_count: tuple[int, str] | None = None
        for n, line in lines:
            line = line.strip()
            m = _RE_PARAM.match(line)
            if m and "=" not in m.group(2):
                key, value = m.group(1).strip().lower(), m.group(2).strip()
                # -1 is benchmark_model's "the runtime's default"; other values must be counts.
                if key == "num threads" and value != "-1" and not (
                        re.fullmatch("[0-9]+", value)
                        and 1 <= int(value) <= processors.MAX_THREADS):
                    raise InputError(f"Num threads must be 1..{processors.MAX_THREADS} (or -1)",
                                     file=file, where=f"line {n}", value=value)
                rec["params"][key] = value
            if _RE_STATS.search(line):
                last_count = (n, line)
            m = _RE_TIMINGS.search(line)
            if m:
                kv = _timings(m.group(1), file=file, line=n)
                if "Inference (avg)" not in kv:
                    raise InputError("timings line has no 'Inference (avg)'", file=file,
                                     where=f"line {n}", value=line)
                if kv["Inference (avg)"] <= 0:
                    raise InputError("the mean inference time must be > 0", file=file,
                                     where=f"line {n}", value=kv["Inference (avg)"])
                rec["L"] = kv["Inference (avg)"] / 1000.0
                if "Init" in kv:
                    rec["init_ms"] = kv["Init"] / 1000.0
                if "First inference" in kv:
                    rec["first_ms"] = kv["First inference"] / 1000.0
                # The last count= line before the timings summarises the measured runs (an
                # "all same" line too: skipping it would take the warm-up's statistics).
                if last_count is not None:
                    rec.update(_stats(last_count[1], file=file, n=last_count[0]))
            m = _RE_PEAK.search(line)
            if m:
                overall = _num(m.group(2), file=file, line=n, what="peak memory")
                if overall > 0:  # 0 means the platform could not measure it
                    rec["MF"] = overall
        out.append(rec)
    return out


def _processor_from_params(params: dict[str, str]) -> tuple[str, int | None, bool | None]:
    if _truthy(params.get("use gpu")):
        return "GPU", None, None
    if _truthy(params.get("use hexagon")):
        return "DSP", None, None
    if _truthy(params.get("use nnapi")):
        return "NPU", None, None
    threads = params.get("num threads")
    xnn = params.get("use xnnpack")
    return ("CPU", int(threads) if threads and re.fullmatch("[0-9]+", threads) and int(threads) > 0
            else None, None if xnn is None else _truthy(xnn))


def _precision_from_name(name: str) -> Precision | None:
    tokens = re.split(r"[^a-z0-9]+", name.lower())
    found = {_PRECISION_TOKENS[t] for t in tokens if t in _PRECISION_TOKENS}
    return found.pop() if len(found) == 1 else None


def import_benchmark_log(path: str | os.PathLike, *, model: str | None = None,
                         precision: str | None = None, processor: str | None = None,
                         task: str = "default", device: Device | str | None = None,
                         source: Source = "imported") -> Profile:
    """Read one or more LiteRT ``benchmark_model`` runs from a log file into a Profile.

    The processor, threads and XNNPACK flag come from the log's parameter lines (``Use gpu``,
    ``Use nnapi``, ``Use hexagon``, ``Num threads``, ``Use xnnpack``) unless ``processor`` is given.
    The model name and precision come from the ``Graph`` file name (e.g. ``mnv2_fx8.tflite``)
    unless given.

    Raises:
        InputError: The file is not such a log, or the precision cannot be told from the graph
            name and was not given.
    """
    path = Path(path)
    text = read_text(path, what="benchmark_model log")
    runs = parse_benchmark_log(text, file=path)
    if precision is not None and not is_precision(precision):
        raise InputError(f"unknown precision; expected one of {', '.join(PRECISIONS)}",
                         file=path, value=precision)
    if processor is not None:
        try:
            processors.kind(processor)
        except InputError as exc:
            raise InputError(exc.message, file=path, value=processor) from None
    configs: list[Config] = []
    for k, rec in enumerate(runs):
        where = f"run {k + 1}"
        graph = Path(rec["params"].get("graph", "")).stem
        name = model or re.sub(r"[_-]?(fp32|fp16|dr8|ffx8|fx8|float32|float16)$", "", graph,
                               flags=re.I) or None
        if not name:
            raise InputError("the log names no graph (benchmark_model's 'Graph:' line, or "
                             "litert-benchmark's 'Model:' log line: keep it with 2>&1); pass "
                             "the name with --model", file=path, where=where)
        prec = precision if is_precision(precision) else _precision_from_name(graph)
        if prec is None:
            raise InputError("cannot tell the precision from the graph name; pass it "
                             f"(one of {', '.join(PRECISIONS)})", file=path, where=where,
                             value=graph)
        proc, threads, xnn = _processor_from_params(rec["params"])
        if processor is not None:
            proc = processor
        fields: dict[str, Any] = {k2: rec[k2] for k2 in ("L", "L_min", "L_max", "L_std", "MF") if k2 in rec}
        fields["TP"] = 1000.0 / rec["L"] if rec["L"] > 0 else None
        cid = config_id(name, prec, proc, task=task, threads=threads, xnnpack=xnn)
        note = f"benchmark_model run {k + 1}" + (f", {rec['runs']} runs" if "runs" in rec else "")
        try:
            configs.append(Config(id=cid, task=task, model=name, precision=prec, processor=proc,
                                  threads=threads, xnnpack=xnn, source=source, note=note, **fields))
        except ValidationError as exc:
            err = error_from_validation(exc, file=path)
            raise InputError(err.message, file=path, where=f"{where}: {err.where}",
                             value=err.value) from None
    litert = text.lstrip().startswith(("{", "[")) or (
        "BENCHMARK RESULTS" in text and "Inference timings in us" not in text)
    prov = (Provenance(method=f"imported from LiteRT's litert-benchmark output {path.name}",
                       notes=["L, L_min, L_max, L_std from its inference timings (ms); it "
                              "reports no memory, so MF is not set."]) if litert else
            Provenance(method=f"imported from LiteRT benchmark_model log {path.name}",
                       notes=["L, L_min, L_max, L_std from the tool's timings (us -> ms); MF is "
                              "its 'Peak memory footprint' overall value."]))
    return _assemble(configs, device=_device(device, path.stem), source=source, provenance=prov,
                     file=path)
