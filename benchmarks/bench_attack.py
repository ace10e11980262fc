"""The trust attack: every input surface tried as a hostile or careless user would, through the
commands a user types, each outcome classified. Writes reports/bench/attack.json.

Surfaces: profile JSON (`workbench solve --profile`), CSV import and benchmark_model logs
(`workbench profiles import`), `workbench solve` arguments, bundle check (`python -m
workbench.runtime check`), and the runtime's options, events and model faults (`... run`); and,
from issue 35's outside attack (`attack_round2.py`): the model registry (`models add/quantise/
remove`: FIFOs, symlinks, zip bombs, crafted headers and shapes, names with escape codes), sweeps
and resource limits, the exactness of SLOs and numbers and strict JSON, `--force` and names,
and explorer sessions. Each case runs in a fresh process (signals and hangs are seen as such) and
is one of:

- ``clear``: refused with exit status 1 or 2 and one ``error:`` line that names what is wrong
  (the file, field, line or value the case expects);
- ``unclear``: refused without a traceback, but the message does not name it;
- ``crash``: a traceback, a signal, or no answer within the time limit;
- ``wrong``: bad input accepted with exit status 0, or valid input refused or answered wrongly;
- ``ok``: valid input (the controls, and damage the runtime must survive) handled as it should;
- ``security``: a terminal escape sequence from the input reached the output raw;
- ``lost``: a file the user had was gone or changed afterwards.

A case whose input may be either refused or answered exactly (``expect="either"``: ``L < 5ms``
read as strict, or refused) is ``clear`` when refused as above and ``ok`` when its answer passes
the check.

What must keep holding is measured too: fuzzed SLO strings raise nothing but the SLO error,
requests survive switch storms, writers killed with SIGKILL leave no half-written file, the
registry under two concurrent writers and SIGKILLs keeps the old or the new entry (never none,
never a ghost), a sweep resumed after its profile changed gives a fresh sweep's rows, and the
explorer's token is on no process's command line.

Needs TensorFlow (the quick h1 zoo is trained into a temporary workspace, about a minute).
Run with `python benchmarks/bench_attack.py [--quick] [--world DIR]`; --quick skips the kill,
storm and registry-concurrency rounds; --world keeps the trained zoo for the next run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SLO = "max A; max TP; avg L <= 50ms"
OUTCOMES = ("clear", "ok", "unclear", "crash", "wrong", "security", "lost")


@dataclass
class Case:
    """One attempt: ``argv`` after the program, what should happen, and what the error must name."""

    surface: str
    name: str
    argv: list[str]
    expect: str = "error"  # "error", "ok" or "either"
    names: str | None = None  # text the one-line error must contain
    check: Callable[[str], bool] | None = None  # for "ok": is the output right?
    program: str = "workbench"
    during: Callable[[], None] | None = None  # done while the command runs (model faults)
    timeout: float = 120.0
    result: dict[str, Any] = field(default_factory=dict)


def execute(case: Case, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    cmd = ([str(BIN / "workbench")] if case.program == "workbench"
           else [sys.executable] if case.program == "python"
           else [sys.executable, "-m", "workbench.runtime"]) + case.argv
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=cwd, errors="replace")
    if case.during is not None:
        time.sleep(1.5)
        case.during()
    try:
        out, err = proc.communicate(timeout=case.timeout)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        rc = None
    return {"rc": rc, "out": out, "err": err, "s": round(time.monotonic() - t0, 2)}


def _passes(case: Case, text: str) -> bool:
    """The case's check of a valid answer; a check that cannot read the answer fails it."""
    try:
        return case.check is None or bool(case.check(text))
    except Exception:  # noqa: BLE001 - an answer the check cannot read is not the right one
        return False


def classify(case: Case, r: dict[str, Any]) -> str:
    rc, out, err = r["rc"], r["out"], r["err"]
    after = case.result.get("after")
    if after is not None and not after():
        return "lost"
    if "\x1b" in out or "\x1b" in err or "\x9b" in out + err:
        return "security"
    if rc is None or rc < 0 or rc >= 128 or "Traceback" in err:
        return "crash"
    if case.expect == "either" and rc == 0:
        return "ok" if _passes(case, out + err) else "wrong"
    if case.expect == "ok":
        good = rc == 0 and _passes(case, out + err)
        return "ok" if good else "wrong"
    if rc == 0:
        return "wrong"
    lines = [ln for ln in err.splitlines() if ln.strip()]
    # One error line; argparse's usage lines before it and an indented excerpt with a caret
    # under the fault (the SLO parser's) after it are part of the format, anything else is not.
    errors = [ln for ln in lines if "error:" in ln and not ln.startswith(" ")]
    noise = [ln for ln in lines if ln not in errors and not ln.startswith(("usage:", " "))]
    if len(errors) != 1 or noise:
        return "unclear"
    if case.names is not None and case.names.lower() not in err.lower():
        return "unclear"
    return "clear"


# --------------------------------------------------------------------------------------------
# inputs


