"""LiteRT's Python benchmark (``litert-benchmark``, ai_edge_litert.tools.benchmark_litert_model):
its ``--result_json`` file and its printed results, read into the records
:func:`.benchlog.parse_benchmark_log` returns (latencies in ms, its model, accelerators and threads
in ``benchmark_model``'s parameter names)."""

from __future__ import annotations

import math
import re
from typing import Any

from ... import processors
from ...errors import InputError
from .common import _num

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
    out: list[tuple[dict[str, Any], dict[str, str]]] = []  # (latency fields, log info) per run
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
