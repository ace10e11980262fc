"""Import configuration tables made by other tools: CSV tables and LiteRT ``benchmark_model`` logs.

CSV columns: ``config, model, precision, processor`` (required) plus any of
``A, S, W, L, L_std, L_min, L_max, L_p50, L_p90, L_p99, TP, E, MF`` and the optional descriptive
columns ``task, arch, params, threads, xnnpack, delegate_precision, governor, memory_mode,
memory_budget_mb, batch, source, note``. Units: ms (latency), MB (MF, S), FLOPs (W), mJ (E),
samples/s (TP). Empty cells and ``-`` mean "not available".

Numbers are read exactly or refused with their line: ASCII digits and a ``.`` decimal point only
(Python's ``float()`` would also take full-width or Arabic-Indic digits and ``1_000``). A CSV cell
has no thousands separators (``"5,741"`` could be 5.741 with a decimal comma); in a
benchmark_model log a comma between groups of three digits is one (``5,741.6`` is 5741.6), a comma
and a space separate the timings fields, and any other comma in a number is refused.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .. import processors
from ..errors import InputError
from ..fileio import read_text
from ..metrics import COLUMNS
from .schema import (
    PRECISIONS,
    Config,
    Device,
    Engine,
    Profile,
    Provenance,
    Task,
)
from .store import error_from_validation

REQUIRED_COLUMNS = ("config", "model", "precision", "processor")
#: Metric columns a CSV table may have (every profile column but ``params``, which is optional).
METRIC_COLUMNS = tuple(c for c in COLUMNS if c != "params")
OPTIONAL_COLUMNS = ("task", "arch", "params", "threads", "xnnpack", "delegate_precision",
                    "governor", "recognition_rate", "memory_mode", "memory_budget_mb", "batch",
                    "source", "note")
_INT_COLUMNS = {"threads", "batch"}
_FLOAT_COLUMNS = set(METRIC_COLUMNS) | {"params", "memory_budget_mb", "recognition_rate"}
_MISSING = {"", "-", "n/a", "na", "none"}


def slug(text: str) -> str:
    """Lower-case id fragment: ``'EfficientNet Lite0'`` -> ``'efficientnet-lite0'``."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")


def config_id(model: str, precision: str, processor: str, *, task: str | None = None,
              threads: int | None = None, xnnpack: bool | None = None,
              extra: str | None = None) -> str:
    """The workbench's id for a configuration, e.g. ``uc1:efficientnet-lite0:FFX8:CPU:t4:xnn``."""
    parts = [slug(task)] if task and task != "default" else []
    parts += [slug(model), precision, processor]
    if threads is not None:
        parts.append(f"t{threads}")
    if xnnpack is not None:
        parts.append("xnn" if xnnpack else "noxnn")
    if extra:
        parts.append(extra)
    return ":".join(parts)


def _parse_bool(text: str) -> bool:
    t = text.strip().lower()
    if t in {"1", "true", "t", "yes", "y"}:
        return True
    if t in {"0", "false", "f", "no", "n"}:
        return False
    raise ValueError("expected true/false")


#: A number as the importers read it: ASCII digits only (``float()`` and ``\d`` also take other
#: scripts' digits: full-width, Arabic-Indic, ...), an optional sign, fraction and exponent; no
#: ``_`` (``float("1_000")`` is 1000), no ``inf``/``nan`` spelled out.
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: Thousands grouped by commas with a ``.`` decimal point, as a locale-aware printer writes
#: benchmark_model's numbers: ``5,741.6``, ``21,771``, ``1,234,567``.
_GROUPED = re.compile(r"[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?")


def _decimal(text: str, *, grouped: bool = False) -> float:
    """``text`` as a float, or a ValueError saying why not.

    ``grouped``: a comma between groups of three digits is a thousands separator (``5,741.6`` is
    5741.6). Any other comma inside a number (``5741,6``, ``5.741,6``, ``57,41``) is a decimal
    comma or something worse, and is refused rather than guessed. Without ``grouped`` every comma
    is refused: in a CSV table ``"5,741"`` may as well be 5.741 ms written with a decimal comma.
    """
    t = text.strip()
    if grouped and _GROUPED.fullmatch(t):
        t = t.replace(",", "")
    if _DECIMAL.fullmatch(t):
        return float(t)
    if not t.isascii():
        raise ValueError("not a number (digits must be ASCII 0-9)")
    if "," in t:
        raise ValueError("not a number (',' is read only as a thousands separator between "
                         "groups of three digits, with '.' as the decimal point: 5,741.6)"
                         if grouped else
                         "not a number (write '.' for the decimal point and no thousands "
                         "separators)")
    raise ValueError("not a number")


