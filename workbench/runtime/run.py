"""Drive a bundle with a request stream for a while and keep what happened (``workbench run``).

Standard library + numpy + LiteRT: this is what runs on a device.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import math
import os
import re
import sys
import threading
import time
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import InputError, WorkbenchError
from ..fileio import atomic_write_text
from ..names import EscapingWriter, printable
from .bundle import Bundle, BundleError, load_bundle
from .events import Event, parse_events
from .executor import ExecutorError
from .manager import SHARE_MODES, Rejected, RuntimeManager, check_shares
from .monitor import anon_mb
from .options import RuntimeOptions
from .policy import Policy
from .timeline import summarise


@dataclass
class RunResult:
    """A finished run: request counts (``lost`` is always 0 unless something is badly wrong),
    the manager's timeline, and the served batches (t, task, invoke ms, design, batch size)."""

    stats: dict[str, Any]
    lost: int
    timeline: dict[str, Any]
    served: list[tuple[float, str, float, str | None, int]]
    summary: dict[str, Any]
    #: Per task, each answered request's latency from submission to answer (ms).
    request_ms: dict[str, list[float]] = field(default_factory=dict)
    #: Per task, the latency bound the bundle's SLO puts on it (ms), if any.
    slo_ms: dict[str, float] = field(default_factory=dict)

    def requests(self) -> dict[str, dict[str, Any]]:
        """Per task: answered requests, their latency's p50/p95/p99 (ms, submission to answer,
        queueing included) and, where the SLO bounds latency, how many were answered later."""
        out: dict[str, dict[str, Any]] = {}
        for task, ms in self.request_ms.items():
            v = np.asarray(ms, float)
            row: dict[str, Any] = {"n": int(len(v))}
            if len(v):
                p50, p95, p99 = np.percentile(v, [50, 95, 99])
                row.update(p50_ms=float(p50), p95_ms=float(p95), p99_ms=float(p99))
            bound = self.slo_ms.get(task)
            if bound is not None:
                row.update(slo_ms=bound, over_slo=int((v > bound).sum()))
            out[task] = row
        return out

    def report(self) -> dict[str, Any]:
        """What a run's caller reads (``workbench run --json``): the counts, each task's request
        latency and SLO violations, the switches."""
        return {"submitted": self.stats.get("submitted"), "served": self.stats.get("served"),
                "rejected": self.stats.get("rejected"), "lost": self.lost,
                "switches": len(self.timeline.get("switches", [])),
                "requests": self.requests(), "limited": self.stats.get("limited"),
                "exits": self.stats.get("exits"), "faults": self.summary.get("faults", [])}

    def to_dict(self) -> dict[str, Any]:
        return {"stats": self.stats, "lost": self.lost, "summary": self.summary,
                "requests": self.requests(), "timeline": self.timeline,
                "served": {"t": [round(s[0], 5) for s in self.served],
                           "task": [s[1] for s in self.served],
                           "ms": [round(s[2], 5) for s in self.served],
                           "design": [s[3] for s in self.served],
                           "batch": [s[4] for s in self.served]}}


def run(bundle: Bundle | str | Path, *, duration: float = 10.0, rate: float = 30.0,
        events: list[Event] | None = None, policy: Policy | None = None,
        inputs: dict[str, np.ndarray] | None = None, on_switch=None,
        limits: dict[str, float] | None = None, limit_mode: str = "delay",
        shares: str = "fixed", **options: Any) -> RunResult:
    """Serve ``rate`` requests per second per task for ``duration`` seconds.

    Args:
        bundle: A bundle folder or a loaded bundle.
        duration: Seconds to run.
        rate: Requests per second per task (open loop, evenly spaced; 0 = back to back).
        events: Timed events (real stress/memory processes or injected flags).
        policy: Replace the bundle's switching policy (e.g. an OODIn re-solving policy).
        inputs: Samples per task to cycle through (default: zeros).
        on_switch: Called with each switch record as it happens (progress output).
        limits: A share of the device per task, held by a token bucket (see RuntimeManager);
            ``limit_mode`` ``"delay"`` or ``"drop"``.
        shares: How the limits move between tasks: ``"fixed"``, ``"work-conserving"`` or
            ``"cooperative"`` (see :data:`~.manager.SHARE_MODES`).
        **options: Fields of :class:`~.options.RuntimeOptions` (period_s, memory_low_mb, ...).
    """
    b = bundle if isinstance(bundle, Bundle) else load_bundle(bundle)
    rm = RuntimeManager(b, policy=policy, events=events, limits=limits, limit_mode=limit_mode,
                        shares=shares, **options)
    requests = _Requests(rm, rate, inputs)
    try:
        rm.start()
    except ExecutorError:  # every design failed to load: the bundle's error, not a traceback
        raise no_loadable_design(b) from None
    try:
        requests.start()
        _follow(rm, duration, on_switch)
    except BaseException:  # Ctrl-C or a failing callback: still end what the events started
        requests.stop.set()
        rm.stop(drain_s=0.0)
        raise
    requests.join()
    stats = rm.stop()
    futures = requests.futures
    wait(futures, timeout=10)
    answered = sum(1 for f in futures if f.done() and f.exception() is None)
    rejected = sum(1 for f in futures if f.done() and isinstance(f.exception(), Rejected))
    lost = len(futures) - answered - rejected
    return RunResult(stats, lost, rm.timeline.to_dict(), list(rm.served_log),
                     summarise(rm.timeline), requests.latencies(),
                     slo_latency_bounds(str(b.manifest.get("slo") or ""), rm.tasks))


