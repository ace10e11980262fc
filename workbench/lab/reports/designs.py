"""The designs report on a user's own profile (``workbench report --profile P --task T``): every
word comes from the profile (its device, source, provenance, tasks and models) and the solve,
never from a paper's use case. Plain data here; ``notebooks/designs.ipynb`` draws it."""

from __future__ import annotations

from typing import Any

from ...errors import InputError


def default_slo(profile, tasks: list[str]) -> str:
    """The SLO a report uses when none is given: max A and min L where the tasks' rows have an
    A (rows without one are left out of the problem, which says so), else min L and min MF (a
    profile without a task metric)."""
    rows = [c for c in profile.configs if c.task in tasks]
    return "max A; min L" if any(c.A is not None for c in rows) else "min L; min MF"


def check_tasks(profile, tasks: list[str], *, file: object = None) -> list[str]:
    """The tasks, each checked to be the profile's (an unknown one is an InputError listing
    the profile's tasks); none given: the profile's only task, or an error asking for one."""
    have = [t.name for t in profile.tasks]
    if not tasks:
        if len(have) == 1:
            return have
        raise InputError(f"the profile has several tasks ({', '.join(have)}): name one or more "
                         "with --task", file=file, where="--task")
    for t in tasks:
        if t not in have:
            raise InputError(f"not a task of the profile (its tasks: {', '.join(have)})",
                             file=file, where="--task", value=t)
    return list(tasks)


def header(profile, tasks: list[str], slo: str) -> str:
    """The report's opening, in Markdown, from the profile alone."""
    d = profile.device
    by_name = {t.name: t for t in profile.tasks}
    models = sorted({c.model for c in profile.configs if c.task in tasks})
    lines = [f"# Designs for {', '.join(tasks)} on {d.display_name or d.name}", "",
             f"**SLO:** `{slo}`. **Profile source: {profile.source.upper()}** "
             f"({profile.provenance.method}).", ""]
    for t in tasks:
        task = by_name[t]
        lines.append(f"- task **{t}**: A = {task.metric} "
                     f"({'higher' if task.higher_is_better else 'lower'} is better); "
                     f"{task.dataset or 'no dataset described'}")
    lines += [f"- models: {', '.join(models)}",
              f"- device: {d.soc or d.name}; RAM {d.ram_gb if d.ram_gb is not None else '?'} GB"]
    lines += [f"- {n}" for n in profile.provenance.notes]
    return "\n".join(lines)


def design_rows(problem, res) -> list[dict[str, Any]]:
    """One row per design role: the design, its optimality, each objective with its 95%
    interval's half-width where the profile has one, and how a tie was decided."""
    import math

    names = problem.objective_names
    rows = []
    for role, d in res.designs.items():
        row: dict[str, Any] = {"role": role, "design": " + ".join(d.labels),
                               "optimality": ("inf" if math.isinf(d.optimality)
                                              else f"{d.optimality:.4g}")}
        for n in names:
            row[n] = d.value_text(n)
        row["tie"] = d.tie or ""
        rows.append(row)
    return rows


def policy_rows(res) -> list[dict[str, Any]]:
    """The switching policy shaped like CARIn Table 7: one column per trigger (T, F or -), the
    memory flag, and the design switched to (a role that repeats another names it)."""
    rows = []
    for r in res.policy_table():
        d = res.designs.get(r["design"])
        same = next((o for o in res.designs.values() if d and o.role != r["design"]
                     and o.index == d.index and o.role < r["design"]), None)
        text = ("absent" if d is None else f"{r['design']} = "
                + (same.role if same else "<" + " + ".join(d.labels) + ">"))
        rows.append({**{f"c_{t}": f for t, f in zip([*res.triggers, "m"], r["flags"])},
                     "d_new": text})
    return rows


def caveats(profile, tasks: list[str]) -> list[str]:
    """What a reader must know about the rows: configurations that could not run (by reason)
    and rows whose latency varied too much to trust its mean."""
    from ...profiles.noise import noisy_warning

    out = []
    reasons: dict[str, int] = {}
    for f in profile.failed:
        if f.task in tasks:
            reasons[f.reason] = reasons.get(f.reason, 0) + 1
    for why, n in reasons.items():
        out.append(f"{n} configuration{'s' * (n != 1)} could not run: {why}")
    line = noisy_warning(c for c in profile.configs if c.task in tasks)
    if line:
        out.append(line.removeprefix("warning: "))
    return out


def summary(problem, res) -> dict[str, Any]:
    """The report's metrics.json: what was solved and what came out."""
    prof = problem.profile
    return {"device": prof.device.display_name or prof.device.name,
            "profile_source": prof.source, "tasks": list(problem.task_names),
            "slo": str(problem.slo), "n_configs": int(res.n_total),
            "n_feasible": int(res.n_feasible), "status": res.status,
            "designs": {r: " + ".join(d.labels) for r, d in res.designs.items()},
            "ties": {r: d.tie for r, d in res.designs.items() if d.tie}}


def write_summary(output_dir: str, problem, res, *, profile: str | None = None) -> str:
    """:func:`summary` written to ``<output_dir>/metrics.json`` (atomic), with the profile's
    file (what a later report into the same folder is checked against); returns its path."""
    from pathlib import Path

    from ...fileio import atomic_write_json

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "metrics.json", {"profile": profile, **summary(problem, res)})
    return str(out / "metrics.json")


def check_folder(folder, profile: str) -> None:
    """Refuse to write the report of ``profile`` over a folder holding another profile's (two
    profiles of one file name in different folders, say); the same profile's is replaced."""
    import json
    from pathlib import Path

    metrics = Path(folder) / "metrics.json"
    try:
        other = json.loads(metrics.read_text()).get("profile")
    except (OSError, ValueError, AttributeError):
        return
    if other and other != profile:
        raise InputError(f"holds the report of another profile ({other}): give another "
                         "--reports-dir, or remove the folder", file=str(folder))