def _cell(column: str, text: str) -> Any:
    if text.strip().lower() in _MISSING:
        return None
    if column in _INT_COLUMNS:
        v = _decimal(text)
        if not v.is_integer():
            raise ValueError("expected a whole number")
        return int(v)
    if column in _FLOAT_COLUMNS:
        v = _decimal(text)
        if not math.isfinite(v) or v < 0:
            raise ValueError("must be a finite number >= 0")
        return v
    if column == "xnnpack":
        return _parse_bool(text)
    return text.strip()


def _device(device: Device | str | None, name_hint: str) -> Device:
    if isinstance(device, Device):
        return device
    from ..names import check_name

    # --device is typed by the user: one error naming it, not the schema's traceback.
    return Device(name=check_name(device or name_hint, what="device", where="--device"))


def _assemble(configs: list[Config], *, device: Device, source: str, provenance: Provenance,
              file: Any) -> Profile:
    """Wrap imported rows in a Profile whose engines and tasks are the ones the rows use."""
    engines: dict[str, Engine] = {}
    for c in configs:
        e = engines.setdefault(c.processor, Engine(name=c.processor, kind=c.kind, precisions=[]))
        if c.precision not in e.precisions:
            e.precisions = sorted({*e.precisions, c.precision}, key=PRECISIONS.index)
    tasks = [Task(name=t) for t in dict.fromkeys(c.task for c in configs)]
    try:
        return Profile(device=device, source=source, provenance=provenance,
                       engines=list(engines.values()), tasks=tasks, configs=configs)
    except ValidationError as exc:
        raise error_from_validation(exc, file=file) from None


def import_csv(path: str | os.PathLike, *, device: Device | str | None = None,
               source: str = "imported") -> Profile:
    """Read a configuration table from CSV into a Profile.

    Args:
        path: The CSV file.
        device: A Device description, or just its name (default: the file's stem).
        source: ``source`` of every row that has no ``source`` column value.

    Raises:
        InputError: Unknown or missing columns, a bad cell, duplicate config ids; the message
            names the file, the row (line number) and column, and the value.
    """
    path = Path(path)
    reader = csv.DictReader(io.StringIO(read_text(path, what="CSV table"), newline=""))
    try:
        header = reader.fieldnames or []
        if not header:
            raise InputError("empty CSV: expected a header row", file=path, where="line 1")
        header = [h.strip() for h in header]
        reader.fieldnames = header
        known = set(REQUIRED_COLUMNS) | set(METRIC_COLUMNS) | set(OPTIONAL_COLUMNS)
        for col in header:
            if col not in known:
                raise InputError(
                    f"unknown column; allowed: {', '.join(REQUIRED_COLUMNS + METRIC_COLUMNS)} "
                    f"(and optionally {', '.join(OPTIONAL_COLUMNS)})",
                    file=path, where="line 1", value=col)
        if len(set(header)) != len(header):
            dup = next(h for h in header if header.count(h) > 1)
            raise InputError("duplicate column", file=path, where="line 1", value=dup)
        for col in REQUIRED_COLUMNS:
            if col not in header:
                raise InputError(f"missing required column {col!r}", file=path, where="line 1")
        configs: list[Config] = []
        seen: dict[str, int] = {}
        for row in reader:
            line = reader.line_num
            if None in row:
                raise InputError("row has more cells than the header", file=path,
                                 where=f"line {line}", value=row[None])
            if all((v or "").strip() == "" for v in row.values()):
                continue
            fields: dict[str, Any] = {}
            for col, text in row.items():
                try:
                    v = _cell(col, text or "")
                except ValueError as exc:
                    raise InputError(str(exc), file=path, where=f"line {line}, column {col}",
                                     value=text) from None
                if v is not None:
                    fields["id" if col == "config" else col] = v
            for col in REQUIRED_COLUMNS:
                key = "id" if col == "config" else col
                if key not in fields:
                    raise InputError("required cell is empty", file=path,
                                     where=f"line {line}, column {col}")
            if fields["id"] in seen:
                raise InputError(f"duplicate config id (first at line {seen[fields['id']]})",
                                 file=path, where=f"line {line}, column config", value=fields["id"])
            seen[fields["id"]] = line
            fields.setdefault("source", source)
            try:
                configs.append(Config(**fields))
            except ValidationError as exc:
                err = error_from_validation(exc, file=path)
                col = "config" if err.where == "id" else err.where
                raise InputError(err.message, file=path, where=f"line {line}, column {col}",
                                 value=err.value) from None
    except csv.Error as exc:  # a NUL byte, a cell over the csv module's size limit
        raise InputError(f"not a readable CSV: {exc}", file=path,
                         where=f"line {reader.line_num}") from None
    if not configs:
        raise InputError("the CSV has a header but no rows", file=path)
    prov = Provenance(method=f"imported from CSV {path.name}", notes=[
        "Rows imported as given; units: ms, MB, FLOPs, mJ, samples/s."])
    return _assemble(configs, device=_device(device, path.stem), source=source, provenance=prov,
                     file=path)


