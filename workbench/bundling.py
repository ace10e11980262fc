"""Turn a solved problem into a deployment bundle (the runtime side is
:mod:`workbench.runtime.bundle`), and account for storage as CARIn Table 10 does.

A bundle holds only the model files its designs need, each with a sha256 the runtime checks;
``include="all"`` stores every candidate configuration instead, as OODIn must (it may re-solve
to any of them at run time).
"""

from __future__ import annotations

import json
import math
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import __version__
from .errors import InputError
from .fileio import dumps_json, replace_dir, staging
from .moo.problem import DiscreteProblem
from .runtime.bundle import FORMAT, MANIFEST, VERSION, sha256_of
from .solvers.result import SolveResult

EXPECTED = ("L", "L_std", "L_p99", "TP", "A", "MF", "W", "E", "S")


def zoo_files(root: str | os.PathLike) -> dict[tuple[str, str, str], Path]:
    """Every available model file of a zoo folder, keyed by (task, model, precision)."""
    out = {}
    for rec in sorted(Path(root).glob("*/*/record.json")):
        data = json.loads(rec.read_text())
        for v in data.get("variants", []):
            if v.get("available") and (rec.parent / v["file"]).is_file():
                out[(data["task"], data["model"], v["precision"])] = rec.parent / v["file"]
    return out


@dataclass(frozen=True)
class Storage:
    """Bytes stored by a bundle of the designs against storing every candidate (Table 10)."""

    designs_mb: float
    all_mb: float
    n_design_models: int
    n_all_models: int

    @property
    def reduction(self) -> float:
        return self.all_mb / self.designs_mb if self.designs_mb else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {"designs_mb": round(self.designs_mb, 4), "all_candidates_mb": round(self.all_mb, 4),
                "n_design_models": self.n_design_models, "n_all_models": self.n_all_models,
                "reduction": round(self.reduction, 3)}


def _finite(v: Any) -> bool:
    return v is not None and math.isfinite(v)


def _part(name: str, where: str) -> str:
    """A task or model name as one folder of the bundle: a name that would climb out of it or
    make more than one folder is refused (profiles are user input)."""
    if (not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name
            or name.startswith(".")):
        raise InputError("not usable as a folder of the bundle (no '/', '\\' or leading '.')",
                         where=where, value=name)
    return name


def _model_key(c) -> tuple[str, str, str]:
    # "ARCH@POINT" names an operating point (e.g. an exit) of one stored model ARCH: count the
    # stored model once, however many of its points are candidates or designs.
    if "@" in c.model and c.arch:
        return (c.task, c.arch, c.precision)
    return (c.task, c.model, c.precision)


def storage(result: SolveResult, problem: DiscreteProblem) -> Storage:
    """Model storage of the designs (distinct model variants, size S in MB from the profile)
    against every candidate variant of the problem's tasks (what OODIn keeps on the device)."""
    sizes: dict[tuple[str, str, str], float] = {}
    for ts in problem.tasks:
        for c in ts.configs:
            if c.S is not None:
                sizes[_model_key(c)] = c.S
    used = {_model_key(c) for d in result.designs.values() for c in
            (problem.profile.config(cid) for cid in d.configs)}
    return Storage(sum(sizes.get(k, 0.0) for k in used), sum(sizes.values()), len(used),
                   len(sizes))


def model_files(zoo: str | os.PathLike | None = None) -> dict[tuple[str, str, str], Path]:
    """Model files a bundle can take, keyed by (task, model, precision): the workspace's model
    registry (``workbench models add``) and a zoo folder (default: the workspace's zoo)."""
    from . import workspace
    from .host import registry

    files = zoo_files(zoo if zoo is not None else workspace.zoo_dir())
    files.update(registry.variant_files())
    return files