class _Requests:
    """A run's request stream: one thread per task submitting ``rate`` requests per second
    (evenly spaced, open loop; 0: each after the previous answer), cycling through the task's
    ``inputs``; every future, and each answered request's latency."""

    def __init__(self, rm: RuntimeManager, rate: float,
                 inputs: dict[str, np.ndarray] | None) -> None:
        self.rm, self.rate, self.inputs = rm, rate, inputs
        self.futures: list[Future] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.request_ms: dict[str, list[float]] = {t: [] for t in rm.tasks}
        self.threads = [threading.Thread(target=self._generate, args=(t,), daemon=True)
                        for t in rm.tasks]

    def start(self) -> None:
        for g in self.threads:
            g.start()

    def join(self) -> None:
        """Stop submitting and wait for every generator."""
        self.stop.set()
        for g in self.threads:
            g.join()

    def latencies(self) -> dict[str, list[float]]:
        with self.lock:
            return {t: list(v) for t, v in self.request_ms.items()}

    def _note_answer(self, f: Future, task: str, t0: float) -> None:
        # Runs where the answer is set: the latency a caller of submit() sees.
        if not f.cancelled() and f.exception() is None:
            ms = (time.perf_counter() - t0) * 1e3
            with self.lock:
                self.request_ms[task].append(ms)

    def _generate(self, task: str) -> None:
        xs = None if self.inputs is None else self.inputs.get(task)
        k = 0
        t_next = time.perf_counter()
        while not self.stop.is_set():
            x = None if xs is None else xs[k % len(xs)][None]
            t0 = time.perf_counter()
            f = self.rm.submit(task, x)
            f.add_done_callback(functools.partial(self._note_answer, task=task, t0=t0))
            with self.lock:
                self.futures.append(f)
            k += 1
            if self.rate > 0:
                t_next += 1.0 / self.rate
                time.sleep(max(0.0, t_next - time.perf_counter()))
            else:
                f.exception()  # closed loop: wait for the answer before the next request


def _follow(rm: RuntimeManager, duration: float, on_switch) -> None:
    """Wait ``duration`` seconds, handing each switch to ``on_switch`` as it happens."""
    seen = 0
    t_end = time.monotonic() + duration
    while time.monotonic() < t_end:
        time.sleep(min(0.05, max(0.0, t_end - time.monotonic())))
        if on_switch:
            for s in rm.timeline.switches[seen:]:
                on_switch(s)
            seen = len(rm.timeline.switches)


#: A latency bound in an SLO: ``L <= 41.67ms``, ``max L <= 40ms``, ``p99 L[uc1] <= 0.5s``; the
#: statistic before L, if any, is group 1 (a bound on ``std L`` or ``min L`` is no request's).
_L_BOUND = re.compile(r"(?:^|[\s;])(?:(avg|max|min|std|p\d{1,2})\s+)?L(?:\[([^\]]+)\])?\s*<=\s*"
                      r"([0-9]*\.?[0-9]+(?:[eE][-+]?\d+)?)\s*(ms|s|us)?\s*$")