# --- LiteRT benchmark_model logs -------------------------------------------------------------

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
_PRECISION_TOKENS = {"fp32": "FP32", "float32": "FP32", "fp16": "FP16", "float16": "FP16",
                     "dr8": "DR8", "dynamic": "DR8", "fx8": "FX8", "ffx8": "FFX8"}


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


def _num(text: str, *, file: Any, line: int, what: str, positive: bool = False) -> float:
    """A number of the log, or an InputError naming the line (``1.2.3``, ``--``, ``1e400``,
    ``5741,6``, digits other than ASCII 0-9); ``5,741.6`` is 5741.6 (see _decimal)."""
    try:
        v = _decimal(text, grouped=True)
    except ValueError as exc:
        raise InputError(f"{what}: {exc}", file=file, where=f"line {line}",
                         value=text) from None
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise InputError(f"{what} must be a finite number {'> 0' if positive else '>= 0'}",
                         file=file, where=f"line {line}", value=text)
    return v


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


# --- LiteRT's Python benchmark (`litert-benchmark`, ai_edge_litert.tools.benchmark_litert_model) --
_RE_LITERT_RESULT = re.compile(r"^\s*(Inference|Model initialization|Warmup) ?(?:\((\w+)\))?:\s*"
                               r"([-+0-9.eE]+) ms(?:\s*\((\d+) runs\))?")
_RE_LITERT_INFO = re.compile(r"\b(Model|Accelerators|Num threads):\s+(.+?)\s*$")


def _litert_record(latency: dict[str, Any], params: dict[str, str], *, file: Any,
                   where: str) -> dict[str, Any]:
    """A run of ``litert-benchmark`` (its latency fields in ms) as a parsed record."""
    def num(key: str) -> float | None:
        v = latency.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise InputError(f"{key} must be a number >= 0", file=file, where=where, value=v)
        return float(v)

    avg = num("avg_ms")
    if avg is None or avg <= 0:
        raise InputError("no mean inference time > 0 (the JSON's latency.avg_ms, the text's "
                         "'Inference (avg)')", file=file, where=where,
                         value=latency.get("avg_ms"))
    rec: dict[str, Any] = {"params": params, "L": avg}
    for key, field in (("min_ms", "L_min"), ("max_ms", "L_max"), ("std_ms", "L_std"),
                       ("init_ms", "init_ms"), ("warmup_first_ms", "first_ms")):
        v = num(key)
        if v is not None:
            rec[field] = v
    runs = latency.get("num_runs")
    if runs is not None:
        if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
            raise InputError("num_runs is not a whole number >= 1", file=file, where=where,
                             value=runs)
        rec["runs"] = runs
    if not rec.get("L_min", 0) <= avg <= rec.get("L_max", math.inf):
        raise InputError("the mean is not between min and max", file=file, where=where,
                         value=(rec.get("L_min"), avg, rec.get("L_max")))
    return rec


def _litert_params(model: Any, accelerators: Any, threads: Any, *, file: Any = None,
                   where: str | None = None) -> dict[str, str]:
    """``litert-benchmark``'s model, accelerators and threads in the parameter names of
    ``benchmark_model`` logs (so one reader tells the processor)."""
    acc = [str(a).upper() for a in (accelerators if isinstance(accelerators, list)
                                    else str(accelerators or "").split("|"))]
    acc = [a.strip() for a in acc if a.strip()]
    t = str(threads if threads is not None else "").strip()
    if t and not (re.fullmatch("[0-9]+", t) and 1 <= int(t) <= processors.MAX_THREADS):
        raise InputError(f"num_threads must be 1..{processors.MAX_THREADS}", file=file,
                         where=where, value=threads)
    params = {"graph": str(model or ""), "num threads": t}
    params["use gpu"] = "true" if "GPU" in acc else "false"
    params["use nnapi"] = "true" if "NPU" in acc else "false"
    return params


