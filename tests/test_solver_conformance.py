"""One conformance suite that every solver passes (RASS, OODIn, pymoo's NSGA-II and friends,
Optuna's samplers)."""

import json

import numpy as np
import pytest
from conftest import make_profile  # noqa: I001

from workbench.errors import InputError
from workbench.moo import usecases
from workbench.moo.problem import DiscreteProblem
from workbench.solvers import solve

FAST = {"pop_size": 20, "n_gen": 15}
TRIALS = {"pop_size": 20, "n_gen": 10}
SOLVERS = [("rass", {}), ("oodin", {}), ("nsga2", FAST), ("spea2", FAST), ("smsemoa", FAST),
           ("optuna-nsga2", TRIALS), ("optuna-tpe", TRIALS)]


def _problems():
    return {
        "uc1-s20fe": usecases.problem("uc1", "s20fe"),
        "uc2-pixel7": usecases.problem("uc2", "pixel7"),
        "uc3-a71": usecases.problem("uc3", "a71"),
    }


PROBLEMS = _problems()


@pytest.mark.parametrize("solver, opts", SOLVERS, ids=[s for s, _ in SOLVERS])
@pytest.mark.parametrize("name", list(PROBLEMS))
def test_solver_returns_a_feasible_well_formed_design(solver, opts, name):
    pr = PROBLEMS[name]
    res = solve(pr, solver, **opts)
    assert res.status == "ok"
    d0 = res.d0
    # d0 is a real combination of this problem, feasible, described consistently.
    assert 0 <= d0.index < pr.size
    ev = pr.evaluate_flat(np.array([d0.index]))
    assert np.all(ev.G <= 0)
    assert d0.objectives == dict(zip(pr.objective_names, ev.F[0].tolist()))
    assert [c.id for c in pr.configs_of(d0.index)] == list(d0.configs)
    # optimality in RASS's normalisation, never above the best
    assert 1 <= d0.optimality <= pr.ranking.optimality[0] + 1e-9
    assert res.timing_ms["total"] > 0
    json.dumps(res.to_dict())  # JSON-ready


@pytest.mark.parametrize("solver, opts", SOLVERS, ids=[s for s, _ in SOLVERS])
def test_solver_reports_infeasible_problems(solver, opts):
    pr = usecases.problem("uc1", "s20fe", slo="max A; max TP; max L <= 1ms")
    res = solve(pr, solver, **opts)
    assert res.status == "infeasible" and res.d0 is None
    assert res.to_dict()["status"] == "infeasible"


@pytest.mark.parametrize("solver, opts", SOLVERS, ids=[s for s, _ in SOLVERS])
def test_solver_handles_a_single_row(solver, opts):
    pr = DiscreteProblem(make_profile([dict(id="only", A=1, TP=2, L=3, L_max=4)]),
                         "max A; max TP; max L <= 10")
    res = solve(pr, solver, **opts)
    assert res.ok and res.d0.configs == ("only",)


def test_exact_solvers_find_pareto_optimal_designs():
    for pr in PROBLEMS.values():
        F = np.where(pr.maximise, -pr.feasible.F, pr.feasible.F)  # minimisation form
        for solver in ("rass", "oodin"):
            res = solve(pr, solver)
            if pr.multi and solver == "oodin":
                continue  # OODIn's multi-DNN answer is multi-DNN-unaware by design
            d = pr.evaluate_flat(np.array([res.d0.index])).F[0]
            d = np.where(pr.maximise, -d, d)
            assert not np.any(np.all(F <= d, axis=1) & np.any(F < d, axis=1)), solver


def test_nsga2_reports_indicators_against_the_exact_front():
    res = solve(PROBLEMS["uc1-s20fe"], "nsga2", pop_size=40, n_gen=30)
    ex = res.extra
    assert ex["evaluations"] > 0 and 0 <= ex["hv_ratio"] <= 1 + 1e-9 and ex["igd"] >= 0
    assert 0 < ex["optimality_ratio"] <= 1 + 1e-9
    # reproducible with the same seed
    again = solve(PROBLEMS["uc1-s20fe"], "nsga2", pop_size=40, n_gen=30)
    assert again.extra["front"] == ex["front"]


def test_unknown_solver_and_unsupported_algorithm():
    with pytest.raises(InputError, match="unknown solver"):
        solve(PROBLEMS["uc1-s20fe"], "simplex")
    with pytest.raises(InputError, match="cannot solve this problem"):
        solve(PROBLEMS["uc1-s20fe"], "moead", **FAST)  # pymoo's MOEA/D takes no constraints


def test_an_evolutionary_run_reports_progress_and_stops_when_asked():
    from workbench.moo.problem import DiscreteProblem
    from workbench.profiles import load_profile, resolve_profile
    from workbench.solvers.evolutionary import evolutionary

    pb = DiscreteProblem(load_profile(resolve_profile("a71")), "max A; max TP; max L <= 41.67ms",
                         tasks=["uc1"])
    seen = []
    full = evolutionary(pb, pop_size=10, n_gen=6, compare=False,
                        progress=lambda done, total: seen.append((done, total)))
    assert [d for d, _ in seen] == list(range(1, 7)) and {t for _, t in seen} == {6}
    assert "cancelled" not in full.extra
    stop = evolutionary(pb, pop_size=10, n_gen=1000, compare=False,
                        progress=lambda done, total: done < 3)
    assert stop.extra["cancelled"] and stop.extra["generations_done"] <= 4 and stop.ok


@pytest.mark.parametrize("solver", ["nsga2", "optuna-nsga2", "optuna-tpe"])
def test_both_libraries_report_the_same_indicators_and_keep_their_own_result(solver):
    """pymoo and Optuna answer on one table: evaluations, HV and IGD against the exact front,
    the optimality ratio; the library's own result (pymoo's Result, Optuna's Study) stays with
    the caller; a seed reproduces the front."""
    pr = PROBLEMS["uc2-pixel7"]
    res = solve(pr, solver, pop_size=20, n_gen=10, seed=3)
    ex = res.extra
    assert ex["evaluations"] > 0 and 0 <= ex["hv_ratio"] <= 1 + 1e-9 and ex["igd"] >= 0
    assert 0 < ex["optimality_ratio"] <= 1 + 1e-9
    if solver.startswith("optuna"):
        assert len(res.raw.trials) == ex["evaluations"] == 200
        # Its front is the feasible non-dominated set of what it tried.
        tried = {int(np.ravel_multi_index(tuple(t.params[f"x{i}"] for i in range(len(pr.shape))),
                                          pr.shape)) for t in res.raw.trials}
        assert set(ex["front"]) <= tried
    else:
        assert res.raw.algorithm.evaluator.n_eval == ex["evaluations"]
    assert solve(pr, solver, pop_size=20, n_gen=10, seed=3).extra["front"] == ex["front"]
    assert "raw" not in res.to_dict()
