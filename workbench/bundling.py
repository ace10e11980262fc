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

from .errors import InputError
from .fileio import dumps_json, replace_dir, staging
from .memorymodes import PROGRAM_MODES
from .moo.problem import DiscreteProblem
from .runtime.bundle import FORMAT, MANIFEST, MAX_MANIFEST_BYTES, VERSION, sha256_of
from .solvers.result import SolveResult
from .version import __version__

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
                # None when the profile gives no sizes (S): nothing to compare.
                "reduction": round(self.reduction, 3) if _finite(self.reduction) else None}


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


def _write_programs(configs: list, tmp: Path, model_info: dict[str, dict[str, Any]],
                    graphs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each memory-mode configuration as a layer program with its weight files under ``tmp``
    (entries added to ``model_info``); per configuration: its program's path and the manifest's
    ``memory`` field (mode, budget, weight files)."""
    if not configs:
        return {}
    from .memory.modes import graph_of
    from .memory.programs import PROGRAM, program_for, write_program

    out = {}
    for c in configs:
        w = f"configs[{c.id!r}]"
        if c.memory_budget_mb is None:
            raise InputError("a planned or streamed configuration needs memory_budget_mb",
                             where=w, value=c.label())
        g = graphs.get(c.model)
        if g is None:
            try:
                g = graphs[c.model] = graph_of(c.model)
            except InputError as e:
                raise InputError(f"no layer graph for the memory-mode configuration: {e}",
                                 where=w, value=c.label()) from None
        folder = (f"models/{_part(c.task, w + '.task')}/{_part(c.model, w + '.model')}/"
                  f"{c.memory_mode}@{c.memory_budget_mb:g}MB")
        prog = program_for(g, c.memory_mode, c.memory_budget_mb)
        rels = []
        for f in write_program(g, prog, tmp / folder):
            rel = f"{folder}/{f.name}"
            model_info[rel] = {"sha256": sha256_of(f), "bytes": f.stat().st_size}
            rels.append(rel)
        out[c.id] = {"program": f"{folder}/{PROGRAM}", "mode": c.memory_mode,
                     "budget_mb": c.memory_budget_mb,
                     "weights": sorted(r for r in rels if not r.endswith("/" + PROGRAM))}
    return out


def _write_multiexit(configs: list, tmp: Path, model_info: dict[str, dict[str, Any]],
                     stored: dict[tuple[str, str], Path]) -> dict[str, dict[str, Any]]:
    """Each multi-exit operating point (``ARCH@POINT`` with criteria): the stored model's
    segments under ``tmp``, written once per stored model however many of its points are
    bundled (entries added to ``model_info``); per configuration its manifest ``multi_exit``
    field (segments, criteria, each exit's accuracy and FLOPs, input shape)."""
    import json

    from .multiexit.profiling import STORED

    out, written = {}, {}
    for c in configs:
        w = f"configs[{c.id!r}]"
        key = (c.task, c.arch)
        if key not in written:
            src = stored[key]
            d = json.loads((src / STORED).read_text(encoding="utf-8"))
            folder = f"models/{_part(c.task, w + '.task')}/{_part(c.arch, w + '.arch')}/multiexit"
            rels = []
            for seg in d["segments"]:
                rel = f"{folder}/{_part(seg, w + '.segments')}"
                (tmp / folder).mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src / seg, tmp / rel)
                model_info[rel] = {"sha256": sha256_of(tmp / rel),
                                   "bytes": (tmp / rel).stat().st_size}
                rels.append(rel)
            written[key] = {"segments": rels, "accuracy": d["accuracy"], "flops": d["flops"],
                            "input_shape": d["input_shape"]}
        out[c.id] = {**written[key], "criteria": c.criteria}
    return out


def check_output(out: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Where a bundle may be written: a new path, an empty folder, or (with ``overwrite``) a
    folder holding a bundle's manifest (``manifest.json`` whose ``format`` is a bundle's).

    Anything else is refused, ``overwrite`` or not: replacing ``out`` deletes it whole, and a
    folder workbench did not write (a typo in ``-o``, a home folder) is not ours to delete."""
    out = Path(out)
    if not out.exists() and not out.is_symlink():
        return out
    if out.is_symlink() or not out.is_dir():
        raise InputError("is not a folder: a bundle goes to a new or empty folder, or replaces "
                         "a bundle", file=out)
    if not any(out.iterdir()):
        return out  # an empty folder: nothing in it to lose
    manifest = _bundle_manifest(out)
    if manifest is None:
        raise InputError("refusing to replace this folder: it was not written by workbench (no "
                         f"bundle {MANIFEST}); give a new or empty folder", file=out)
    stranger = _stranger(out, manifest)
    if stranger is not None:
        raise InputError(f"refusing to replace this bundle: it holds {stranger}, which its "
                         "manifest does not list (a file of yours?); move it out or give a new "
                         "folder", file=out)
    if not overwrite:
        raise InputError("already exists (pass overwrite=True / --force)", file=out)
    return out


def _bundle_manifest(folder: Path) -> dict[str, Any] | None:
    """``folder``'s bundle manifest (of any version), or None when it holds none."""
    from .fileio import parse_json, read_text

    m = folder / MANIFEST
    try:
        data = parse_json(read_text(m, what="bundle manifest", limit=MAX_MANIFEST_BYTES), file=m)
    except (OSError, InputError):
        return None
    return data if isinstance(data, dict) and data.get("format") == FORMAT else None


def _stranger(folder: Path, manifest: dict[str, Any], limit: int = 100_000) -> str | None:
    """The first thing in ``folder`` that make_bundle did not write: anything but the manifest,
    the model files it lists and the folders holding them. Replacing a bundle deletes the whole
    folder, so a file a user put there (or a manifest written by hand) must not go with it."""
    models = manifest.get("models")
    listed = {MANIFEST} | (set(models) if isinstance(models, dict) else set())
    parents = {str(Path(p).parent) for p in listed} - {"."}
    parents |= {str(q) for p in parents for q in Path(p).parents} - {"."}
    for n, (root, dirs, files) in enumerate(os.walk(folder)):
        rel = Path(root).relative_to(folder)
        if n > limit:
            return "more entries than a bundle has"
        for d in dirs:
            r = str(rel / d)
            if r not in parents or (Path(root) / d).is_symlink():
                return r
        for f in files:
            r = str(rel / f) if str(rel) != "." else f
            if r not in listed or (Path(root) / f).is_symlink():
                return r
    return None


def make_bundle(result: SolveResult, problem: DiscreteProblem, out: str | os.PathLike, *,
                models: str | os.PathLike | None = None, include: str = "designs",
                overwrite: bool = False, graphs: dict[str, Any] | None = None,
                multi_exit: dict[tuple[str, str], str | os.PathLike] | None = None
                ) -> dict[str, Any]:
    """Write a bundle folder for a solved problem.

    Args:
        result: A solver's result (RASS: designs and switching policy; others: d0).
        problem: The problem it solved (for the profile rows and the SLOs).
        out: The bundle folder to create.
        models: A zoo folder holding the model files (default: the workspace's zoo); models
            registered with ``workbench models add`` are always found.
        include: ``"designs"`` (only what the designs need) or ``"all"`` (every candidate).
        overwrite: Replace an existing bundle folder (only a bundle: a folder holding anything
            else is never replaced; an empty one is used as it is).
        graphs: Layer graphs (``workbench.memory.graph.LayerGraph``) by model name for the
            memory-mode configurations (``planned``/``streamed``); a model not here is found by
            name in the zoo or the model registry. Each such configuration is bundled as a layer
            program (its plan) with its per-layer or per-slice weight files.
        multi_exit: Stored multi-exit models (folders written by ``workbench multiexit build``)
            by (task, arch), for the multi-exit operating points (``ARCH@POINT`` rows with
            criteria); default: the zoo's. One copy of a stored model's segments serves every
            point of it; the runtime runs them with early exit (onnxruntime).

    Returns:
        The manifest that was written.

    Raises:
        InputError: The result is infeasible, a configuration has no model file (a modelled
            phone profile has none), a memory-mode configuration's model has no layer graph or
            its budget no longer fits, ``out`` exists and ``overwrite`` is False, or ``out`` is
            not a folder a bundle may replace (see :func:`check_output`).
    """
    if include not in ("designs", "all"):
        raise InputError("include must be 'designs' or 'all'", where="include", value=include)
    if not result.ok:
        raise InputError("nothing to bundle: the problem is infeasible", value=result.status)
    out = check_output(out, overwrite=overwrite)
    prof = problem.profile
    files = model_files(models)
    from .host import registry

    # The registry's files override the zoo's: a multi-output model answers with A's output.
    outputs, every_output = registry.output_refs(), registry.all_output_refs()
    if include == "all":
        configs = [c for ts in problem.tasks for c in ts.configs]
    else:
        seen = dict.fromkeys(cid for d in result.designs.values() for cid in d.configs)
        configs = [prof.config(cid) for cid in seen]
    programs = [c for c in configs if c.memory_mode in PROGRAM_MODES]
    exits = [c for c in configs if c.criteria is not None and c.arch]
    stored = _stored_multiexit(exits, prof, models, multi_exit) if exits else {}
    _check_model_files(configs, files, prof, models,
                       {c.id for c in programs} | {c.id for c in exits})
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = staging(out, folder=True)
    try:
        model_info: dict[str, dict[str, Any]] = {}
        mem = _write_programs(programs, tmp, model_info, graphs or {})
        me = _write_multiexit(exits, tmp, model_info, stored) if exits else {}
        cfg_out: dict[str, dict[str, Any]] = {}
        for c in configs:
            rel = _model_file(c, tmp, files, model_info, mem, me)
            cfg_out[c.id] = _config_entry(c, rel, mem, me, outputs, every_output)
        manifest = _manifest(result, problem, include, model_info, cfg_out)
        (tmp / MANIFEST).write_text(dumps_json(manifest) + "\n", encoding="utf-8")
        replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


def _stored_multiexit(exits: list, prof: Any, models: str | os.PathLike | None,
                      multi_exit: dict[tuple[str, str], str | os.PathLike] | None
                      ) -> dict[tuple[str, str], Path]:
    """Where each multi-exit configuration's stored model is, by (task, arch): the zoo's, then
    where the profile says it was stored, then ``multi_exit``; a configuration whose model is
    nowhere is an InputError naming it."""
    from . import workspace
    from .multiexit.profiling import stored_multiexit

    stored = stored_multiexit(Path(models) if models is not None else workspace.zoo_dir())
    # A model the zoo given does not hold: where the profile says it was stored (a quick
    # build's zoo, say), if that folder still holds it. What one command wrote, the next
    # finds.
    for m in prof.multi_exit or []:
        if m.folder and (m.task, m.arch) not in stored and \
                (m.task, m.arch) in stored_multiexit(Path(m.folder).parent.parent):
            stored[(m.task, m.arch)] = Path(m.folder)
    stored.update({k: Path(v) for k, v in (multi_exit or {}).items()})
    lost = [c for c in exits if (c.task, c.arch) not in stored]
    if lost:
        c = lost[0]
        raise InputError(f"no stored multi-exit model {c.arch} for task {c.task} (build it "
                         "with `workbench multiexit build`, or pass multi_exit=)",
                         where=f"configs[{c.id!r}]", value=c.label())
    return stored


def _check_model_files(configs: list, files: dict[tuple[str, str, str], Path], prof: Any,
                       models: str | os.PathLike | None, written: set[str]) -> None:
    """Every configuration not ``written`` from a layer graph or stored multi-exit model has a
    model file, else an InputError naming the first without and why (a modelled profile has
    none; a measured one points at the zoo and the registry)."""
    missing = [c for c in configs if _model_key(c) not in files and c.id not in written]
    if missing:
        c = missing[0]
        why = (f"the {prof.source} profile of {prof.device.name} has no model files here"
               if prof.source != "measured" else f"no {c.precision} file of {c.model} "
               f"({c.task}) in the model registry or under {models or 'the zoo'}; build the zoo "
               "(`workbench zoo build`) or add the model (`workbench models add`)")
        raise InputError(f"{len(missing)} configuration(s) have no model file: {why}",
                         where=f"configs[{c.id!r}]", value=c.label())


def _model_file(c: Any, tmp: Path, files: dict[tuple[str, str, str], Path],
                model_info: dict[str, dict[str, Any]], mem: dict[str, dict[str, Any]],
                me: dict[str, dict[str, Any]]) -> str:
    """The bundle file a configuration's ``file`` names: its layer program, its first
    multi-exit segment, or its model file (copied under ``tmp`` once however many
    configurations share it; entry added to ``model_info``)."""
    if c.id in mem:
        return mem[c.id]["program"]
    if c.id in me:
        return me[c.id]["segments"][0]
    w = f"configs[{c.id!r}]"
    src = files[_model_key(c)]
    rel = f"models/{_part(c.task, w + '.task')}/{_part(c.model, w + '.model')}/{src.name}"
    if rel not in model_info:
        dst = tmp / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        model_info[rel] = {"sha256": sha256_of(dst), "bytes": dst.stat().st_size}
    return rel


def _config_entry(c: Any, rel: str, mem: dict[str, dict[str, Any]],
                  me: dict[str, dict[str, Any]], outputs: dict, every_output: dict
                  ) -> dict[str, Any]:
    """A configuration's manifest entry: how to run it, what it is expected to measure, and the
    output its answers are (a registered multi-output model), its memory mode or its exits."""
    entry: dict[str, Any] = {
        "task": c.task, "model": c.model, "precision": c.precision,
        "processor": c.processor, "threads": c.threads or 1,
        "xnnpack": bool(c.xnnpack) if c.xnnpack is not None else True,
        "batch": c.batch, "file": rel, "label": c.label(),
        "expected": {k: getattr(c, k) for k in EXPECTED if _finite(getattr(c, k))}}
    ref = outputs.get((c.task, c.model))
    if ref is not None and c.id not in mem and c.id not in me:
        entry["output"] = {"index": ref[0], "key": ref[1], "name": ref[2]}
        if every_output.get((c.task, c.model)):
            entry["outputs"] = [{"index": k, "key": key, "name": name}
                                for k, key, name in every_output[(c.task, c.model)]]
    if c.id in mem:
        entry["memory"] = {k: v for k, v in mem[c.id].items() if k != "program"}
    if c.id in me:
        entry["multi_exit"] = me[c.id]
    return entry


def _manifest(result: SolveResult, problem: DiscreteProblem, include: str,
              model_info: dict[str, dict[str, Any]], cfg_out: dict[str, dict[str, Any]]
              ) -> dict[str, Any]:
    """The bundle's manifest (the runtime's :mod:`workbench.runtime.bundle` reads it)."""
    prof = problem.profile
    order = sorted(result.designs.values(), key=lambda d: -d.optimality)
    tasks = [{"name": t.name, "batch": t.batch,
              "metric": t.metric, "higher_is_better": t.higher_is_better}
             for t in (prof.task(n) for n in problem.task_names)]
    st = storage(result, problem)
    return {
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