def _parse_litert_json(text: str, *, file: Any) -> list[dict[str, Any]]:
    import json

    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"not JSON ({e.msg}, column {e.colno}): a litert-benchmark "
                         "--result_json file is one JSON object", file=file,
                         where=f"line {e.lineno}") from None
    docs = doc if isinstance(doc, list) else [doc]
    out = []
    for k, d in enumerate(docs):
        where = f"run {k + 1}" if len(docs) > 1 else "result"
        if not isinstance(d, dict) or not isinstance(d.get("latency"), dict):
            raise InputError("not a litert-benchmark --result_json file: no 'latency' object",
                             file=file, where=where)
        params = _litert_params(d.get("model"), d.get("accelerators"), d.get("num_threads"),
                                file=file, where=f"{where}: num_threads")
        out.append(_litert_record(d["latency"], params, file=file, where=where))
    return out


def _parse_litert_text(text: str, *, file: Any) -> list[dict[str, Any]]:
    """``litert-benchmark``'s printed results (its ``BENCHMARK RESULTS`` block), with the model,
    accelerators and threads from its log lines when the log was kept (``2>&1``)."""
    out: list[dict[str, Any]] = []
    info: dict[str, str] = {}
    latency: dict[str, Any] | None = None
    for n, line in enumerate(text.splitlines(), 1):
        m = _RE_LITERT_INFO.search(line)
        if m and "BENCHMARK" not in line and latency is None:
            info[m.group(1).lower()] = m.group(2)
        if "BENCHMARK RESULTS" in line:
            if latency is not None:
                out.append((latency, dict(info)))
            latency = {}
            continue
        if latency is None:
            continue
        m = _RE_LITERT_RESULT.match(line)
        if not m:
            if line.startswith("=") and latency and "avg_ms" in latency:
                out.append((latency, dict(info)))
                latency, info = None, {}
            continue
        what, stat, value, runs = m.groups()
        v = _num(value, file=file, line=n, what=f"{what} ({stat})" if stat else what)
        key = {("Inference", "avg"): "avg_ms", ("Inference", "min"): "min_ms",
               ("Inference", "max"): "max_ms", ("Inference", "std"): "std_ms",
               ("Inference", "median"): "median_ms", ("Model initialization", None): "init_ms",
               ("Warmup", "first"): "warmup_first_ms"}.get((what, stat))
        if key:
            latency[key] = v
        if (what, stat) == ("Inference", "avg") and runs:
            latency["num_runs"] = int(runs)
    if latency:
        out.append((latency, dict(info)))
    return [_litert_record(lat, _litert_params(inf.get("model"), inf.get("accelerators"),
                                               inf.get("num threads"), file=file,
                                               where=f"run {k + 1}: Num threads"),
                           file=file, where=f"run {k + 1}")
            for k, (lat, inf) in enumerate(out)]


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


def _precision_from_name(name: str) -> str | None:
    tokens = re.split(r"[^a-z0-9]+", name.lower())
    found = {_PRECISION_TOKENS[t] for t in tokens if t in _PRECISION_TOKENS}
    return found.pop() if len(found) == 1 else None


def import_benchmark_log(path: str | os.PathLike, *, model: str | None = None,
                         precision: str | None = None, processor: str | None = None,
                         task: str = "default", device: Device | str | None = None,
                         source: str = "imported") -> Profile:
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
    if precision is not None and precision not in PRECISIONS:
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
        prec = precision or _precision_from_name(graph)
        if prec is None:
            raise InputError("cannot tell the precision from the graph name; pass it "
                             f"(one of {', '.join(PRECISIONS)})", file=path, where=where,
                             value=graph)
        proc, threads, xnn = _processor_from_params(rec["params"])
        if processor is not None:
            proc = processor
        fields = {k2: rec[k2] for k2 in ("L", "L_min", "L_max", "L_std", "MF") if k2 in rec}
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


