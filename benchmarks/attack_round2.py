"""The surfaces the second trust attack (issue 35) found open, tried the way an outsider did:
the model registry (`models add/quantise/remove`), sweeps, the explorer server and its
sessions, the exactness of SLOs and numbers, strict JSON, resource limits, `--force`, names that
carry terminal escapes, and the registry under concurrent writers and kills.

Used by ``bench_attack.py``: each function returns its cases (or, for what must keep holding, a
dict of counts). A case's ``check`` sees the command's stdout + stderr.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

from bench_attack import BIN, Case, base_profile

TINY_MODEL = """
import numpy as np, keras
keras.utils.set_random_seed(0)
m = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Conv2D(4, 3, activation="relu"),
                      keras.layers.Flatten(), keras.layers.Dense(3, activation="softmax")])
m.compile("adam", "sparse_categorical_crossentropy")
m.save({keras!r})
rng = np.random.default_rng(0)
x = rng.random((64, 8, 8, 1), dtype=np.float32)
np.savez({npz!r}, x=x, y=rng.integers(0, 3, 64))
m.export({saved!r}, verbose=False)
"""


def build_tiny(tmp: Path, env: dict[str, str]) -> dict[str, Path]:
    """A tiny Keras classifier as .keras and as a SavedModel, and its data (.npz)."""
    d = tmp / "tiny"
    d.mkdir(exist_ok=True)
    out = {"keras": d / "tiny.keras", "npz": d / "tiny.npz", "saved": d / "saved"}
    code = TINY_MODEL.format(keras=str(out["keras"]), npz=str(out["npz"]),
                             saved=str(out["saved"]))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True)
    return out


# --------------------------------------------------------------------------------------------
# crafted files


def zip_bomb(path: Path, member: str, size: int, *, first: dict[str, bytes] | None = None) -> None:
    """A zip whose ``member`` expands to ``size`` bytes of zeros (deflated, ~1000:1), after the
    small ``first`` members (a .keras file's config, say)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in (first or {}).items():
            zf.writestr(name, data)
        with zf.open(member, "w", force_zip64=True) as fh:
            chunk = bytes(16 << 20)
            left = size
            while left > 0:
                fh.write(chunk[:min(left, len(chunk))])
                left -= len(chunk)


def npz_claiming(path: Path, shape: tuple[int, ...]) -> None:
    """An .npz whose ``x`` header claims ``shape`` (float64) and holds a few bytes of data: a
    loader that trusts the header allocates shape * 8 bytes before reading."""
    import io

    import numpy as np
    from numpy.lib import format as npf

    header = {"descr": "<f8", "fortran_order": False, "shape": shape}
    buf = io.BytesIO()
    npf.write_array_header_1_0(buf, header)
    buf.write(b"\0" * 64)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("x.npy", buf.getvalue())
        y = io.BytesIO()
        np.save(y, np.zeros(4, dtype=np.int64))
        zf.writestr("y.npy", y.getvalue())


def tflite_with_shape(src: Path, dst: Path, dim: int) -> None:
    """A copy of a .tflite whose first non-constant tensor's first dimension is ``dim`` (what a
    flipped byte in a shape does)."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as fb

    model = fb.ModelT.InitFromObj(fb.Model.GetRootAs(src.read_bytes(), 0))
    g = model.subgraphs[0]
    for t in g.tensors:
        if t.shape is not None and len(t.shape) and not model.buffers[t.buffer].data:
            t.shape = [*list(t.shape)[:-1], dim]
            if t.shapeSignature is not None and len(t.shapeSignature):
                t.shapeSignature = [*list(t.shapeSignature)[:-1], dim]
            break
    b = flatbuffers.Builder(1024)
    b.Finish(model.Pack(b), file_identifier=b"TFL3")
    dst.write_bytes(bytes(b.Output()))


# --------------------------------------------------------------------------------------------
# the model registry


def registry_cases(tmp: Path, tiny: dict[str, Path], zoo: Path) -> list[Case]:
    cases: list[Case] = []
    d = tmp / "registry-inputs"
    d.mkdir()
    surface = "models add/quantise/remove"

    def add(name, *argv, expect="error", names=None, check=None, timeout=120.0):
        cases.append(Case(surface, name, list(argv), expect=expect, names=names, check=check,
                          timeout=timeout))

    k, npz = str(tiny["keras"]), str(tiny["npz"])
    add("valid .keras", "models", "add", k, "--name", "tiny", "--task", "t", "--data", npz,
        expect="ok")
    add("same name again without --force", "models", "add", k, "--name", "tiny", "--task", "t",
        names="tiny")
    add("valid quantise FP16", "quantise", "tiny", "--schemes", "FP16", "--quiet", expect="ok")
    add("quantise FP64", "quantise", "tiny", "--schemes", "FP64", names="FP64")
    add("quantise a missing model", "quantise", "nope", "--schemes", "FP16", names="nope")
    add("remove a missing model", "models", "remove", "nope", names="nope")
    add("name with an escape code", "models", "add", k, "--name", "a\x1b[2Jb", "--task", "t",
        names="name")
    add("task with an escape code", "models", "add", k, "--name", "esc", "--task", "t\x1b]8;;x",
        names="task")
    add("name ../x", "models", "add", k, "--name", "../x", "--task", "t", names="name")

    fifo = d / "pipe.keras"
    os.mkfifo(fifo)
    add("a FIFO as the model (must not block)", "models", "add", str(fifo), "--name", "f",
        "--task", "t", names="pipe.keras", timeout=30)
    fifo_npz = d / "pipe.npz"
    os.mkfifo(fifo_npz)
    add("a FIFO as --data (must not block)", "models", "add", k, "--name", "f2", "--task", "t",
        "--data", str(fifo_npz), names="pipe.npz", timeout=30)
    linked = d / "linked.keras"
    linked.symlink_to(tiny["keras"])
    add("a symlinked .keras (accepted: the user named it)", "models", "add", str(linked),
        "--name", "linked", "--task", "t", "--data", npz, expect="ok")

    secret = d / "secret.txt"
    secret.write_text("secret contents\n")
    import shutil

    sm = d / "saved-with-link"
    shutil.copytree(tiny["saved"], sm)
    (sm / "assets").mkdir(exist_ok=True)
    (sm / "assets" / "vocab.txt").symlink_to(secret)
    add("SavedModel asset symlinked outside", "models", "add", str(sm), "--name", "sml",
        "--task", "t", names="vocab.txt")
    sm2 = d / "saved-with-dirlink"
    shutil.copytree(tiny["saved"], sm2)
    shutil.rmtree(sm2 / "assets", ignore_errors=True)
    (sm2 / "assets").symlink_to(d)
    add("SavedModel assets folder symlinked outside", "models", "add", str(sm2), "--name",
        "sml2", "--task", "t", names="assets")
    sm3 = d / "saved-with-fifo"
    shutil.copytree(tiny["saved"], sm3)
    (sm3 / "assets").mkdir(exist_ok=True)
    os.mkfifo(sm3 / "assets" / "pipe")
    add("SavedModel with a FIFO inside", "models", "add", str(sm3), "--name", "smf", "--task",
        "t", names="pipe", timeout=30)

    # Beside the tiny model, so a run with --world makes them once (a minute of deflating).
    bomb = tiny["keras"].parent / "bomb.keras"
    if not bomb.exists():
        with zipfile.ZipFile(tiny["keras"]) as zf:
            first = {n: zf.read(n) for n in zf.namelist() if n != "model.weights.h5"}
        zip_bomb(bomb, "model.weights.h5", 6 << 30, first=first)
    add(f".keras expanding to 6 GiB ({bomb.stat().st_size / 1e6:.1f} MB on disk)", "models",
        "add", str(bomb), "--name", "bomb", "--task", "t", names="bomb.keras", timeout=60)
    nbomb = tiny["keras"].parent / "bomb.npz"
    if not nbomb.exists():
        zip_bomb(nbomb, "x.npy", 3 << 30)
    add("--data .npz member expanding to 3 GiB", "models", "add", k, "--name", "nb", "--task",
        "t", "--data", str(nbomb), names="bomb.npz", timeout=60)
    claim = d / "claims.npz"
    npz_claiming(claim, (100000, 100000))
    add("--data .npz header claiming 80 GB", "models", "add", k, "--name", "nc", "--task", "t",
        "--data", str(claim), names="claims.npz", timeout=60)

    tfl = next(iter(sorted(zoo.rglob("*.tflite"))), None)
    if tfl is not None:
        flipped = d / "flipped.tflite"
        tflite_with_shape(tfl, flipped, 1 << 28)
        add(".tflite whose shape asks for GBs", "models", "add", str(flipped), "--name", "fl",
            "--task", "t", names="flipped.tflite", timeout=60)
    return cases


# --------------------------------------------------------------------------------------------
# sweeps and command-line limits


def silent_listener() -> tuple[socket.socket, int]:
    """A TCP port that accepts and never answers (what a wrong --scheduler address reaches)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    return s, s.getsockname()[1]


def limit_cases(tmp: Path, world: dict[str, str]) -> list[Case]:
    cases: list[Case] = []
    surface = "sweep and resource limits"
    out = tmp / "sweeps"
    out.mkdir()

    def add(name, *argv, expect="error", names=None, check=None, timeout=60.0):
        cases.append(Case(surface, name, list(argv), expect=expect, names=names, check=check,
                          timeout=timeout))

    def sweep(*extra, o=None):
        return ["sweep", "--profiles", "s20fe", "--use-cases", "uc1", "--workers", "0",
                "-o", str(o or out / f"s{len(cases)}.csv"), "--quiet", *extra]

    add("valid sweep", *sweep(), expect="ok")
    grid = "max A; L <= {" + ",".join(str(i) for i in range(1, 10)) + "}ms"
    add("brace grid 10^9 problems", *sweep("--slo", "; ".join([grid] * 9)), names="limit")
    add("--workers 100000", *sweep()[:-5], "--workers", "100000", "-o", str(out / "w.csv"),
        names="workers")
    add("--pop-size 0", *sweep("--solvers", "nsga2", "--pop-size", "0"), names="pop-size")
    add("--generations -1", *sweep("--solvers", "nsga2", "--generations", "-1"),
        names="generations")
    add("--repeat 0", *sweep("--repeat", "0"), names="repeat")
    sock, port = silent_listener()
    cases[-1].result["keep"] = sock  # the listener lives as long as the cases
    add("--scheduler that is not Dask (must fail fast)", "sweep", "--profiles", "s20fe",
        "--use-cases", "uc1", "--scheduler", f"tcp://127.0.0.1:{port}", "-o",
        str(out / "sch.csv"), "--quiet", names=str(port), timeout=60)
    add("report --workers 100000", "report", "--only", "quickstart", "--workers", "100000",
        names="workers")
    for v in ("1000", "257", "0", "-1", "1,1000"):
        add(f"profile --threads {v}", "profile", "--threads", v, names="threads",
            timeout=60)
    add("solve --pop-size 0", "solve", "--profile", "s20fe", "--use-case", "uc1", "--solver",
        "nsga2", "--pop-size", "0", names="pop-size")
    add("SLO of 100 kB", "solve", "--profile", "s20fe", "--use-case", "uc1", "--slo",
        "max A; " * 14000, names="SLO", timeout=30)
    add("number of 5000 digits in an SLO", "solve", "--profile", "s20fe", "--use-case", "uc1",
        "--slo", "max A; L <= " + "9" * 5000, names="SLO", timeout=30)
    return cases


def resume_case(tmp: Path, env: dict[str, str]) -> dict[str, Any]:
    """A sweep killed part way, its profile changed (the most accurate model loses 10 points of
    A), resumed with the same journal: its rows must equal a fresh sweep's of the changed
    profile (recomputed or refused, never the old rows mixed in)."""
    import csv
    import shutil

    from workbench.profiles import resolve_profile

    d = tmp / "resume"
    d.mkdir()
    prof = d / "p.json"
    shutil.copy(resolve_profile("s20fe"), prof)
    out, fresh = d / "r.csv", d / "fresh.csv"
    journal = d / "r.csv.partial.jsonl"
    grid = "max A; max TP; L <= {" + ",".join(str(5 + i) for i in range(300)) + "}ms"
    wb = str(BIN / "workbench")

    def argv(o: Path) -> list[str]:
        return [wb, "sweep", "--profiles", str(prof), "--use-cases", "uc1", "--slo", grid,
                "--workers", "0", "-o", str(o), "--quiet"]

    p = subprocess.Popen(argv(out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env=env)
    t0 = time.monotonic()
    while p.poll() is None and time.monotonic() - t0 < 120:
        if journal.exists() and journal.read_text().count("\n") >= 50:
            break
        time.sleep(0.05)
    interrupted = p.poll() is None
    p.kill()
    p.wait()
    done_before = journal.read_text().count("\n") if journal.exists() else 0
    data = json.loads(prof.read_text())
    for c in data["configs"]:
        if "Lite0" in c["model"] and c.get("A") is not None:
            c["A"] -= 10.0
    prof.write_text(json.dumps(data))
    r2 = subprocess.run(argv(out), capture_output=True, text=True, env=env)
    subprocess.run(argv(fresh), capture_output=True, text=True, env=env)

    def rows(path: Path) -> list[tuple[str, str, str]]:
        if not path.exists():
            return []
        return [(r["slo"], r["d0"], r["feasible"]) for r in csv.DictReader(
            path.read_text().splitlines())]

    same = r2.returncode == 0 and rows(out) == rows(fresh) and len(rows(fresh)) == 300
    return {"interrupted": interrupted, "rows_in_journal_when_killed": done_before,
            "resumed_rc": r2.returncode, "rows": len(rows(out)),
            "message": (r2.stderr.strip().splitlines() or [""])[0][:200].replace(str(d), "<tmp>"),
            "outcome": ("untested" if not interrupted else "ok" if same else
                        "clear" if r2.returncode == 1 else "wrong")}


# --------------------------------------------------------------------------------------------
# exactness of SLOs and numbers, strict JSON


def _strict(text: str) -> Any:
    def reject(c: str) -> Any:
        raise ValueError(f"not strict JSON: {c}")
    return json.loads(text, parse_constant=reject)


def exact_cases(tmp: Path) -> list[Case]:
    cases: list[Case] = []
    surface = "SLO and number exactness, strict JSON"
    d = tmp / "exact"
    d.mkdir()
    valid = tmp / "profiles" / "valid.json"

    def add(name, *argv, expect="error", names=None, check=None):
        cases.append(Case(surface, name, list(argv), expect=expect, names=names, check=check))

    def solve(slo, *extra, profile=valid):
        return ["solve", "--profile", str(profile), "--slo", slo, *extra]

    def d0_is(cfg_id):
        def check(out: str) -> bool:
            try:
                j = _strict(out[out.index("{"):])
            except ValueError:
                return False
            return j["designs"]["d0"]["configs"] == [cfg_id]
        return check

    # config a: L 5 ms, A 70; config b: L 4 ms, A 70.1
    def strict_or_refused(out: str) -> bool:  # accepted only if L = 5 is out
        return '"a"' not in out or "infeasible" in out.lower()

    add("L < 5ms excludes L = 5 (or is refused)", *solve("max A; L < 5ms", "--json"),
        expect="either", names="<=", check=strict_or_refused)
    add("L > 4ms excludes L = 4 (or is refused)", *solve("max A; L > 4ms", "--json"),
        expect="either", names=">=", check=lambda out: '"b"' not in out)
    add("space inside a number", *solve("max A; L <= 4 1ms"), names="SLO")
    for s in ("max A; L <= 4\u00b2ms", "max A; L <= \u0664ms", "max A; L <= \uff14ms",
              "max A; L <= 4\u200b1ms"):
        add(f"non-ASCII digit in {s!r}", *solve(s), names="SLO")
    add("MF >= 1e306GB (overflows)", *solve("max A; MF >= 1e306GB"), names="SLO")
    add("bound keeps its digits (--json echo)", *solve("max A; L <= 4.16666667ms", "--json"),
        expect="ok", check=lambda out: _strict(out)["slo"] == "max A; L <= 4.16666667ms")
    for v, expect in ((1e300, "either"), (1e17, "ok")):
        huge = base_profile()
        huge["configs"][0].update(L=v, L_min=v, L_max=v)
        hp = d / f"huge-{v:g}.json"
        hp.write_text(json.dumps(huge))
        add(f"L = {v:g} keeps both objectives (b dominates; or refused)",
            *solve("max A; min L", "--json", profile=hp), expect=expect, names="L",
            check=d0_is("b"))
    add("--json output is strict JSON at the utopia point", *solve("max A; min L", "--json"),
        expect="ok", check=lambda out: bool(_strict(out[out.index("{"):])))
    dup = d / "dup.json"
    text = json.dumps(base_profile())
    dup.write_text(text.replace('"source": "modelled", "provenance"',
                                '"source": "modelled", "source": "measured", "provenance"', 1))
    add("duplicate key in profile JSON", *solve("max A", profile=dup), names="source")
    big = d / "bigint.json"
    big.write_text(text.replace('"threads": 4', '"threads": ' + "9" * 5000, 1))
    add("5000-digit integer in profile JSON", *solve("max A", profile=big), names="bigint.json")
    p = d / "inf-ghz.json"
    p.write_text(text.replace('"ghz": 2.0', '"ghz": Infinity'))
    add("Infinity in device ghz", *solve("max A", profile=p), names="ghz")
    inf_cont = d / "inf-contention.json"
    inf_cont.write_text(text.replace('"cross_processor": 0.1', '"cross_processor": Infinity'))
    add("Infinity in contention", *solve("max A", profile=inf_cont), names="cross_processor")
    two = base_profile()
    two["tasks"] = [{"name": "1", "metric": "top1"}, {"name": "2", "metric": "top1"}]
    two["configs"] = [dict(c, task=t, id=f"{c['id']}{t}") for t in ("1", "2")
                      for c in base_profile()["configs"]]
    tp = d / "tasks12.json"
    tp.write_text(json.dumps(two))
    add("tasks named 1 and 2: L[1] is task '1' (or refused)", *solve(
        "max A[1]; max A[2]; L[1] <= 4.5ms", "--json", profile=tp), expect="either",
        names="1", check=lambda out: '"a1"' not in out)
    return cases


def log_exact_cases(tmp: Path) -> list[Case]:
    from bench_attack import LOG

    cases: list[Case] = []
    surface = "SLO and number exactness, strict JSON"
    d = tmp / "exact-logs"
    d.mkdir()

    def add(name, text, *, expect="error", names=None, check=None):
        p = d / f"l{len(cases)}.log"
        p.write_text(text)
        out = d / f"o{len(cases)}.json"
        cases.append(Case(surface, name, ["profiles", "import", str(p), "--format",
                                          "benchmark-log", "--model", "m", "--precision", "FP32",
                                          "--device", "phone", "-o", str(out)],
                          expect=expect, names=names or p.name,
                          check=(lambda _o, out=out: check(out)) if check else None))

    def l_ms(out: Path) -> float | None:
        try:
            return json.loads(out.read_text())["configs"][0]["L"]
        except (OSError, ValueError, KeyError, IndexError):
            return None

    base = dict(threads="4", count="50", lo="900", hi="1100", std="10", avg="1000", mem="9.5")
    add("Inference (avg): 5,741.6 (thousands separator)",
        LOG.format(**base | {"avg": "5,741.6", "lo": "5000", "hi": "6000"}), expect="either",
        check=lambda o: l_ms(o) is not None and abs(l_ms(o) - 5.7416) < 1e-9)
    add("superscript digit in avg", LOG.format(**base | {"avg": "10\u00b3"}))
    newer = LOG.format(**base).replace(
        "count=50 first=1000 curr=1000 min=900 max=1100 avg=1000 std=10",
        "count=50 curr=1000(all same)")
    add("newer benchmark_model: count=N curr=X(all same)", newer, expect="ok",
        check=lambda o: l_ms(o) is not None and abs(l_ms(o) - 1.0) < 1e-9)
    return cases


# --------------------------------------------------------------------------------------------
# --force, names, the explorer


def force_cases(tmp: Path, world: dict[str, str]) -> list[Case]:
    cases: list[Case] = []
    surface = "--force and names"
    d = tmp / "force"
    d.mkdir()

    def add(name, *argv, expect="error", names=None, check=None):
        cases.append(Case(surface, name, list(argv), expect=expect, names=names, check=check))

    precious = d / "mine"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work\n")
    add("bundle --force -o a folder that is not a bundle", "bundle", "--profile",
        world["profile"], "--task", "h1", "--slo", "max A; min L", "--models", world["models"],
        "-o", str(precious), "--force", names="mine",
        check=None)
    cases[-1].result["after"] = lambda: (precious / "thesis.tex").exists()
    add("profiles model --out-dir a folder of the user's (writes beside, deletes nothing)",
        "profiles", "model", "--out-dir", str(precious), "--quiet", expect="ok")
    cases[-1].result["after"] = lambda: (precious / "thesis.tex").exists()
    csv_ok = tmp / "csv" / "c0.csv"
    add("profiles import --device with an escape code", "profiles", "import", str(csv_ok),
        "--format", "csv", "--device", "\x1b[2Jphone", "-o", str(d / "esc.json"),
        names="device")
    esc = base_profile()
    esc["device"]["name"] = "ph\x1b]8;;http://x\x07one"
    p = d / "esc-device.json"
    p.write_text(json.dumps(esc))
    add("device name with an escape code in a profile", "solve", "--profile", str(p), "--slo",
        "max A", names="name")
    esc2 = base_profile()
    esc2["tasks"][0]["name"] = "c\x1b[31mls"
    for c in esc2["configs"]:
        c["task"] = "c\x1b[31mls"
    p2 = d / "esc-task.json"
    p2.write_text(json.dumps(esc2))
    add("task name with an escape code in a profile", "solve", "--profile", str(p2), "--slo",
        "max A", names="name")
    return cases


def explorer_token(tmp: Path, env: dict[str, str], profile: str) -> dict[str, Any]:
    """Serve the explorer and read its command line as any local user can."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(BIN / "workbench"), "explore", "--port", str(port),
                             "--profile", profile], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        token = line.split("token=")[-1].split()[0] if "token=" in line else ""
        time.sleep(2.0)
        cmdlines = []
        for pid in [proc.pid, *_children(proc.pid)]:
            try:
                cmdlines.append(Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"))
            except OSError:
                pass
        exposed = bool(token) and any(token in c for c in cmdlines)
        return {"token_seen": bool(token), "processes": len(cmdlines),
                "outcome": "security" if exposed else ("ok" if token else "unclear")}
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _children(pid: int) -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if int((p / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(p.name))
            except (OSError, ValueError, IndexError):
                pass
    return out


SESSION_CODE = """
import sys
from workbench.errors import WorkbenchError
from workbench.lab.explorer import ExplorerState, load_state, session_of
try:
    arg = sys.argv[1]
    state = ExplorerState.from_query(arg[1:]) if arg.startswith("?") else load_state(arg)
    session = session_of(state)
except WorkbenchError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)
print("opened", session.slo)
"""


def session_cases(tmp: Path) -> list[Case]:
    """Explorer sessions as the page reads them (files, uploads and links go through
    ``load_state`` / ``ExplorerState.from_query`` and ``session_of``)."""
    cases: list[Case] = []
    d = tmp / "sessions"
    d.mkdir()
    good = {"version": 1, "profile": "s20fe", "use_case": "uc1",
            "slo": "max A; max TP; L <= 41.6666667ms"}

    def add(name, arg, *, expect="error", names=None, check=None):
        cases.append(Case("explorer server and sessions", name, ["-c", SESSION_CODE, arg],
                          expect=expect, names=names, check=check, program="python",
                          timeout=60))

    def file(name, data=None, *, text=None):
        p = d / f"{name}.json"
        p.write_text(text if text is not None else json.dumps(good | (data or {})))
        return str(p)

    add("valid session", file("valid"), expect="ok",
        check=lambda out: "41.6666667" in out)
    add("profile /etc/passwd", file("passwd", {"profile": "/etc/passwd"}), names="profile")
    add("profile ../../etc/passwd", file("rel", {"profile": "../../../../etc/passwd"}),
        names="profile")
    outside = tmp / "outside.json"
    outside.write_text(json.dumps(base_profile()))
    add("profile a JSON file outside the workspace", file("out", {"profile": str(outside)}),
        names="profile")
    link = d / "link.json"
    link.symlink_to("/etc/passwd")
    add("profile a symlink to /etc/passwd", file("sym", {"profile": str(link)}),
        names="profile")
    add("use case uc9", file("uc9", {"use_case": "uc9"}), names="use_case")
    add("task with an escape code", file("esc", {"tasks": ["cls\x1b[2J"]}), names="task")
    add("SLO of 1 MB", file("big", {"slo": "max A; " * 150000}), names="64")
    add("link of 100 kB", "?" + "slo=" + "max%20A;" * 12000, names="URL")
    add("link with profile=/etc/passwd", "?profile=/etc/passwd&use_case=uc1&slo=max%20A",
        names="profile")
    add("duplicate keys in a session", file("dup", text=json.dumps(good)[:-1]
                                              + ', "profile": "/etc/passwd"}'), names="profile")
    return cases


# --------------------------------------------------------------------------------------------
# concurrency and kills on the registry


def registry_concurrency(tmp: Path, tiny: dict[str, Path], env: dict[str, str], kills: int,
                         seed: int) -> dict[str, Any]:
    wb = str(BIN / "workbench")
    home = tmp / "conc-home"
    e = dict(env, WORKBENCH_HOME=str(home))

    def run(*argv, **kw):
        return subprocess.run([wb, *argv], capture_output=True, text=True, env=e, **kw)

    def add_cmd(name, force=False):
        return [wb, "models", "add", str(tiny["keras"]), "--name", name, "--task", "t",
                "--data", str(tiny["npz"]), "--quiet", *(["--force"] if force else [])]

    out: dict[str, Any] = {}
    # Two adds of one name at once: exactly one wins.
    wins = 0
    rounds = 3
    for i in range(rounds):
        ps = [subprocess.Popen(add_cmd(f"race{i}"), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=e) for _ in range(2)]
        rcs = [p.wait() for p in ps]
        wins += sum(rc == 0 for rc in rcs) == 1
    out["two_adds_one_name"] = {"rounds": rounds, "exactly_one_won": wins}
    # Two quantise runs on one model at once keep both schemes.
    run(*add_cmd("q")[1:])
    ps = [subprocess.Popen([wb, "quantise", "q", "--schemes", s, "--quiet"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)
          for s in ("FP16", "DR8")]
    [p.wait() for p in ps]
    show = run("models", "show", "q", "--json")
    try:
        have = {v["precision"] for v in json.loads(show.stdout)["variants"] if v["available"]}
    except (ValueError, KeyError):
        have = set()
    out["two_quantise_runs"] = {"schemes_kept": sorted(have),
                                "lost": int(not {"FP16", "DR8"} <= have)}
    # SIGKILL at uniform times during `add --force` and `remove`: old or new, never none/ghost.
    rng = random.Random(seed)
    run(*add_cmd("k")[1:])
    t0 = time.monotonic()
    run(*add_cmd("k", force=True)[1:])
    span = time.monotonic() - t0
    none = ghosts = killed_running = 0
    for i in range(kills):
        cmd = add_cmd("k", force=True) if i % 3 else [wb, "models", "remove", "k"]
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=e)
        time.sleep(rng.uniform(0.0, 1.0) * span)
        killed_running += p.poll() is None
        p.send_signal(signal.SIGKILL)
        p.wait()
        listed = "k" in run("models", "list").stdout.split()
        usable = run("models", "show", "k", "--json").returncode == 0
        if listed and not usable:
            ghosts += 1
        if not listed and cmd[2] != "remove":
            none += 1
        if not listed:
            run(*add_cmd("k")[1:])
    out["kills"] = {"killed": kills, "killed_while_running": killed_running,
                    "entry_gone_after_add_force": none, "ghosts": ghosts}
    out["lost"] = none + out["two_quantise_runs"]["lost"]
    return out