def slo_latency_bounds(slo: str, tasks: Sequence[str]) -> dict[str, float]:
    """The latency bound the SLO text puts on each task's requests (ms): ``L``, ``avg L``,
    ``max L`` or a percentile's bound; one naming a task (``L[uc1] <= ...``) applies to it, an
    unnamed one to every task. Bounds on ``std L`` or ``min L`` say nothing of one request and
    are left out, as is anything that is not a number. (The runtime reads the SLO's text
    itself: the SLO parser lives with the optimiser, which a device does not run.)"""
    out: dict[str, float] = {}
    scale = {"ms": 1.0, "s": 1000.0, "us": 1e-3, None: 1.0}
    for part in slo.split(";"):
        m = _L_BOUND.search(part.strip())
        if not m or m.group(1) in ("std", "min"):
            continue
        try:
            ms = float(m.group(3)) * scale[m.group(4)]
        except ValueError:
            continue
        if not math.isfinite(ms) or ms <= 0:
            continue
        for t in ([m.group(2)] if m.group(2) else tasks):
            if t in tasks:
                out[t] = min(ms, out.get(t, math.inf))
    return out


#: How much of each design's reason a "no loadable design" error quotes (LiteRT's messages can
#: run to several lines).
_REASON_CHARS = 200


def no_loadable_design(b: Bundle) -> BundleError:
    """The one-line error for a bundle none of whose designs loads: each distinct reason once,
    with the designs it removed (``d0, dm: cfg: cannot load models/x.tflite: not a LiteRT ...``).
    """
    roles: dict[str, list[str]] = {}
    for role, why in b.problems.items():
        why = " ".join(str(why).split())
        if len(why) > _REASON_CHARS:
            why = why[:_REASON_CHARS - 3] + "..."
        roles.setdefault(why, []).append(role)
    reasons = "; ".join(f"{', '.join(r)}: {why}" for why, r in roles.items())
    return BundleError(printable(f"no loadable design ({reasons or 'none to start with'})"),
                       file=b.root)


def try_designs(b: Bundle) -> Bundle:
    """Load every configuration of every usable design once, as a run would (the manager's own
    loading: LiteRT, layer programs, multi-exit segments), and take out of service the designs
    whose configurations do not load, with the reason in ``b.problems``.

    Raises:
        BundleError: No design loads (one line naming the bundle and why each failed).
    """
    rm = RuntimeManager(b)
    for cid in dict.fromkeys(c for role in b.usable for c in b.designs[role].configs):
        try:
            rm._load(cid).close()
        except ExecutorError as e:
            b.remove_config(cid, str(e))
    b.release(set())  # the verified bytes were for this check only
    if not b.usable:
        raise no_loadable_design(b)
    return b


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m workbench.runtime",
                                 description="the workbench's device runtime")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("check", help="verify a bundle's manifest and model checksums, and "
                                     "that each design loads")
    p.add_argument("bundle")
    p = sub.add_parser("run", help="serve a request stream with a bundle and adapt")
    add_run_arguments(p)
    return ap.parse_args(argv)


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundle", help="a bundle folder (from `workbench bundle`)")
    p.add_argument("--duration", type=float, default=10.0, help="seconds to run (default 10)")
    p.add_argument("--rate", type=float, default=30.0,
                   help="requests per second per task (default 30; 0 = back to back)")
    p.add_argument("--inject", default="", metavar="EVENTS",
                   help='timed events, e.g. "2:stress:0, 6:unstress, 8:memory:2048, 12:unmemory,'
                        ' 14:slow:CPU[0]:3, 18:unslow, 20:throttle:CPU[0,1]:20, 24:unthrottle"')
    p.add_argument("--memory-low-mb", type=float, default=None,
                   help="MemAvailable below this is a memory issue (default 10%% of RAM)")
    p.add_argument("--memory-used-high-mb", type=float, default=None,
                   help="memory held by processes above this is a memory issue (default with a "
                        "memory event: what is held at start plus half the event's MB)")
    p.add_argument("--period-ms", type=float, default=50.0, help="monitor period (default 50)")
    p.add_argument("--request-slo-ms", type=float, default=None,
                   help="a period whose median request latency (submission to answer) is above "
                        "this flags the processor serving it (how a real `throttle` shows)")
    p.add_argument("--limit", action="append", default=[], metavar="TASK=SHARE",
                   help="hold TASK to SHARE (0..1) of the device: Delen's token-bucket limiter "
                        "(repeatable)")
    p.add_argument("--limit-mode", choices=("delay", "drop"), default="delay",
                   help="a request over its share waits (delay, default) or is rejected (drop)")
    p.add_argument("--shares", choices=SHARE_MODES, default="fixed",
                   help="with two or more --limit: fixed (default); work-conserving (a task's "
                        "unused share is lent every second to tasks held back, and taken back "
                        "when it needs it); cooperative (the limits re-split by request rate, "
                        "then lent)")
    p.add_argument("--timeline", default=None, metavar="JSON",
                   help="write the timeline and every served batch to this file")
    p.add_argument("--json", action="store_true",
                   help="print the run's summary as JSON (counts, request latency percentiles, "
                        "SLO violations, switches) instead of text")