def base_profile() -> dict[str, Any]:
    return {
        "device": {"name": "toy", "cpu_clusters": [{"core": "Cortex-A76", "count": 4, "ghz": 2.0}]},
        "source": "modelled", "provenance": {"method": "attack fixture"},
        "engines": [{"name": "CPU", "kind": "CPU"},
                    {"name": "GPU", "kind": "GPU", "precisions": ["FP32", "FP16"]}],
        "tasks": [{"name": "cls", "metric": "top1"}],
        "configs": [
            {"id": "a", "task": "cls", "model": "net", "precision": "FP32", "processor": "CPU",
             "threads": 4, "xnnpack": True, "A": 70.0, "L": 5.0, "L_min": 4.0, "L_max": 7.0,
             "MF": 20.0, "source": "modelled"},
            {"id": "b", "task": "cls", "model": "net", "precision": "FP16", "processor": "GPU",
             "A": 70.1, "L": 4.0, "MF": 40.0, "source": "modelled"},
        ],
        "contention": {"same_processor_share": 1.0, "cpu_oversubscription": 0.5,
                       "cross_processor": 0.1},
    }


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _put(p: Path, text: str | None, raw: bytes | None) -> bool:
    """Write a case's input file as given (bytes or text); False when neither was given."""
    if raw is not None:
        p.write_bytes(raw)
    elif text is not None:
        p.write_text(text)
    else:
        return False
    return True


def profile_cases(tmp: Path) -> list[Case]:
    cases: list[Case] = []
    d = tmp / "profiles"
    d.mkdir()

    def add(name, mutate=None, *, text=None, raw=None, expect="error", names=None, path=None,
            check=None):
        p = path or d / ("valid.json" if name == "valid" else f"p{len(cases)}.json")
        if not _put(p, text, raw) and path is None:
            data = base_profile()
            if mutate:
                mutate(data)
            p.write_text(json.dumps(data, allow_nan=True))
        cases.append(Case("profile JSON", name, ["solve", "--profile", str(p), "--slo",
                                                 "max A; min L"], expect=expect,
                          names=names if names is not None else
                          (p.name if expect == "error" else None), check=check))

    def cfg(**kv):
        return lambda data: data["configs"][0].update(kv)

    add("valid", expect="ok")
    add("A=0 (a real value)", cfg(A=0.0), expect="ok")
    add("no L_min/L_max", lambda x: [x["configs"][0].pop(k) for k in ("L_min", "L_max")],
        expect="ok")
    left_out = lambda out: "left out" in out  # noqa: E731 - a row the SLO cannot rank is named
    add("L null", cfg(L=None), expect="ok", check=left_out)
    add("missing L", lambda x: x["configs"][0].pop("L"), expect="ok", check=left_out)
    add("no tasks list (tasks come from the rows)", lambda x: x.update(tasks=[]), expect="ok")
    for f, vals in {"L": [True, "5", -1, 0, [], {}, float("nan"), float("inf")],
                    "A": [True, "70", float("nan"), float("-inf")],
                    "MF": [-1, float("nan"), True, "20"],
                    "threads": [0, -1, 4.5, "4", True, 10 ** 6, 10 ** 30],
                    "batch": [0, -1, 2.0, 10 ** 9],
                    "processor": ["CPU[", "CPU[0", "CPU[-1]", "CPU[99999]", "XPU", "", "CPU[a]"],
                    "precision": ["FP64", "", 5],
                    "task": ["nope", 3],
                    "id": ["", 5, None],
                    "xnnpack": ["yes", 1],
                    "source": ["bogus"],
                    "model": ["", None]}.items():
        for v in vals:
            add(f"configs[0].{f}={v!r}", cfg(**{f: v}))
    add("L_min > L", cfg(L_min=9.0))
    add("L_max < L", cfg(L_max=1.0))
    add("unknown config field", cfg(Lat=3))
    add("duplicate config id", lambda x: x["configs"][1].update(id="a"))
    add("processor not in engines", cfg(processor="NPU"))
    add("cluster count 0", lambda x: x["device"]["cpu_clusters"][0].update(count=0))
    add("cluster count 1e9", lambda x: x["device"]["cpu_clusters"][0].update(count=10 ** 9))
    add("ghz NaN", lambda x: x["device"]["cpu_clusters"][0].update(ghz=float("nan")))
    add("no clusters (an imported device: cores unknown)",
        lambda x: x["device"].update(cpu_clusters=[]), expect="ok")
    add("contention negative", lambda x: x["contention"].update(cpu_oversubscription=-5.0))
    add("contention 1e200", lambda x: x["contention"].update(cross_processor=1e200))
    add("contention NaN", lambda x: x["contention"].update(same_processor_share=float("nan")))
    add("no configs", lambda x: x.update(configs=[]))
    add("configs an object", lambda x: x.update(configs={}))
    add("duplicate task", lambda x: x["tasks"].append({"name": "cls"}))
    add("unknown top-level key", lambda x: x.update(extra=1))
    add("source bogus", lambda x: x.update(source="bogus"))
    add("coexecution garbage", lambda x: x.update(coexecution=[{"configs": ["zz"], "L": -1}]))
    add("top level a list", text="[]")
    add("top level a string", text='"profile"')
    add("empty file", text="")
    add("truncated JSON", text=json.dumps(base_profile())[:200])
    add("deeply nested", text=nested(100000))
    add("not UTF-8", raw=b'{"device": "\xff\xfe"}')
    add("UTF-16 with BOM", raw=json.dumps(base_profile()).encode("utf-16"))
    add("a folder", path=d)
    add("/dev/zero", path=Path("/dev/zero"), names="zero")
    add("missing file", path=d / "absent.json", names="absent.json")
    return cases


