"""Delen's evaluations (section 6) on this machine, as functions returning plain rows.

Multi-exit nets are trained here (PyTorch) on the host datasets, exported to ONNX and executed
for real with onnxruntime; request traces (Poisson, stepped bursts) drive the trace-driven server
(:mod:`workbench.multiexit.serve`), whose clock is virtual but whose every request really runs.
Latency is measured; energy is MODELLED (``workbench.power``: dynamic energy per request at 5 W
per busy core; battery life adds a Jetson Nano's idle power: RAPL is unreadable here). Rates are
set relative to this machine's capacity (the paper's 30 requests/s on a Jetson Nano running
ResNet-50 becomes a rate that loads our small models as heavily).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from ... import papers
from ...host import datasets as ds
from ...multiexit.policies import ExitProfile, ParetoPolicy, dynamic_exit, full, oracle, static_exit
from ...multiexit.profiling import folder_size_mb, measure_exit_profile, store_multiexit
from ...multiexit.runner import SegmentedNet
from ...multiexit.serve import App, poisson, serve, stepped
from ...multiexit.sharing import CrossAppAdapter, Tenant
from ...power import JETSON_NANO, PowerModel
from ...runtime.criteria import parse_criteria

#: Delen's reported numbers we set beside ours (data with its citation: workbench/data/papers).
PAPER = {k: v for k, v in papers.paper("delen").items() if k not in ("note",)}

MODELS = {  # name -> (task, backbone, in channels)
    "ResNet-ME (h1)": ("h1", "resnet", 1),
    "EffNet-ME (h3-vision)": ("h3-vision", "effnet", 3),
    "Audio1D-ME (h3-audio)": ("h3-audio", "audio1d", 1),
}


@dataclass
class Built:
    """A trained, exported and profiled multi-exit net."""

    name: str
    task: str
    net: SegmentedNet
    profile: ExitProfile
    x: np.ndarray
    y: np.ndarray
    train_accuracy: list[float]
    size_mb: float
    folder: str
    segment_mb: list[float] | None = None


@contextlib.contextmanager
def _scratch(folder: str | Path | None, prefix: str) -> Iterator[tuple[Path, bool]]:
    """The folder a build writes to, and whether it is a temporary one made here; a build that
    fails part-way removes the temporary folder it made (a given folder is the caller's)."""
    if folder is not None:
        yield Path(folder), False
        return
    made = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield made, True
    except BaseException:
        shutil.rmtree(made, ignore_errors=True)
        raise


def _finish(name: str, task: str, folder: Path, made: bool, *, arch: str, info: dict,
            flops: Any, exit_accuracy: list[float], shape: tuple[int, ...], x: np.ndarray,
            y: np.ndarray) -> Built:
    """What every build ends with: the exported segments stored as a multi-exit model, opened,
    profiled on the test inputs, and returned as a :class:`Built`. A temporary folder lives as
    long as its Built (the ONNX sessions are already open, so the nets keep running without
    it): removed when the Built is dropped or at exit, so a notebook's builds leave nothing in
    /tmp."""
    store_multiexit(folder, arch=arch, task=task, segments=info["segments"],
                    accuracy=exit_accuracy, flops=flops, input_shape=shape)
    sn = SegmentedNet(folder, info["segments"], flops=flops, accuracy=exit_accuracy)
    prof = measure_exit_profile(sn, x, y, flops=flops, repeats=1, name=name)
    built = Built(name, task, sn, prof, x, np.asarray(y), exit_accuracy,
                  folder_size_mb(folder, info["segments"]), str(folder),
                  [folder_size_mb(folder, [f]) for f in info["segments"]])
    if made:
        weakref.finalize(built, shutil.rmtree, built.folder, ignore_errors=True)
    return built


def build(name: str, *, quick: bool = False, width: int = 32, epochs: int | None = None,
          seed: int = 0, folder: str | Path | None = None) -> Built:
    """Train (PyTorch), export (ONNX) and profile (onnxruntime) one of :data:`MODELS`.

    Without ``folder`` the segments go to a temporary folder removed with the returned
    :class:`Built` (pass a folder to keep them, e.g. for a bundle)."""
    from ...multiexit.training import MultiExitNet, count_flops, export_onnx, to_torch, train

    task, arch, cin = MODELS[name]
    data = ds.load(task, quick=quick)
    net = MultiExitNet(arch, cin, data.n_classes, width=width)
    res = train(net, data, epochs=epochs or (8 if quick else 12), seed=seed, task=task)
    shape = (cin, *data.x_train.shape[1:-1])
    with _scratch(folder, "delen-") as (out, made):
        info = export_onnx(net, shape, out, plain=False)
        return _finish(name, task, out, made, arch=name.split(" ")[0], info=info,
                       flops=count_flops(net, shape), exit_accuracy=res.exit_accuracy,
                       shape=shape, x=to_torch(data.x_test, net.dims).numpy(), y=data.y_test)


#: The real-scale multi-exit nets: EfficientNet-Lite0/1/2 (ImageNet weights) on Fashion-MNIST.
REALS = {v: f"EffNetLite{v}-ME (fashion)" for v in (0, 1, 2)}
#: The real-scale net of the single-net figures (5, 7, 11-13) and IMG1 of Figs 9-10, 14-15.
REAL = REALS[0]


def real_folder(variant: int = 0) -> Path:
    """Where a real-scale net is kept (its segments and its cached backbone features)."""
    from ... import workspace

    return workspace.zoo_dir() / "multiexit" / REALS[variant].split(" ")[0]


def build_real(*, variant: int = 0, n_train: int = 5000, n_test: int = 2000,
               folder: str | Path | None = None, seed: int = 0,
               progress: Callable[[str], None] | None = None) -> Built:
    """EfficientNet-Lite``variant`` with four exits on Fashion-MNIST (``multiexit.pretrained``):
    the frozen pretrained backbone's pooled features of ``n_train`` training and ``n_test`` test
    images (cached in ``folder``: the backbone runs over them once), heads trained on them,
    segments exported to ONNX and the exit profile measured on the test images. Without
    ``folder`` all of it goes to a temporary folder removed with the returned :class:`Built`."""
    import torch

    from ...host import fashion
    from ...multiexit import pretrained as P
    from ...multiexit.training import count_flops, export_onnx

    name = REALS[variant]
    torch.set_num_threads(2)
    xtr, ytr, xte, yte = fashion.load()
    rng = np.random.default_rng(seed)
    itr = np.sort(rng.choice(len(xtr), n_train, replace=False))
    ite = np.sort(rng.choice(len(xte), n_test, replace=False))
    x_train, y_train = xtr[itr] / np.float32(255.0), ytr[itr]
    x_test, y_test = (xte[ite] / np.float32(255.0)).astype(np.float32), yte[ite]
    net = P.lite(variant, len(fashion.CLASSES))
    with _scratch(folder, "delen-real-") as (out, made):
        out.mkdir(parents=True, exist_ok=True)
        cache = out / f"features-{n_train}-{n_test}-{seed}.npz"
        if cache.is_file():
            z = np.load(cache)
            f_tr = [z[f"train{k}"] for k in range(4)]
            f_te = [z[f"test{k}"] for k in range(4)]
        else:
            def tick(what):
                return (lambda done, n: progress(f"  {name}: {what} features {done}/{n}")
                        if progress and (done == n or done % 1024 == 0) else None)
            f_tr = P.pooled_features(net, x_train, progress=tick("training"))
            f_te = P.pooled_features(net, x_test, progress=tick("test"))
            arrays: dict[str, Any] = {f"train{k}": a for k, a in enumerate(f_tr)}
            arrays.update({f"test{k}": a for k, a in enumerate(f_te)})
            np.savez(cache, **arrays)
        res = P.train_heads(net, f_tr, y_train, f_te, y_test, task="fashion", seed=seed)
        shape = (1, 28, 28)
        info = export_onnx(net, shape, out, plain=True)
        return _finish(name, "fashion", out, made, arch=name.split(" ")[0], info=info,
                       flops=count_flops(net, shape), exit_accuracy=res.exit_accuracy,
                       shape=shape, x=x_test.reshape(len(x_test), *shape), y=y_test)


def build_profile(*, quick: bool = False, width: int = 32, epochs: int | None = None,
                  points: int = 10, progress: Callable[[str], None] | None = None):
    """Train, export and measure every model of :data:`MODELS` and return a measured profile of
    their operating points (``workbench multiexit build``).

    Args:
        points: Pareto threshold vectors kept per model as configurations.
        progress: Called with a line of text before and after each model.
    """
    from ... import workspace
    from ...multiexit.profiling import multiexit_profile

    models = []
    for name in MODELS:
        if progress:
            progress(f"training, exporting and measuring {name} ...")
        # Kept in the zoo: bundles of these operating points carry the segments from there.
        b = build(name, quick=quick, width=width, epochs=epochs,
                  folder=workspace.zoo_dir(quick=quick) / "multiexit" / name.split(" ")[0])
        models.append({"profile": b.profile, "name": name, "task": b.task,
                       "arch": name.split(" ")[0], "size_mb": b.size_mb, "folder": b.folder,
                       "description": ds.load(b.task, quick=quick).description})
        if progress:
            acc = ", ".join(f"{a:.3f}" for a in b.profile.accuracy)
            progress(f"  exit accuracy {acc}; {b.size_mb:.2f} MB")
    return multiexit_profile(models, pareto_points=points)


def storage_rows(builds: list[Built]) -> list[dict[str, Any]]:
    """One stored multi-exit model against a separate model per operating depth (each exit's
    backbone prefix and head stored on its own), the saving CARIn/Delen's one-model design buys."""
    rows = []
    for b in builds:
        seg = b.segment_mb or []
        separate = float(sum(np.cumsum(seg)))
        rows.append({"model": b.name, "exits": len(seg), "multi_exit_mb": b.size_mb,
                     "separate_models_mb": separate,
                     "saving": separate / b.size_mb if b.size_mb else None})
    return rows


#: Delen's battery: 6 x 3400 mAh cells (section 6.1), taken at 3.7 V nominal, discharged to a
#: 10% state of charge as in its Fig. 10.
DELEN_BATTERY_WH = 6 * 3.4 * 3.7
DELEN_USABLE = 0.9


def fig10(rows8: list[dict[str, Any]], *, load: float = 0.8,
          power: PowerModel = JETSON_NANO) -> list[dict[str, Any]]:
    """Battery life (hours, MODELLED) of the three apps for Full, per-workload and Pareto
    frontier. Each app's time per request under each policy is measured (Fig. 8's rows); the
    apps share one request rate, set so that Full keeps the accelerator ``load`` busy (the
    paper's 10 requests/s each on a Jetson Nano; our models are far smaller, so the rate is
    relative to this machine's capacity). The draw is ``power``'s idle plus busy power at that
    utilisation. Hours depend on the power model; compare the ratios between policies."""
    lat: dict[str, list[float]] = {}
    for r in rows8:
        lat.setdefault(r["policy"], []).append(r["latency_ms"])
    full_s = sum(lat.get("full", [])) / 1000.0
    rate = load / full_s if full_s > 0 else 0.0
    out: list[dict[str, Any]] = []
    for policy in ("full", "per-workload", "Pareto frontier"):
        u = rate * sum(lat.get(policy, [])) / 1000.0
        out.append({"policy": policy, "rate_per_app": rate, "utilisation": u,
                    "power_w": power.average_w(u),
                    "hours": power.battery_hours(DELEN_BATTERY_WH * DELEN_USABLE, u),
                    "power_model": power.source})
    base = out[0]["hours"]
    for r in out:
        r["vs_full"] = r["hours"] / base if base else None
    return out


# --- Fig. 5: the Pareto frontier of 1000 confidence-threshold vectors ---------------------------

def fig5(b: Built, metric: str = "energy") -> dict[str, Any]:
    pp = ParetoPolicy.fit(b.profile, metric=metric)
    return {"cost": pp.cost.tolist(), "error": pp.error.tolist(), "front": pp.front.tolist(),
            "metric": metric, "vectors": len(pp.thresholds),
            "thresholds": pp.thresholds[pp.front].round(3).tolist()}


# --- Fig. 7: policies at a fixed request rate ------------------------------------------------------

def combined_thresholds(b: Built, *, confidence: float = 0.7,
                        response_ms: float | None = None) -> tuple[float, float]:
    """The per-request policies' thresholds: (response time in ms, confidence). Delen's Fig. 7
    uses 100 ms on a ResNet-50 whose exits take tens of ms; ours is the second exit's latency."""
    rt = response_ms if response_ms is not None else float(b.profile.latency_ms[1])
    return rt, confidence


def policies_for(b: Built, *, confidence: float = 0.7, response_ms: float | None = None
                 ) -> dict[str, Any]:
    """Delen's policy set for one model: per-request on time, on confidence, on both;
    per-workload (dynamic); Pareto frontier (latency); full."""
    p = b.profile
    rt, confidence = combined_thresholds(b, confidence=confidence, response_ms=response_ms)
    pp = ParetoPolicy.fit(p, metric="latency")
    t = parse_criteria(f"response_time > {rt:.4f}ms")
    c = parse_criteria(f"confidence > {confidence}")
    return {
        f"pR (RT>{rt:.2f}ms)": lambda r, bud: t,
        f"pR (C>{confidence})": lambda r, bud: c,
        "pR (both)": lambda r, bud: t | c,
        "pW": lambda r, bud: dynamic_exit(p, bud).criteria,
        "PF": lambda r, bud: pp.criteria(pp.lookup_budget(bud)),
        "full": lambda r, bud: parse_criteria("null"),
    }


def capacity_rate(b: Built, load: float) -> float:
    """The request rate at which the full model would keep the accelerator ``load`` x busy."""
    return load * 1000.0 / float(b.profile.latency_ms[-1])


def fig7(b: Built, *, load: float = 1.5, duration: float = 4.0, seed: int = 0
         ) -> list[dict[str, Any]]:
    rate = capacity_rate(b, load)
    tr = poisson(rate, duration, seed=seed)
    rows = []
    for name, pol in policies_for(b).items():
        s = serve([App("a", b.net, b.x, b.y, pol, profile=b.profile)], {"a": tr}).summary()
        rows.append({"policy": name, "rate": rate, **s})
    return rows


def fig7_overload(b: Built, *, loads=(1.0, 1.5, 2.0, 2.5, 3.0), duration: float = 4.0,
                  seed: int = 0, policies=("pR (C>0.7)", "pR (both)", "PF")) -> list[dict[str, Any]]:
    """Fig. 7's policies across offered loads (multiples of the full model's capacity): where
    per-request C>0.7 stops keeping up. It exits early on confident requests, so its capacity
    is the full model's times the full latency over its mean service time, not the full
    model's; the rows say both (``service_ms``, ``kept_up``: throughput / rate)."""
    pols = policies_for(b)
    keep = {k: v for k, v in pols.items() if k in policies}
    rows = []
    for load in loads:
        rate = capacity_rate(b, load)
        tr = poisson(rate, duration, seed=seed)
        for name, pol in keep.items():
            s = serve([App("a", b.net, b.x, b.y, pol, profile=b.profile)], {"a": tr}).summary()
            rows.append({"policy": name, "load": load, "rate": rate,
                         "kept_up": (s["throughput"] or 0.0) / rate, "accuracy": s["accuracy"],
                         "response_ms": s["response_ms"], "service_ms": s["service_ms"],
                         "capacity_load": float(b.profile.latency_ms[-1]) / s["service_ms"]
                         if s["service_ms"] else None, "exits": s["exits"],
                         "requests": s["requests"]})
    return rows


def overload_onset(rows: list[dict[str, Any]], *, policy: str = "pR (C>0.7)",
                   keeps_up: float = 0.94) -> dict[str, Any]:
    """The lowest load of :func:`fig7_overload` at which ``policy`` falls below ``keeps_up`` of
    the offered rate, and every policy's throughput / rate there (None: it kept up at every
    load)."""
    falls = sorted(r["load"] for r in rows if r["policy"] == policy and r["kept_up"] < keeps_up)
    if not falls:
        return {"load": None, "policy": policy, "threshold": keeps_up}
    at = falls[0]
    return {"load": at, "policy": policy, "threshold": keeps_up,
            **{r["policy"]: r["kept_up"] for r in rows if r["load"] == at}}


# --- Fig. 8: energy under an accuracy constraint ------------------------------------------------

def fig8(b: Built, accuracy_constraint: float) -> list[dict[str, Any]]:
    """Oracle, Pareto frontier, per-workload and full over the profile's samples (as Delen runs
    the test set at batch 1), under an accuracy constraint."""
    p = b.profile
    target = 1.0 - accuracy_constraint
    pp = ParetoPolicy.fit(p, metric="energy")
    k = pp.lookup(target)
    outs = [oracle(p), pp.outcome(p, k if k is not None else int(pp.front[-1])),
            static_exit(p, target), full(p)]
    names = ["oracle", "Pareto frontier", "per-workload", "full"]
    return [{"model": b.name, "policy": n, "accuracy": o.accuracy, "energy_mj": o.energy_mj,
             "latency_ms": o.latency_ms, "constraint": accuracy_constraint,
             "met": o.accuracy >= accuracy_constraint}
            for n, o in zip(names, outs)]


def savings(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Energy saved (%) by PF against pW and Full, and by pW against Full (means over models)."""
    by: dict[Any, Any] = {}
    for r in rows:
        by.setdefault(r["model"], {})[r["policy"]] = r["energy_mj"]
    pct = lambda a, b: 100.0 * (1.0 - a / b)  # noqa: E731
    pf_pw = [pct(m["Pareto frontier"], m["per-workload"]) for m in by.values()]
    pf_full = [pct(m["Pareto frontier"], m["full"]) for m in by.values()]
    pw_full = [pct(m["per-workload"], m["full"]) for m in by.values()]
    return {"pf_vs_pw_energy_saving_mean_pct": float(np.mean(pf_pw)),
            "pf_vs_pw_energy_saving_max_pct": float(np.max(pf_pw)),
            "pf_vs_full_energy_saving_mean_pct": float(np.mean(pf_full)),
            "pf_vs_full_energy_saving_max_pct": float(np.max(pf_full)),
            "pw_vs_full_energy_saving_mean_pct": float(np.mean(pw_full))}


# --- Fig. 9: battery levels -> accuracy targets -> Pareto energy ---------------------------------

def fig9(builds: list[Built], targets: dict[str, list[float]]) -> list[dict[str, Any]]:
    """Per battery level (high, medium, low) each app's accuracy target and the Pareto
    frontier's energy and accuracy meeting it."""
    rows = []
    for b in builds:
        pp = ParetoPolicy.fit(b.profile, metric="energy")
        for level, acc in zip(("high", "medium", "low"), targets[b.name]):
            k = pp.lookup(1.0 - acc)
            k = k if k is not None else int(pp.front[-1])
            o = pp.outcome(b.profile, k)
            rows.append({"model": b.name, "battery": level, "target": acc,
                         "accuracy": o.accuracy, "energy_mj": o.energy_mj})
    return rows


# --- Figs 11-12: changing request rates -------------------------------------------------------

def ended_by(records, *, response_ms: float, confidence: float) -> dict[str, float]:
    """Which criterion of the combined per-request policy (response time OR confidence) ended
    each request, as shares of the requests served: only confidence held, only the response
    time, both, or neither (the last exit)."""
    done = [r for r in records if r.action != "drop"]
    n = max(len(done), 1)
    c = [r.confidence > confidence for r in done]
    t = [r.elapsed_ms > response_ms for r in done]
    return {"by_confidence": sum(a and not b for a, b in zip(c, t)) / n,
            "by_response_time": sum(b and not a for a, b in zip(c, t)) / n,
            "by_both": sum(a and b for a, b in zip(c, t)) / n,
            "by_neither": sum(not a and not b for a, b in zip(c, t)) / n}


def fig11(b: Built, *, loads=(0.5, 1.0, 1.5, 2.0, 2.5), step: float = 2.0, seed: int = 0
          ) -> list[dict[str, Any]]:
    """Rates stepped up (relative to capacity); accuracy and response time per step and policy,
    plus the lower bound per-workload (exit == 1). The combined per-request policy's rows also
    say which of its criteria ended its requests (:func:`ended_by`)."""
    rates = [capacity_rate(b, x) for x in loads]
    tr = stepped(rates, step, seed=seed)
    pols = policies_for(b)
    pols["pW (exit==1)"] = lambda r, bud: parse_criteria("exit_number == 1")
    rt, conf = combined_thresholds(b)
    # The same combined policy with its response-time threshold at the full model's latency:
    # Delen's 100 ms is above its ResNet-50's full latency, ours (the second exit's) below it,
    # so which criterion ends a request depends on it (a sensitivity row, not the paper's set).
    rt_full = float(b.profile.latency_ms[-1])
    both_full = (parse_criteria(f"response_time > {rt_full:.4f}ms")
                 | parse_criteria(f"confidence > {conf}"))
    pols["pR (both, RT=full)"] = lambda r, bud: both_full
    thresholds = {"pR (both)": rt, "pR (both, RT=full)": rt_full}
    rows = []
    for name, pol in pols.items():
        res = serve([App("a", b.net, b.x, b.y, pol, profile=b.profile)], {"a": tr})
        for i, (load, rate) in enumerate(zip(loads, rates)):
            s = res.summary(t0=i * step, t1=(i + 1) * step)
            row = {"policy": name, "load": load, "rate": rate, "accuracy": s["accuracy"],
                   "response_ms": s["response_ms"], "service_ms": s["service_ms"],
                   "exits": s["exits"]}
            if name in thresholds:
                row.update(ended_by([r for r in res.records if i * step <= r.arrival < (i + 1) * step],
                                    response_ms=thresholds[name], confidence=conf),
                           response_threshold_ms=thresholds[name])
            rows.append(row)
    return rows


# --- Fig. 13: the resource limiter --------------------------------------------------------------

def fig13(b: Built, *, limit: float = 0.5, loads=(0.25, 0.5, 1.0, 1.5), duration: float = 3.0,
          seed: int = 0, window: float = 1.0, interval: float = 0.1, mode: str = "delay"
          ) -> list[dict[str, Any]]:
    """Accelerator usage of one app limited to ``limit`` across request rates, per policy: the
    mean usage, the largest usage over any ``window`` (the limiter's bound: ``limit`` plus its
    burst and one segment's overrun, over the window), per-window usage for the figure, and what
    the limiter did (delayed, dropped, exits it capped). Every count is read from the run;
    ``lost`` is requests that got no answer and no drop (must be 0)."""
    pols = policies_for(b)
    keep = {k: v for k, v in pols.items() if k.startswith("pR (C") or k in ("pW", "PF", "full")}
    rows = []
    for load in loads:
        rate = capacity_rate(b, load)
        tr = poisson(rate, duration, seed=seed)
        for name, pol in keep.items():
            app = App("a", b.net, b.x, b.y, pol, profile=b.profile)
            res = serve([app], {"a": tr}, limit={"a": limit}, limiter_interval=interval,
                        limiter_mode=mode)
            s = res.summary()
            done = [r for r in res.records if r.action != "drop"]
            busy = sum(r.finish - r.start for r in done)
            span = max((r.finish for r in done), default=0.0) - min(r.arrival for r in res.records)
            rows.append({"policy": name, "load": load, "rate": rate,
                         "usage": busy / span if span > 0 else 0.0,
                         "max_window_usage": res.max_usage("a", window=window),
                         "bound": res.usage_bound("a", window=window), "limit": limit,
                         "window_s": window, "usage_per_window": res.usage("a", window=window)
                         .round(4).tolist(), "delayed": s["delayed"], "dropped": s["dropped"],
                         "capped": s["capped"], "requests": s["requests"], "served": s["served"],
                         "accuracy": s["accuracy"], "response_ms": s["response_ms"],
                         "lost": s["requests"] - s["served"] - s["dropped"]})
    return rows


# --- Figs 14-15: fair multi-tenancy -----------------------------------------------------------

def fig14_15(builds: list[Built], *, cooperative: bool, phase: float = 3.0, load: float = 0.9,
             seed: int = 0, work_conserving: bool = True, interval: float = 0.1
             ) -> list[dict[str, Any]]:
    """Three apps (IMG1, IMG2, AUDIO) with Pareto policies and max-min shares, each held to its
    share by its limiter (work-conserving: share an app leaves unused goes to those with
    demand); IMG1's rate doubles in the middle phase. Per app and phase: accuracy, response
    time, energy, share, usage and what the limiter delayed or capped."""
    names = ["IMG1", "IMG2", "AUDIO"]
    lat = [float(b.profile.latency_ms[-1]) for b in builds]
    # Initial rates in Delen's 15:15:5 proportion, together loading the CPU ``load`` x.
    mix = np.array([15.0, 15.0, 5.0])
    scale = load / float(np.sum(mix * np.array(lat) / 1000.0))
    rates = mix * scale
    traces = {}
    for i, n in enumerate(names):
        r = rates[i]
        parts = [poisson(r, phase, seed=seed + 10 * i),
                 poisson(2 * r if n == "IMG1" else r, phase, seed=seed + 10 * i + 1, start=phase),
                 poisson(r, phase, seed=seed + 10 * i + 2, start=2 * phase)]
        traces[n] = np.concatenate(parts)
    apps = []
    for n, b in zip(names, builds):
        pp = ParetoPolicy.fit(b.profile, metric="latency")
        apps.append(App(n, b.net, b.x, b.y,
                        (lambda pp: lambda r, bud: pp.criteria(pp.lookup_budget(bud)))(pp),
                        cooperative=cooperative, profile=b.profile))
    adapter = CrossAppAdapter([Tenant(n, float(r), cooperative=cooperative)
                               for n, r in zip(names, rates)])
    res = serve(apps, traces, adapter=adapter, enforce_shares=True,
                work_conserving=work_conserving, limiter_interval=interval)
    rows = []
    for i, label in enumerate(("before", "burst", "after")):
        for n in names:
            s = res.summary(n, t0=i * phase, t1=(i + 1) * phase)
            shares = [x[f"share[{n}]"] for x in res.shares if i * phase <= x["t"] < (i + 1) * phase]
            used = res.usage(n, window=phase)
            rows.append({"mode": "cooperative" if cooperative else "non-cooperative",
                         "work_conserving": work_conserving,
                         "phase": label, "app": n, "accuracy": s["accuracy"],
                         "response_ms": s["response_ms"], "service_ms": s["service_ms"],
                         "energy_mj": s["energy_mj"],
                         "share": float(np.mean(shares)) if shares else None,
                         "usage": float(used[i]) if i < len(used) else 0.0,
                         "delayed": s["delayed"], "capped": s["capped"],
                         "served": s["served"], "requests": s["requests"]})
    return rows




# --- beside the paper -------------------------------------------------------------------------

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

    r11 = _by(fig11, "policy", "load")
    loads = sorted({r["load"] for r in fig11})
    pw_lowest = [r11[("pW", x)]["accuracy"] <= r11[("PF", x)]["accuracy"] + 1e-9 for x in loads]
    floor = [r11[("pW (exit==1)", x)]["accuracy"] <= min(r11[(p, x)]["accuracy"]
                                                        for p in ("PF", "pW")) + 1e-9
             for x in loads]
    add("Figs 11-12", P["fig12"],
        f"PF at least as accurate as pW at {sum(pw_lowest)} of {len(loads)} loads; exit==1 the "
        f"lowest at {sum(floor)} of {len(loads)}; PF accuracy "
        + ", ".join(f"{r11[('PF', x)]['accuracy']:.3f}" for x in loads))

    top = max(r["load"] for r in fig13)
    r13 = {r["policy"]: r for r in fig13 if r["load"] == top}
    c13 = next(v for k, v in r13.items() if k.startswith("pR (C"))
    add("Fig. 13", P["fig13"],
        f"at load {top}: usage " + ", ".join(f"{k} {v['usage']:.2f}" for k, v in r13.items())
        + f"; largest window {max(r['max_window_usage'] for r in fig13):.2f} against bound "
        f"{max(r['bound'] for r in fig13):.2f}; pR (C>0.7) delayed {c13['delayed']}")

    def burst(rows_: list[dict[str, Any]], app: str, key: str) -> tuple[Any, Any]:
        b = _by(rows_, "phase", "app")
        return b[("before", app)][key], b[("burst", app)][key]

    def num(v: float | None, digits: int) -> str:
        # A phase in which an app answered nothing has no accuracy (a short run can do that).
        return "n/a" if v is None else f"{v:.{digits}f}"

    a0, a1 = burst(fig14, "IMG1", "accuracy")
    moves = [abs(b1 - b0) for b0, b1 in (burst(fig14, a, "accuracy") for a in ("IMG2", "AUDIO"))
             if b0 is not None and b1 is not None]
    add("Fig. 14", P["fig14"], f"IMG1 accuracy {num(a0, 3)} -> {num(a1, 3)} in the burst; the "
        f"others move at most {num(max(moves) if moves else None, 3)}")
    c0, c1 = burst(fig15, "IMG1", "accuracy")
    s0, s1 = burst(fig15, "IMG1", "share")
    add("Fig. 15", P["fig15"], f"IMG1 share {num(s0, 2)} -> {num(s1, 2)}, accuracy {num(c0, 3)} "
        f"-> {num(c1, 3)} (non-cooperative {num(a0, 3)} -> {num(a1, 3)})")

    if table3:
        t = P["table3"]
        crit, upd, ovh = (table3[k][0] for k in table3)
        add("Table 3", f"criteria {t['criteria_eval_us']} us per exit, Pareto update "
            f"{t['pareto_update_ms']} ms, all-exit overhead {t['overhead_mean_pct']}% mean",
            f"criteria {crit} us p99, Pareto update {upd} ms p99, all-exit overhead {ovh}%")
    return rows
