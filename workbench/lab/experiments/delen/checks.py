"""Delen's figures beside the paper's numbers (:data:`PAPER`, cited): each check says what the
paper claims, what was measured here and whether the shape holds; the ledger decides the
status (:mod:`workbench.lab.reproduction`)."""

from __future__ import annotations

from typing import Any

from .... import papers

#: Delen's reported numbers we set beside ours (data with its citation: workbench/data/papers).


#: Delen's reported numbers we set beside ours (data with its citation: workbench/data/papers).
PAPER = {k: v for k, v in papers.paper("delen").items() if k not in ("note",)}


def _by(rows: list[dict[str, Any]], *keys: str) -> dict[tuple, dict[str, Any]]:
    return {tuple(r[k] for k in keys): r for r in rows}


def paper_checks(*, fig5: dict[str, Any], fig7: list[dict[str, Any]], fig8_savings: dict[str, float],
                 fig9: list[dict[str, Any]], fig10: list[dict[str, Any]],
                 fig11: list[dict[str, Any]], fig13: list[dict[str, Any]],
                 fig14: list[dict[str, Any]], fig15: list[dict[str, Any]],
                 table3: dict[str, list[float]] | None = None) -> list[dict[str, Any]]:
    """Each figure's claim in the paper beside what this run shows: one row per figure
    (``figure``, ``paper``, ``workbench``), computed from the runs' rows. Whether a claim holds
    is not decided here: the reproduction ledger decides it from each figure's own numbers
    (:mod:`workbench.lab.reproduction`)."""
    P = PAPER
    rows: list[dict[str, Any]] = []

    def add(fig: str, paper: str, ours: str) -> None:
        rows.append({"figure": fig, "paper": paper, "workbench": ours})

    add("Fig. 5", P["fig5"], f"{fig5['vectors']} threshold vectors, {len(fig5['front'])} on the "
        f"front ({fig5['metric']} against error)")

    r7 = {r["policy"]: r for r in fig7}
    conf = next(v for k, v in r7.items() if k.startswith("pR (C"))
    pf, rate = r7["PF"], conf["rate"]
    add("Fig. 7", P["fig7"],
        f"offered {rate:.0f}/s: pR (C>0.7) serves {conf['throughput'] or 0:.0f}/s at accuracy "
        f"{conf['accuracy']:.3f}, response {conf['response_ms']:.0f} ms; PF {pf['throughput'] or 0:.0f}/s "
        f"at {pf['accuracy']:.3f}, {pf['response_ms']:.0f} ms")

    f8 = P["fig8"]
    add("Fig. 8", f"PF {f8['pf_vs_full_energy_saving_mean_pct']}% less energy than Full, "
        f"{f8['pf_vs_pw_energy_saving_mean_pct']}% less than per-workload (means)",
        f"PF {fig8_savings['pf_vs_full_energy_saving_mean_pct']:.1f}% less than Full, "
        f"{fig8_savings['pf_vs_pw_energy_saving_mean_pct']:.1f}% less than per-workload")

    drops = []
    for m in dict.fromkeys(r["model"] for r in fig9):
        e = [r["energy_mj"] for r in fig9 if r["model"] == m]
        drops.append(all(a >= b - 1e-12 for a, b in zip(e, e[1:])) and e[0] > e[-1])
    add("Fig. 9", P["fig9"], f"energy per request falls from high to low battery for "
        f"{sum(drops)} of {len(drops)} apps")

    h = {r["policy"]: r for r in fig10}
    ph = P["fig10"]["battery_hours"]
    ours, theirs = h["Pareto frontier"]["vs_full"], ph["Pareto"] / ph["full"]
    add("Fig. 10", f"battery life: Pareto {theirs:.2f}x Full, per-workload "
        f"{ph['per-workload'] / ph['full']:.2f}x (measured on a Jetson Nano)",
        f"Pareto {ours:.2f}x Full, per-workload {h['per-workload']['vs_full']:.2f}x (modelled power)")

    add("Figs 11-12", P["fig12"], _rates_text(fig11))
    add("Fig. 13", P["fig13"], _limiter_text(fig13))
    ours14, ours15 = _tenancy_texts(fig14, fig15)
    add("Fig. 14", P["fig14"], ours14)
    add("Fig. 15", P["fig15"], ours15)

    if table3:
        t = P["table3"]
        crit, upd, ovh = (table3[k][0] for k in table3)
        add("Table 3", f"criteria {t['criteria_eval_us']} us per exit, Pareto update "
            f"{t['pareto_update_ms']} ms, all-exit overhead {t['overhead_mean_pct']}% mean",
            f"criteria {crit} us p99, Pareto update {upd} ms p99, all-exit overhead {ovh}%")
    return rows