CSV_HEADER = "config,model,precision,processor,threads,xnnpack,task,A,L,L_min,L_max,MF"
CSV_ROWS = ["a,net,FP32,CPU,4,true,cls,70,5,4,7,20", "b,net,FP16,GPU,,,cls,70.1,4,3.5,4.5,40"]


def csv_cases(tmp: Path) -> list[Case]:
    cases: list[Case] = []
    d = tmp / "csv"
    d.mkdir()

    def add(name, text=None, *, raw=None, expect="error", names=None, path=None):
        p = path or d / f"c{len(cases)}.csv"
        _put(p, text, raw)
        out = tmp / "csv-out" / f"{len(cases)}.json"
        cases.append(Case("CSV import", name, ["profiles", "import", str(p), "--format", "csv",
                                               "--device", "toy", "-o", str(out)],
                          expect=expect, names=names if names is not None else
                          (p.name if expect == "error" else None)))

    def row(**kv):
        cols = CSV_HEADER.split(",")
        vals = dict(zip(cols, CSV_ROWS[0].split(",")))
        vals.update({k: str(v) for k, v in kv.items()})
        return "\n".join([CSV_HEADER, ",".join(vals[c] for c in cols), CSV_ROWS[1]]) + "\n"

    add("valid", row(), expect="ok")
    add("CRLF line ends", row().replace("\n", "\r\n"), expect="ok")
    add("UTF-8 BOM (Excel)", raw=b"\xef\xbb\xbf" + row().encode(), expect="ok")
    add("an empty L cell (L unknown)", row(L=""), expect="ok")
    for col, vals in {"L": ["-1", "nan", "inf", "abc", "1e400", "0"],
                      "A": ["nan", "x"], "MF": ["-3"],
                      "threads": ["4.5", "-1", "x", "1000000000"],
                      "xnnpack": ["maybe"], "processor": ["XPU", "CPU[99999]", "CPU["],
                      "precision": ["FP64"], "config": [""]}.items():
        for v in vals:
            add(f"{col}={v!r}", row(**{col: v}))
    add("L_min > L_max", row(L_min="9", L_max="8"), names="L_min")
    add("duplicate config id", row(config="b"))
    add("unknown column", CSV_HEADER + ",Q\n" + CSV_ROWS[0] + ",1\n", names="Q")
    add("duplicate column", CSV_HEADER + ",L\n" + CSV_ROWS[0] + ",5\n")
    add("no L column (L unknown)", "\n".join([CSV_HEADER.replace(",L,", ","),
                                              "a,net,FP32,CPU,4,true,cls,70,4,7,20"]) + "\n",
        expect="ok")
    add("header only", CSV_HEADER + "\n")
    add("empty file", "")
    add("extra cells in a row", row().replace("20\n", "20,1,2\n", 1))
    add("missing cells in a row", CSV_HEADER + "\na,net,FP32\n")
    add("semicolon separated", row().replace(",", ";"))
    add("cell over csv field limit", row(model="m" * 200000))
    add("not UTF-8", raw=row().encode().replace(b"net", b"n\xffet", 1))
    add("UTF-16", raw=row().encode("utf-16"))
    add("a folder", path=d)
    add("/dev/zero", path=Path("/dev/zero"), names="zero")
    return cases


LOG = """STARTING!
Graph: [m_fp32.tflite]
Num threads: [{threads}]
count={count} first=1000 curr=1000 min={lo} max={hi} avg=1000 std={std}
Inference timings in us: Init: 100, First inference: 1200, Warmup (avg): 1000, Inference (avg): {avg}
Peak memory footprint (MB): init=3.1 overall={mem}
"""