def cmd_check(bundle: str) -> int:
    b = try_designs(load_bundle(bundle))
    st = b.manifest.get("storage", {})
    device = b.manifest.get("device", {})
    print(f"bundle {bundle}: {b.manifest.get('solver')} designs for "
          f"{device.get('name')} ({device.get('source')} profile), tasks {', '.join(b.task_names)}")
    print(f"SLO: {b.manifest.get('slo')}")
    for role, d in b.designs.items():
        state = "ok" if role not in b.problems else f"REMOVED: {b.problems[role]}"
        print(f"  {role:4s} {' + '.join(d.labels)}  [{state}]")
    if st:
        print(f"models: {st.get('bundle_bytes', 0) / 1e6:.2f} MB "
              f"({st.get('n_design_models')} files) vs {st.get('all_candidates_mb')} MB for all "
              f"{st.get('n_all_models')} candidates: {st.get('reduction')}x smaller")
    return 0


#: The run flags that are runtime options: flag (argparse dest) -> (RuntimeOptions field, factor
#: from the flag's unit to the field's). RuntimeOptions is the one place their values are checked.
_OPTION_FLAGS = {"period_ms": ("period_s", 1e-3), "memory_low_mb": ("memory_low_mb", 1.0),
                 "memory_used_high_mb": ("memory_used_high_mb", 1.0),
                 "request_slo_ms": ("request_slo_ms", 1.0)}


def _options_of(args: argparse.Namespace) -> RuntimeOptions:
    """The run flags as RuntimeOptions; a bad value is an error naming the flag, in its unit."""
    values: dict[str, Any] = {f: None if getattr(args, dest) is None else getattr(args, dest) * k
                              for dest, (f, k) in _OPTION_FLAGS.items()}
    try:
        return RuntimeOptions(**values)
    except InputError as e:
        dest = next((d for d, (f, _) in _OPTION_FLAGS.items() if f == e.where), None)
        if dest is None:
            raise
        raise InputError(e.message, where="--" + dest.replace("_", "-"),
                         value=getattr(args, dest)) from None


def _check_run_arguments(args: argparse.Namespace) -> RuntimeOptions:
    """Everything a run needs, checked before it starts (a bad value after a long run is lost
    work); returns the run's options."""
    for name, lo, hi, lo_open in (("duration", 0.0, 7 * 86400.0, True),
                                  ("rate", 0.0, 1e6, False)):
        v = getattr(args, name)
        if not (math.isfinite(v) and (v > lo if lo_open else v >= lo) and v <= hi):
            raise InputError(f"must be a number {'>' if lo_open else '>='} {lo:g} and <= {hi:g}",
                             where="--" + name.replace("_", "-"), value=v)
    options = _options_of(args)
    args.limits = {}
    for item in args.limit:
        task, _, share = item.partition("=")
        try:
            value = float(share)
        except ValueError:
            value = math.nan
        if not task or not 0 < value <= 1:
            raise InputError("expected TASK=SHARE with a share in (0, 1]", where="--limit",
                             value=item)
        if task in args.limits:
            raise InputError("the same task is limited twice", where="--limit", value=item)
        args.limits[task] = value
    check_shares(args.limits, args.shares)
    if args.timeline:
        t = Path(args.timeline)
        if t.is_dir():
            raise InputError("is a folder; give a file name for the timeline", file=t,
                             where="--timeline")
        if not t.parent.is_dir():
            raise InputError("its folder does not exist", file=t, where="--timeline")
        if not os.access(t.parent, os.W_OK):
            raise InputError("its folder is not writable", file=t, where="--timeline")
    return options


def cmd_run(args: argparse.Namespace) -> int:
    if getattr(args, "json", False):
        # The text goes nowhere; one JSON document is the output.
        with contextlib.redirect_stdout(io.StringIO()):
            code, res = _run_and_print(args)
        print(json.dumps(res.report() if res is not None else None))
        return code
    return _run_and_print(args)[0]