def _rates_text(fig11: list[dict[str, Any]]) -> str:
    """Figs 11-12 here: how PF's accuracy compares with pW's and exit==1's at every load."""
    r11 = _by(fig11, "policy", "load")
    loads = sorted({r["load"] for r in fig11})
    pw_lowest = [r11[("pW", x)]["accuracy"] <= r11[("PF", x)]["accuracy"] + 1e-9 for x in loads]
    floor = [r11[("pW (exit==1)", x)]["accuracy"] <= min(r11[(p, x)]["accuracy"]
                                                        for p in ("PF", "pW")) + 1e-9
             for x in loads]
    return (f"PF at least as accurate as pW at {sum(pw_lowest)} of {len(loads)} loads; exit==1 "
            f"the lowest at {sum(floor)} of {len(loads)}; PF accuracy "
            + ", ".join(f"{r11[('PF', x)]['accuracy']:.3f}" for x in loads))


def _limiter_text(fig13: list[dict[str, Any]]) -> str:
    """Fig. 13 here: each policy's usage at the highest load against the limiter's bound."""
    top = max(r["load"] for r in fig13)
    r13 = {r["policy"]: r for r in fig13 if r["load"] == top}
    c13 = next(v for k, v in r13.items() if k.startswith("pR (C"))
    return (f"at load {top}: usage " + ", ".join(f"{k} {v['usage']:.2f}" for k, v in r13.items())
            + f"; largest window {max(r['max_window_usage'] for r in fig13):.2f} against bound "
            f"{max(r['bound'] for r in fig13):.2f}; pR (C>0.7) delayed {c13['delayed']}")


def _burst(rows: list[dict[str, Any]], app: str, key: str) -> tuple[Any, Any]:
    """An app's ``key`` before and during the burst."""
    b = _by(rows, "phase", "app")
    return b[("before", app)][key], b[("burst", app)][key]


def _num(v: float | None, digits: int) -> str:
    # A phase in which an app answered nothing has no accuracy (a short run can do that).
    return "n/a" if v is None else f"{v:.{digits}f}"


def _tenancy_texts(fig14: list[dict[str, Any]], fig15: list[dict[str, Any]]) -> tuple[str, str]:
    """Figs 14-15 here: IMG1's burst, non-cooperative (the others' accuracy barely moves) and
    cooperative (its share and accuracy)."""
    a0, a1 = _burst(fig14, "IMG1", "accuracy")
    moves = [abs(b1 - b0) for b0, b1 in (_burst(fig14, a, "accuracy") for a in ("IMG2", "AUDIO"))
             if b0 is not None and b1 is not None]
    ours14 = (f"IMG1 accuracy {_num(a0, 3)} -> {_num(a1, 3)} in the burst; the others move at "
              f"most {_num(max(moves) if moves else None, 3)}")
    c0, c1 = _burst(fig15, "IMG1", "accuracy")
    s0, s1 = _burst(fig15, "IMG1", "share")
    ours15 = (f"IMG1 share {_num(s0, 2)} -> {_num(s1, 2)}, accuracy {_num(c0, 3)} "
              f"-> {_num(c1, 3)} (non-cooperative {_num(a0, 3)} -> {_num(a1, 3)})")
    return ours14, ours15