def log_cases(tmp: Path) -> list[Case]:
    cases: list[Case] = []
    d = tmp / "logs"
    d.mkdir()

    def add(name, text=None, *, raw=None, expect="error", names=None, path=None, extra=()):
        p = path or d / f"l{len(cases)}.log"
        _put(p, text, raw)
        out = tmp / "log-out" / f"{len(cases)}.json"
        cases.append(Case("benchmark_model logs", name,
                          ["profiles", "import", str(p), "--format", "benchmark-log", "--model",
                           "m", "--precision", "FP32", "--device", "phone", "-o", str(out),
                           *extra], expect=expect,
                          names=names if names is not None else
                          (p.name if expect == "error" else None)))

    def log(**kv):
        vals = dict(threads="4", count="50", lo="900", hi="1100", std="10", avg="1000",
                    mem="9.5") | kv
        return LOG.format(**vals)

    add("valid", log(), expect="ok")
    add("Num threads -1 (the runtime's default)", log(threads="-1"), expect="ok")
    add("with INFO: prefixes", "".join("INFO: " + ln + "\n" for ln in log().splitlines()),
        expect="ok")
    for k, vals in {"avg": ["1.2.3", "--", "e", "1e400", "0", "-5", "nan", ""],
                    "std": ["nan", "-1"], "lo": ["x"], "count": ["0", "-3"],
                    "threads": ["-2", "x", "0"], "mem": ["-1", "nan"]}.items():
        for v in vals:
            add(f"{k}={v!r}", log(**{k: v}))
    add("min > max", log(lo="2000", hi="900"))
    add("no Inference line", log().replace("Inference timings", "Timings"))
    add("empty file", "")
    add("binary", raw=bytes(range(256)) * 10)
    add("UTF-16", raw=log().encode("utf-16"))
    add("a folder", path=d)
    add("/dev/zero", path=Path("/dev/zero"), names="zero")
    add("bad --precision", log(), extra=("--precision", "FP64"), names="FP64")
    add("bad --processor", log(), extra=("--processor", "XPU"), names="XPU")
    return cases


def solve_cases(tmp: Path) -> list[Case]:
    p = tmp / "profiles" / "valid.json"
    cases: list[Case] = []

    def add(name, *extra, slo="max A; min L", expect="error", names=None, prof=True, check=None):
        argv = ["solve", *(["--profile", str(p)] if prof else [])]
        argv += [*(["--slo", slo] if slo is not None else []), *extra]
        cases.append(Case("workbench solve", name, argv, expect=expect, names=names,
                          check=check))

    add("valid", expect="ok")
    add("valid nsga2", "--solver", "nsga2", "--pop-size", "8", "--generations", "3",
        expect="ok")
    for slo in ["max A; min L = 9ms", "max A => 72", "", ";", "max", "max Q", "max A; max A",
                "max L <= -5ms", "max L <= nanms", "max L <= 1e400ms", "max A <= infms",
                "max A; min L <= 9 parsecs", "max A; min L ,",
                "max A; min L <= 9ms <= 10ms"]:
        add(f"SLO {slo!r}", slo=slo)
    add("SLO with empty statements", slo="max A;;; min L ;", expect="ok")
    add("SLO nobody can meet (an answer, not an error)", slo="max A; max L <= 0.0001ms",
        expect="ok", check=lambda out: "INFEASIBLE" in out and "nearest" in out)
    for w in ["A=inf", "A=1e200", "A=0,L=0", "A=-1", "A=", "=1", "Q=1", "A=nan", "A=1,A=2"]:
        add(f"--weights {w}", "--weights", w, names="weight")
    for s in ["this.x", "os.system", "antigravity.fly", "nsga9", "",
              "pymoo.algorithms.moo.nsga2.np"]:
        add(f"--solver {s!r}", "--solver", s)
    for flag, v in [("--pop-size", "0"), ("--pop-size", "-1"), ("--pop-size", "1"),
                    ("--generations", "0"), ("--generations", "1000000000"),
                    ("--seed", "x"), ("--pop-size", "1e3")]:
        add(f"{flag} {v}", "--solver", "nsga2", flag, v, names=flag.lstrip("-"))
    add("--use-case uc9", "--use-case", "uc9", names="uc9")
    add("--task nope", "--task", "nope", names="nope")
    add("--profile missing", "--profile", str(tmp / "nope.json"), prof=False, names="nope.json")
    add("--table a folder", "--table", str(tmp), prof=False)
    add("--profile and --table", "--table", str(tmp / "csv" / "c0.csv"))
    add("neither --profile nor --table", prof=False)
    return cases


# --------------------------------------------------------------------------------------------
# bundles and the runtime