def _run_and_print(args: argparse.Namespace) -> tuple[int, RunResult | None]:
    options = _check_run_arguments(args)
    events = parse_events(args.inject) if args.inject else []
    b = load_bundle(args.bundle)
    for role, why in b.problems.items():
        print(printable(f"design {role} removed: {why}"), file=sys.stderr)
    print(f"running {args.bundle} for {args.duration:g} s at {args.rate:g} req/s per task"
          + (f"; events: {', '.join(f'{e.at:g}s {e}' for e in events)}" if events else ""))

    def show(s: dict) -> None:
        flags = ",".join(s["flags"]) or "none"
        how = "cold" if s["cold"] else "preloaded"
        print(f"  t={s['t']:7.3f}s  {s['from'] or '-':>4} -> {s['to']:<4} flags: {flags}  "
              f"({s['reason']}; {how} switch {s['switch_ms']:.3f} ms)", flush=True)

    hogs = [int(e.args[0]) for e in events if e.kind == "memory"]
    if options.memory_used_high_mb is None and hogs:
        used = anon_mb()
        if used is not None:
            high = used + min(hogs) / 2
            options = options.with_overrides(memory_used_high_mb=high)
            print(f"memory issue above {high:.0f} MB held by processes (now {used:.0f} MB)")
    unknown = sorted(set(args.limits) - set(b.task_names))
    if unknown:
        raise InputError(f"no such task in the bundle (tasks: {', '.join(b.task_names)})",
                         where="--limit", value=unknown[0])
    res = run(b, duration=args.duration, rate=args.rate, events=events, on_switch=show,
              options=options, limits=args.limits, limit_mode=args.limit_mode,
              shares=args.shares)
    st = res.stats
    print(f"requests: {st['submitted']} submitted, {st['served']} served, {st['rejected']} "
          f"rejected, {res.lost} lost" + (f"; rejections: {st['rejected_reasons']}"
                                          if st['rejected'] else ""))
    print(f"switches: {len(res.timeline.get('switches', []))}")
    for task, r in res.requests().items():
        if not r["n"]:
            print(f"  {task}: no request answered")
            continue
        line = (f"  {task}: latency (submission to answer) p50 {r['p50_ms']:.2f} ms, "
                f"p95 {r['p95_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms over {r['n']} answers")
        if "slo_ms" in r:
            line += (f"; {r['over_slo']} over the SLO's L <= {r['slo_ms']:g} ms "
                     f"({100 * r['over_slo'] / r['n']:.1f}%)")
        print(line)
    if args.limits:
        lim = st["limited"]
        print(f"limiter ({', '.join(f'{t} {v:g}' for t, v in args.limits.items())}, "
              f"{args.limit_mode}): {lim['delayed']} delayed, {lim['dropped']} dropped, "
              f"{lim['capped']} answered at an earlier exit")
        if args.shares != "fixed":
            cols = res.timeline["rows"]
            for task in args.limits:
                got = [v for v in cols.get(f"share[{task}]", []) if v is not None]
                if got:
                    print(f"  {task}: share {args.limits[task]:g} -> {min(got):.3f}..{max(got):.3f} "
                          f"({args.shares})")
    for k in st.get("throttles", []):
        print(f"  throttle {k['engine']} {k['pct']:g}%: the kernel held it back in "
              f"{k['nr_throttled']} of {k['nr_periods']} periods ({k['throttled_ms'] or 0:.0f} ms)")
    for task, got in st.get("exits", {}).items():
        print(f"  {task}: answers per exit " + ", ".join(f"exit {k}: {n}"
                                                      for k, n in sorted(got.items())))
    for e in res.timeline.get("events", []):
        if e.get("kind") == "criteria":
            print(f"  t={e['t']:7.3f}s  {e['task']} criteria -> {e['criteria']}")
    for f in res.summary["faults"]:
        print(f"  fault at {f['t']:.3f}s: {f['config']} ({f['reason']}); removed {f['removed']}")
    if args.timeline:
        atomic_write_text(args.timeline, json.dumps(res.to_dict()) + "\n")
        print(f"timeline: {args.timeline}")
    return (0 if res.lost == 0 else 2), res


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
    # Paths, names and reasons from the bundle reach the terminal escaped, as in `workbench`.
    stdout = sys.stdout
    sys.stdout = EscapingWriter(stdout)
    try:
        return cmd_check(args.bundle) if args.cmd == "check" else cmd_run(args)
    except WorkbenchError as e:
        print(f"error: {printable(e, multiline=True)}", file=sys.stderr)
        return 1
    finally:
        sys.stdout = stdout