def accuracy_table(specs: list[str]) -> dict[tuple[str, str | None], float]:
    """Accuracy to attach to imported rows: each spec is ``MODEL=VALUE``, ``MODEL:PRECISION=VALUE``
    or a CSV file with columns ``model``, optionally ``precision``, and ``A`` (or ``accuracy``).
    Keys are (model, precision or None for every precision)."""
    out: dict[tuple[str, str | None], float] = {}

    def put(model: str, prec: str | None, value: str, where: Any, file: Any = None) -> None:
        if prec is not None and prec not in PRECISIONS:
            raise InputError(f"unknown precision; expected one of {', '.join(PRECISIONS)}",
                             file=file, where=where, value=prec)
        try:
            v = _decimal(value)
        except ValueError as exc:
            raise InputError("accuracy must be a number" + str(exc).removeprefix("not a number"),
                             file=file, where=where, value=value) from None
        if not math.isfinite(v):
            raise InputError("accuracy must be finite", file=file, where=where, value=value)
        out[(model, prec)] = v

    for spec in specs:
        if spec.lower().endswith(".csv"):
            path = Path(spec)
            try:
                rows = list(csv.DictReader(io.StringIO(read_text(path, what="accuracy table"),
                                                       newline="")))
            except csv.Error as exc:
                raise InputError(f"not a readable CSV: {exc}", file=path) from None
            if not rows or "model" not in rows[0] or not ({"A", "accuracy"} & set(rows[0])):
                raise InputError("an accuracy table needs columns model, A (or accuracy) and "
                                 "optionally precision", file=path)
            for k, row in enumerate(rows):
                put(row["model"], row.get("precision") or None,
                    row.get("A") or row.get("accuracy") or "", f"row {k + 2}", path)
            continue
        key, sep, value = spec.partition("=")
        if not sep or not key:
            raise InputError("expected MODEL=VALUE, MODEL:PRECISION=VALUE or a .csv file",
                             where="accuracy", value=spec)
        model, _, prec = key.partition(":")
        put(model, prec or None, value, "accuracy")
    return out


def attach_accuracy(profile: Profile, table: dict[tuple[str, str | None], float], *,
                    metric: str | None = None) -> Profile:
    """The profile with A set on the rows each entry names (a precision-specific entry wins over
    a model-wide one); ``metric`` names what A is for the tasks touched.

    Raises:
        InputError: An entry names a model (or model and precision) that no row has.
    """
    for (model, prec) in table:
        if not any(c.model == model and (prec is None or c.precision == prec)
                   for c in profile.configs):
            have = ", ".join(sorted({f"{c.model}:{c.precision}" for c in profile.configs}))
            raise InputError(f"no imported row of this model/precision (rows: {have})",
                             where="accuracy", value=f"{model}:{prec}" if prec else model)
    data = profile.model_dump()
    touched = set()
    for c in data["configs"]:
        v = table.get((c["model"], c["precision"]), table.get((c["model"], None)))
        if v is not None:
            c["A"] = v
            touched.add(c["task"])
    if metric:
        names = {t["name"] for t in data["tasks"]}
        for t in data["tasks"]:
            if t["name"] in touched:
                t["metric"] = metric
        data["tasks"] += [{"name": t, "metric": metric} for t in sorted(touched - names)]
    data["provenance"]["notes"].append(
        "A attached by hand (workbench profiles import --accuracy): cited or measured elsewhere, "
        "not measured by this import")
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        raise error_from_validation(exc) from None


def merge(base: Profile, extra: Profile, *, replace: bool = False) -> Profile:
    """Add ``extra``'s rows (and any engines and tasks it uses) to ``base``.

    Args:
        replace: Replace rows whose id already exists in ``base`` instead of raising.

    Raises:
        InputError: A row id exists in both and ``replace`` is false.
    """
    ids = {c.id for c in base.configs}
    clash = [c.id for c in extra.configs if c.id in ids]
    if clash and not replace:
        raise InputError("config ids already in the profile (use replace)", value=clash[0])
    new_ids = {c.id for c in extra.configs}
    configs = [c for c in base.configs if c.id not in new_ids] + list(extra.configs)
    engines = list(base.engines) + [e for e in extra.engines
                                    if e.name not in {b.name for b in base.engines}]
    tasks = list(base.tasks) + [t for t in extra.tasks if t.name not in {b.name for b in base.tasks}]
    data = base.model_dump()
    data.update(configs=[c.model_dump() for c in configs],
                engines=[e.model_dump() for e in engines], tasks=[t.model_dump() for t in tasks])
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        raise error_from_validation(exc) from None


def import_tables(paths: list[str | Path], *, device: str = "imported") -> Profile:
    """One profile from several CSV tables (one task per table, for multi-DNN problems); a table
    without a ``task`` column becomes a task named after its file."""
    merged: Profile | None = None
    for path in paths:
        prof = import_csv(path, device=device)
        stem = Path(path).stem
        if {c.task for c in prof.configs} == {"default"}:
            data = prof.model_dump()
            for c in data["configs"]:
                c["task"] = stem
            data["tasks"] = [{"name": stem}]
            prof = Profile.model_validate(data)
        merged = prof if merged is None else merge(merged, prof)
    if merged is None:
        raise InputError("no tables given")
    return merged


__all__ = ["import_csv", "import_tables", "import_benchmark_log", "parse_benchmark_log", "merge",
           "config_id", "slug", "accuracy_table", "attach_accuracy"]