def bundle_cases(tmp: Path, bundle: Path) -> list[Case]:
    cases: list[Case] = []
    secret = tmp / "secret.tflite"
    first = json.loads((bundle / "manifest.json").read_text())
    # The model file the fewest designs need: damaging it must remove only those designs.
    def users(f: str) -> set[str]:
        return {r for r, d in first["designs"].items()
                if any(first["configs"][c]["file"] == f for c in d["configs"])}
    some_model = min(first["models"], key=lambda f: len(users(f)))
    survives = len(users(some_model)) < len(first["designs"])
    shutil.copy(bundle / some_model, secret)

    def add(name, change=None, *, expect="error", names="manifest.json", check=None,
            files=None):
        b = tmp / "bundles" / f"b{len(cases)}"
        shutil.copytree(bundle, b, symlinks=True)
        m = json.loads((b / "manifest.json").read_text())
        if change is not None:
            change(m)
        (b / "manifest.json").write_text(json.dumps(m, allow_nan=True))
        if files is not None:
            files(b)
        cases.append(Case("bundle check", name, ["check", str(b)], expect=expect, names=names,
                          check=check, program="runtime"))

    def cfg0(m):
        return m["configs"][next(iter(m["configs"]))]

    def swap_models(m, new_key):
        m["models"][new_key] = m["models"].pop(some_model)
        for c in m["configs"].values():
            if c["file"] == some_model:
                c["file"] = new_key

    add("valid", expect="ok", names=None)
    add("models entry ../secret", lambda m: m["models"].update(
        {"../secret.tflite": dict(m["models"][some_model])}))
    add("config file ../secret", lambda m: swap_models(m, "../secret.tflite"))
    add("absolute path", lambda m: swap_models(m, str(secret)))
    add("models entry with NUL", lambda m: m["models"].update({"a\x00b": {"sha256": "0" * 64,
                                                                           "bytes": 1}}))

    def link_file(b):
        target = b / some_model
        target.unlink()
        target.symlink_to(secret)
    add("model symlinked outside (right sha)", files=link_file)

    def link_dir(b):
        sub = (b / some_model).parent
        shutil.copytree(sub, tmp / f"outside{len(cases)}")
        shutil.rmtree(sub)
        sub.symlink_to(tmp / f"outside{len(cases)}")
    add("model folder symlinked outside", files=link_dir)
    # Its designs are removed and the rest run; if every design needs it, nothing can run.
    damage = (dict(expect="ok", names=None, check=lambda out: "REMOVED" in out) if survives
              else dict(names="no usable design"))
    add("a model truncated", files=lambda b: os.truncate(b / some_model, 100), **damage)
    add("a model missing", files=lambda b: (b / some_model).unlink(), **damage)
    add("a model replaced by a folder", **damage,
        files=lambda b: ((b / some_model).unlink(), (b / some_model).mkdir()))
    add("a model replaced by a FIFO", **damage,
        files=lambda b: ((b / some_model).unlink(), os.mkfifo(b / some_model)))

    def all_broken(b):
        for k in first["models"]:
            os.truncate(b / k, 10)
    add("every model broken", files=all_broken, names="no usable design")
    for proc in ("CPU[7]", "CPU[0,7]"):  # cores this machine lacks: those designs are out
        add(f"configs[0].processor={proc!r}", lambda m, p=proc: cfg0(m).update(processor=p),
            expect="ok", names=None, check=lambda out: "REMOVED" in out and "lacks" in out)
    for key, val in [("labels", 5), ("configs", "c"), ("optimality", "x"), ("trigger", 7)]:
        add(f"designs.d0.{key}={val!r}", lambda m, k=key, v=val: m["designs"]["d0"].update({k: v}))
    add("design naming an unknown config", lambda m: m["designs"]["d0"].update(configs=["zz"]))
    add("fallback a string", lambda m: m.update(fallback="d0"))
    add("fallback naming no design", lambda m: m.update(fallback=["zz"]))
    add("policy_vector an object", lambda m: m.update(policy_vector={}))
    add("policy_vector too short", lambda m: m.update(policy_vector=["d0"]))
    add("policy_vector unknown design", lambda m: m.update(
        policy_vector=["zz"] * len(m["policy_vector"])))
    for key, val in [("expected", "x"), ("expected", {"L": "fast"}), ("expected", {"L": None}),
                     ("processor", "XPU"),
                     ("threads", 100000), ("threads", 0), ("threads", "2"), ("batch", 10 ** 6),
                     ("batch", 0), ("xnnpack", "yes"), ("task", "nope")]:
        add(f"configs[0].{key}={val!r}", lambda m, k=key, v=val: cfg0(m).update({k: v}))
    add("tasks[0].batch=-1", lambda m: m["tasks"][0].update(batch=-1))
    add("tasks empty", lambda m: m.update(tasks=[]))
    add("triggers a number", lambda m: m.update(triggers=3))
    add("sha256 not hex", lambda m: m["models"][some_model].update(sha256="zz"))
    add("bytes negative", lambda m: m["models"][some_model].update(bytes=-1))
    add("format wrong", lambda m: m.update(format="zip"))
    add("version 2", lambda m: m.update(version=2))
    add("manifest a list", lambda m: (m.clear()), files=lambda b: (
        b / "manifest.json").write_text("[]"))
    add("manifest deeply nested", files=lambda b: (b / "manifest.json").write_text(
        nested(100000)))
    add("manifest not UTF-8", files=lambda b: (b / "manifest.json").write_bytes(b"{\"\xff\":1}"))
    add("manifest UTF-16", files=lambda b: (b / "manifest.json").write_bytes(
        (b / "manifest.json").read_text().encode("utf-16")))
    add("manifest missing", files=lambda b: (b / "manifest.json").unlink())
    add("manifest a folder", files=lambda b: ((b / "manifest.json").unlink(),
                                              (b / "manifest.json").mkdir()))
    add("manifest /dev/zero", files=lambda b: ((b / "manifest.json").unlink(),
                                               (b / "manifest.json").symlink_to("/dev/zero")))
    add("manifest 100 MB", files=lambda b: os.truncate(b / "manifest.json", 100 << 20))
    add("bundle is a file", files=lambda b: (shutil.rmtree(b), b.write_text("x")),
        names=None)
    return cases


def runtime_cases(tmp: Path, bundle: Path) -> list[Case]:
    cases: list[Case] = []
    first = json.loads((bundle / "manifest.json").read_text())
    d0_file = first["configs"][first["designs"]["d0"]["configs"][0]]["file"]
    (tmp / "timelines").mkdir()

    def add(name, *extra, expect="error", names=None, during=None, check=None, copy=False,
            seconds="1"):
        b = bundle
        if copy:
            b = tmp / "run-bundles" / f"r{len(cases)}"
            shutil.copytree(bundle, b)
        timeline = tmp / "timelines" / f"t{len(cases)}.json"
        argv = ["run", str(b), *(["--duration", seconds] if seconds else []), "--rate", "40",
                *extra]
        if "--timeline" not in extra:
            argv += ["--timeline", str(timeline)]
        c = Case("runtime options, events, model faults", name, argv, expect=expect,
                 names=names, program="runtime", timeout=60,
                 during=(lambda: during(b)) if during else None,
                 check=(lambda out: check(timeline)) if check else None)
        cases.append(c)

    def none_lost(timeline: Path) -> bool:
        t = json.loads(timeline.read_text())
        return t["lost"] == 0 and t["stats"]["served"] > 0

    add("valid", expect="ok", check=none_lost)
    add("valid with events", "--inject", "0.2:slow:CPU[0]:3, 0.6:unslow, 0.7:flag:CPU[0]",
        expect="ok", check=none_lost)
    for flag, vals in {"--duration": ["0", "-1", "nan", "inf", "1e12", "x"],
                       "--rate": ["-1", "nan", "inf", "x", "1e12"],
                       "--period-ms": ["0", "-1", "nan", "1e9"],
                       "--memory-low-mb": ["-1", "nan", "1e15"],
                       "--memory-used-high-mb": ["nan", "-5"]}.items():
        for v in vals:
            extra = [flag, v] if flag != "--duration" else []
            if flag == "--duration":
                add(f"{flag} {v}", flag, v, seconds=None, names="duration")
            else:
                add(f"{flag} {v}", *extra, names=flag.lstrip("-"))
    for ev in ["0.2:slow:CPU[0]:inf", "0.2:slow:CPU[0]:0", "0.2:slow:CPU[0]:-2",
               "0.2:memory:abc", "0.2:memory:-5", "0.2:memory:1e12", "0.2:stress:5",
               "0.2:stress:0+9", "nan:stress:0", "inf:flag:CPU[0]", "-1:flag:CPU[0]",
               "0.2:bogus", "0.2:slow:XPU:2", "0.2:flag", "::::", "0.2:stress:0:1",
               "0.2:slow:CPU[99]:2"]:
        add(f"--inject {ev}", "--inject", ev, names="inject")
    add("--timeline a folder", "--timeline", str(tmp), names=str(tmp.name))
    add("--timeline in a missing folder", "--timeline", str(tmp / "no" / "such" / "t.json"),
        names="t.json")

    # Damage to model files while the run serves from them: must not crash, lose or change.
    def truncate(b):
        for k in first["models"]:
            os.truncate(b / k, 0)

    def rewrite(b):
        for k in first["models"]:
            data = bytearray((b / k).read_bytes())
            for i in range(64, len(data), 97):
                data[i] ^= 0xFF
            (b / k).write_bytes(bytes(data))

    def swap(b):  # each model path gets another model's bytes (a new inode, as a deploy does)
        names = list(first["models"])
        blobs = [(b / k).read_bytes() for k in names]
        for k, blob in zip(names, blobs[1:] + blobs[:1]):
            (b / k).unlink()
            (b / k).write_bytes(blob)

    def delete(b):
        shutil.rmtree(b / "models")

    for name, act in [("models truncated during run", truncate),
                      ("models' bytes rewritten during run", rewrite),
                      ("models swapped during run", swap),
                      ("models deleted during run", delete),
                      ("d0's model truncated during memory events",
                       lambda b: os.truncate(b / d0_file, 0))]:
        extra = (("--inject", "1.0:memflag, 2.0:unmemflag, 2.5:flag:CPU[0]")
                 if "memory" in name else ())
        add(name, *extra, expect="ok", during=act, check=none_lost, copy=True, seconds="4")
    return cases


# --------------------------------------------------------------------------------------------
# what must keep holding


def slo_fuzz(n: int, seed: int) -> dict[str, Any]:
    from workbench.moo.slo import SLOError, parse_slo

    tokens = ["max", "min", "avg", "A", "L", "TP", "MF", "E", "W", "S", "<=", ">=", "=", "<",
              ";", ",", "ms", "MB", "s", "%", "9", "41.67", "-1", "1e400", "nan", "inf", " ",
              "\t", "(", ")", "[", "]", "\n", "é", "\x00", "max A", "min L <= 10ms",
              "max L <= 41.67ms", "MAX", "a", "l"]
    rng = random.Random(seed)
    bad = []
    for _ in range(n):
        if rng.random() < 0.3:
            s = "".join(chr(rng.randrange(0, 0x2FF)) for _ in range(rng.randrange(0, 30)))
        else:
            s = "".join(rng.choice(tokens) for _ in range(rng.randrange(0, 14)))
        try:
            parse_slo(s)
        except SLOError:
            pass
        except Exception as exc:  # noqa: BLE001 - the point is to find any other exception
            bad.append(f"{s!r}: {type(exc).__name__}: {exc}")
    return {"strings": n, "seed": seed, "other_exceptions": len(bad), "examples": bad[:5]}


def storms(bundle: Path, rounds: int) -> dict[str, Any]:
    from workbench.runtime import Event, load_bundle
    from workbench.runtime.run import run

    b = load_bundle(bundle)
    triggers = list(b.manifest["triggers"])
    total = {"rounds": rounds, "submitted": 0, "served": 0, "rejected": 0, "lost": 0,
             "switches": 0}
    for r in range(rounds):
        events, t, k = [], 0.2, 0
        while t < 2.8:
            events.append(Event(t, "flag" if k % 2 == 0 else "unflag",
                                (triggers[k % len(triggers)],)))
            if k % 5 == 0:
                events.append(Event(t, "memflag" if k % 10 == 0 else "unmemflag"))
            k, t = k + 1, t + 0.015
        out = run(b, duration=3.0, rate=0 if r % 2 else 200,
                  events=sorted(events, key=lambda e: e.at), period_s=0.01)
        for key in ("submitted", "served", "rejected"):
            total[key] += out.stats[key]
        total["lost"] += out.lost
        total["switches"] += out.summary["switches"]
    return total


def kills(tmp: Path, bundle_src: dict[str, str], env: dict[str, str], n: int,
          seed: int) -> dict[str, Any]:
    """SIGKILL writers at random moments of their run; afterwards each target is the old
    version or the complete new one, never half-written, and no temporary file is left.

    Each writer is first run to completion once (that is the old version, and its duration T);
    kills then fall uniformly in [0.3 T, 1.05 T], where the writing happens."""
    from workbench.profiles import load_profile

    rng = random.Random(seed)
    d = tmp / "kills"
    d.mkdir()
    big_csv = tmp / "big.csv"
    rows = [CSV_HEADER] + [f"c{i},net{i % 7},FP32,CPU,4,true,cls,70,{5 + i % 9},4,20,20"
                           for i in range(20000)]
    big_csv.write_text("\n".join(rows) + "\n")
    imported, bundle_out, modelled = d / "imported.json", d / "bundle", d / "modelled"

    def ok_profile(p: Path) -> bool:
        try:
            return len(load_profile(p).configs) == 20000
        except Exception:  # noqa: BLE001 - anything unreadable is half-written
            return False

    def ok_bundle(p: Path) -> bool:
        r = subprocess.run([sys.executable, "-m", "workbench.runtime", "check", str(p)],
                           capture_output=True, text=True, env=env)
        return r.returncode == 0 and "REMOVED" not in r.stdout

    def ok_modelled(p: Path) -> bool:
        try:
            return all(len(load_profile(f).configs) > 0 for f in p.glob("*.json"))
        except Exception:  # noqa: BLE001
            return False

    wb = str(BIN / "workbench")
    jobs = [("profiles import -o", [wb, "profiles", "import", str(big_csv), "--device", "toy",
                                    "-o", str(imported)], imported, ok_profile),
            ("bundle --force", [wb, "bundle", "--profile", bundle_src["profile"], "--task", "h1",
                                "--slo", SLO, "--models", bundle_src["models"], "--all", "-o",
                                str(bundle_out), "--force"], bundle_out, ok_bundle),
            ("profiles model --out-dir", [wb, "profiles", "model", "--out-dir", str(modelled),
                                          "--quiet"], modelled, ok_modelled)]
    out: dict[str, dict[str, Any]] = {}
    for name, cmd, _target, _good in jobs:
        t0 = time.monotonic()
        subprocess.run(cmd, check=True, capture_output=True, env=env)
        span = time.monotonic() - t0
        out[name] = {"T_s": round(span, 2), "killed": 0, "killed_while_running": 0,
                     "half_written": 0}
    for i in range(n):
        name, cmd, target, good = jobs[i % len(jobs)]
        row = out[name]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=env)
        time.sleep(rng.uniform(0.3, 1.05) * row["T_s"])
        row["killed_while_running"] += proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        row["killed"] += 1
        if not good(target):
            row["half_written"] += 1
    def litter() -> list[str]:
        return sorted([p.name for p in d.iterdir() if p not in (imported, bundle_out, modelled)]
                      + [p.name for p in modelled.iterdir() if p.suffix != ".json"])

    after_kills = litter()
    for _name, cmd, _target, _good in jobs:  # what a user does next: run the writer again
        subprocess.run(cmd, check=True, capture_output=True, env=env)
    return {"writers": out, "half_written": sum(r["half_written"] for r in out.values()),
            "staging_left_after_last_kill": after_kills,
            "staging_left_after_next_write": litter()}


# --------------------------------------------------------------------------------------------


def build_world(tmp: Path, env: dict[str, str]) -> dict[str, str]:
    """The quick h1 zoo, a measured profile of it and a RASS bundle, in a temporary workspace."""
    code = ("from pathlib import Path\nfrom workbench.host import zoo, profiling\n"
            f"root, data = Path({str(tmp / 'zoo')!r}), Path({str(tmp / 'data')!r})\n"
            "zoo.build(['h1'], quick=True, root=root, data_root=data, progress=False)\n"
            f"profiling.profile_host(root, Path({str(tmp / 'host.json')!r}), warmup=1, runs=5,"
            " coexec_seconds=0.1, data_root=data, progress=False, quick=True)\n")
    subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True)
    subprocess.run([str(BIN / "workbench"), "bundle", "--profile", str(tmp / "host.json"),
                    "--task", "h1", "--slo", SLO, "--models", str(tmp / "zoo"), "-o",
                    str(tmp / "bundle")], check=True, env=env, capture_output=True)
    return {"profile": str(tmp / "host.json"), "models": str(tmp / "zoo"),
            "bundle": str(tmp / "bundle")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="skip the kill and storm rounds")
    ap.add_argument("--only", default=None, help="only surfaces whose name contains this")
    ap.add_argument("--skip-cases", action="store_true", help="only what must keep holding")
    ap.add_argument("--world", default=None, metavar="DIR",
                    help="keep the zoo, profile, bundle and tiny model here and reuse them when "
                    "present (a rerun then skips the minutes of training)")
    ap.add_argument("-o", "--out", default=str(ROOT / "reports" / "bench" / "attack.json"))
    args = ap.parse_args(argv)
    from workbench.fileio import atomic_write_json
    from workbench.procfs import cpu_model

    tmp = Path(tempfile.mkdtemp(prefix="workbench-attack-"))
    env = dict(os.environ, WORKBENCH_HOME=str(tmp / "home"), PYTHONWARNINGS="ignore")
    t0 = time.monotonic()
    import attack_round2 as r2

    base = Path(args.world) if args.world else tmp
    if (base / "bundle" / "manifest.json").exists() and (base / "tiny" / "saved").exists():
        world = {"profile": str(base / "host.json"), "models": str(base / "zoo"),
                 "bundle": str(base / "bundle")}
        tiny = {"keras": base / "tiny" / "tiny.keras", "npz": base / "tiny" / "tiny.npz",
                "saved": base / "tiny" / "saved"}
    else:
        print("building the quick h1 zoo, its profile, a bundle and a tiny model ...",
              flush=True)
        base.mkdir(parents=True, exist_ok=True)
        world = build_world(base, env)
        tiny = r2.build_tiny(base, env)
    bundle = Path(world["bundle"])
    cases = (profile_cases(tmp) + csv_cases(tmp) + log_cases(tmp) + solve_cases(tmp)
             + bundle_cases(tmp, bundle) + runtime_cases(tmp, bundle)
             # the surfaces the outside attack of issue 35 found open
             + r2.registry_cases(tmp, tiny, Path(world["models"]))
             + r2.limit_cases(tmp, world) + r2.exact_cases(tmp) + r2.log_exact_cases(tmp)
             + r2.force_cases(tmp, world) + r2.session_cases(tmp))
    if args.only:
        cases = [c for c in cases if args.only in c.surface]
    if args.skip_cases:
        cases = []
    table: dict[str, dict[str, int]] = {}
    tried: dict[str, list[str]] = {}
    findings = []
    for i, c in enumerate(cases, 1):
        r = execute(c, env, tmp)
        outcome = classify(c, r)
        row = table.setdefault(c.surface, {"tried": 0, **{o: 0 for o in OUTCOMES}})
        row["tried"] += 1
        row[outcome] += 1
        tried.setdefault(c.surface, []).append(f"{outcome}: {c.name}")
        if outcome not in ("clear", "ok"):
            last = ([ln for ln in (r["err"] or "").splitlines() if ln.strip()] or [""])[-1]
            findings.append({"surface": c.surface, "case": c.name, "outcome": outcome,
                             "rc": r["rc"], "message": last[:300]})
        print(f"[{i}/{len(cases)}] {outcome:8s} {c.surface}: {c.name}", flush=True)
    held: dict[str, Any] = {"slo_fuzz": slo_fuzz(75000 if not args.quick else 5000, seed=15)}
    if not args.only or "sweep" in args.only:
        held["sweep_resume_after_profile_change"] = r2.resume_case(tmp, env)
    if not args.only or "explorer" in args.only:
        held["explorer_token_on_command_line"] = r2.explorer_token(tmp, env, "s20fe")
    if not args.quick:
        print("registry under concurrent writers and kills ...", flush=True)
        held["registry_concurrency"] = r2.registry_concurrency(tmp, tiny, env, kills=24,
                                                               seed=15)
    if not args.quick:
        print("switch storms ...", flush=True)
        held["switch_storms"] = storms(bundle, rounds=6)
        print("kill -9 of writers ...", flush=True)
        held["kill9"] = kills(tmp, world, env, n=60, seed=15)
    report = {
        "what": "trust attack on every input surface (issues 15 and 35); outcomes of real commands",
        "data": "measured on this machine: exit status and stderr of each command",
        "cpu": cpu_model(), "seconds": round(time.monotonic() - t0, 1),
        "table": table, "findings": findings, "held": held, "cases": tried,
    }
    atomic_write_json(Path(args.out), report)
    shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps({"table": table, "findings": len(findings), "held": held}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