def make_bundle(result: SolveResult, problem: DiscreteProblem, out: str | os.PathLike, *,
                models: str | os.PathLike | None = None, include: str = "designs",
                overwrite: bool = False) -> dict[str, Any]:
    """Write a bundle folder for a solved problem.

    Args:
        result: A solver's result (RASS: designs and switching policy; others: d0).
        problem: The problem it solved (for the profile rows and the SLOs).
        out: The bundle folder to create.
        models: A zoo folder holding the model files (default: the workspace's zoo); models
            registered with ``workbench models add`` are always found.
        include: ``"designs"`` (only what the designs need) or ``"all"`` (every candidate).
        overwrite: Replace an existing bundle folder.

    Returns:
        The manifest that was written.

    Raises:
        InputError: The result is infeasible, a configuration has no model file (a modelled
            phone profile has none), or ``out`` exists and ``overwrite`` is False.
    """
    if include not in ("designs", "all"):
        raise InputError("include must be 'designs' or 'all'", where="include", value=include)
    if not result.ok:
        raise InputError("nothing to bundle: the problem is infeasible", value=result.status)
    out = Path(out)
    if out.exists() and not overwrite:
        raise InputError("already exists (pass overwrite=True / --force)", file=out)
    prof = problem.profile
    files = model_files(models)
    if include == "all":
        configs = [c for ts in problem.tasks for c in ts.configs]
    else:
        seen = dict.fromkeys(cid for d in result.designs.values() for cid in d.configs)
        configs = [prof.config(cid) for cid in seen]
    streamed = [c for c in configs if c.memory_mode not in (None, "bulk")]
    if streamed:
        # They run on workbench.memory's NumPy executor; the LiteRT runtime would silently run
        # them in bulk, so refuse rather than deploy a different memory footprint.
        raise InputError("memory-mode (streamed/planned) configurations cannot be deployed by "
                         "workbench.runtime yet; solve on a profile without them",
                         where=f"configs[{streamed[0].id!r}]", value=streamed[0].label())
    missing = [c for c in configs if _model_key(c) not in files]
    if missing:
        c = missing[0]
        why = (f"the {prof.source} profile of {prof.device.name} has no model files here"
               if prof.source != "measured" else f"no {c.precision} file of {c.model} "
               f"({c.task}) in the model registry or under {models or 'the zoo'}; build the zoo "
               "(`workbench zoo build`) or add the model (`workbench models add`)")
        raise InputError(f"{len(missing)} configuration(s) have no model file: {why}",
                         where=f"configs[{c.id!r}]", value=c.label())
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = staging(out, folder=True)
    try:
        model_info: dict[str, dict[str, Any]] = {}
        cfg_out: dict[str, dict[str, Any]] = {}
        for c in configs:
            src = files[_model_key(c)]
            w = f"configs[{c.id!r}]"
            rel = f"models/{_part(c.task, w + '.task')}/{_part(c.model, w + '.model')}/{src.name}"
            if rel not in model_info:
                dst = tmp / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dst)
                model_info[rel] = {"sha256": sha256_of(dst), "bytes": dst.stat().st_size}
            cfg_out[c.id] = {
                "task": c.task, "model": c.model, "precision": c.precision,
                "processor": c.processor, "threads": c.threads or 1,
                "xnnpack": bool(c.xnnpack) if c.xnnpack is not None else True,
                "batch": c.batch, "file": rel, "label": c.label(),
                "expected": {k: getattr(c, k) for k in EXPECTED if _finite(getattr(c, k))}}
        order = sorted(result.designs.values(), key=lambda d: -d.optimality)
        tasks = [{"name": t.name, "batch": t.batch,
                  "metric": t.metric, "higher_is_better": t.higher_is_better}
                 for t in (prof.task(n) for n in problem.task_names)]
        st = storage(result, problem)
        manifest = {
            "format": FORMAT, "version": VERSION, "created_by": f"workbench {__version__}",
            "solver": result.solver, "slo": str(problem.slo), "include": include,
            "device": {"name": prof.device.name, "source": prof.source},
            "tasks": tasks, "models": model_info, "configs": cfg_out,
            "designs": {r: {"configs": list(d.configs), "labels": list(d.labels),
                            "optimality": d.optimality if _finite(d.optimality) else None,
                            "objectives": d.objectives, "W": d.W, "MF": d.MF,
                            **({"trigger": d.trigger} if d.trigger else {})}
                        for r, d in result.designs.items()},
            "triggers": list(result.triggers),
            "policy": [r.to_dict() for r in result.policy],
            "policy_table": result.policy_table(),
            "policy_vector": list(result.policy_vector),
            "fallback": [d.role for d in order],
            "storage": {**st.to_dict(), "bundle_bytes": sum(m["bytes"] for m in
                                                            model_info.values())},
        }
        (tmp / MANIFEST).write_text(dumps_json(manifest) + "\n", encoding="utf-8")
        replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest

