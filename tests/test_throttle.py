"""Real CPU throttling (``throttle:PROC:PCT``, a cgroup-v1 CFS quota on the engine serving):
the event language refuses bad input in one line, and on a machine where it can (root and the
cgroup-v1 cpu controller) a throttle of the engine serving a stream is detected from request
latency, answered by a switch to a design on another engine that meets the SLO, and its cgroup is
gone afterwards, also when the run is interrupted."""

import contextlib
import io
import json
import os
import threading
import time

import pytest
from conftest import make_profile

from workbench.errors import InputError
from workbench.runtime import events as ev
from workbench.runtime import parse_events
from workbench.runtime import throttle as cg  # where throttle_problem reads the cgroup

SLO_MS = 41.67


def _groups() -> list[str]:
    """This process's throttle groups that still exist."""
    parent = ev._own_group(ev.CPU_CGROUP)
    prefix = f"workbench-throttle-{os.getpid()}-"
    try:
        return [n for n in os.listdir(parent) if n.startswith(prefix)]
    except OSError:
        return []


needs_cgroup = pytest.mark.skipif(ev.throttle_problem() is not None,
                                  reason=f"no real throttling here: {ev.throttle_problem()}")


# --- the event language ------------------------------------------------------------------------

@pytest.mark.parametrize("text, says", [
    ("1:throttle:GPU:20", "takes a CPU core set"),
    ("1:throttle:CPU[0,7]:20", "this machine has cores"),
    ("1:throttle:CPU[0]:5", "percent of one core, 10..99"),
    ("1:throttle:CPU[0]:100", "percent of one core, 10..99"),
    ("1:throttle:CPU[0]:nan", "percent of one core, 10..99"),
    ("1:throttle:CPU[0]:inf", "percent of one core, 10..99"),
    ("1:throttle:CPU[0]:lots", "percent of one core, 10..99"),
    ("1:throttle:CPU[0]", "'throttle' takes 2 argument(s)"),
    ("1:unthrottle:CPU[0]", "'unthrottle' takes 0 argument(s)"),
])
def test_bad_throttle_events_are_refused_in_one_line(text, says):
    with pytest.raises(InputError) as e:
        parse_events(text)
    assert says in str(e.value) and "\n" not in str(e.value)
    assert text.split(",")[0] in str(e.value)  # names the item


def test_a_machine_without_the_cpu_controller_is_told_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(cg, "CPU_CGROUP", str(tmp_path / "nope"))
    with pytest.raises(InputError) as e:
        parse_events("1:throttle:serving:20, 4:unthrottle")
    msg = str(e.value)
    assert "cgroup-v1 cpu controller" in msg and str(tmp_path / "nope") in msg
    assert "\n" not in msg


def test_without_root_the_error_says_so(tmp_path, monkeypatch):
    (tmp_path / "cpu.cfs_quota_us").write_text("-1\n")
    monkeypatch.setattr(cg, "CPU_CGROUP", str(tmp_path))
    monkeypatch.setattr(cg, "_own_group", lambda root: root)
    monkeypatch.setattr(cg.os, "access", lambda *a, **k: False)
    monkeypatch.setattr(cg.os, "geteuid", lambda: 1000)
    with pytest.raises(InputError, match=r"needs root .* \(running as uid 1000\)") as e:
        parse_events("1:throttle:CPU[0]:20")
    assert "\n" not in str(e.value)


def test_the_cli_refuses_a_bad_throttle_with_one_error_line(tmp_path, monkeypatch):
    from workbench.runtime.run import main

    monkeypatch.setattr(cg, "CPU_CGROUP", str(tmp_path / "nope"))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["run", str(tmp_path / "bundle"), "--inject", "1:throttle:serving:20"])
    assert code == 1
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --inject item")
    assert "cgroup-v1 cpu controller" in lines[0] and "Traceback" not in err.getvalue()


@needs_cgroup
def test_valid_throttle_events_parse_here():
    got = parse_events("4:unthrottle, 1:throttle:CPU[0]:20, 2:throttle:serving:12.5")
    assert [(e.kind, e.args) for e in got] == [("throttle", ("CPU[0]", "20")),
                                               ("throttle", ("serving", "12.5")),
                                               ("unthrottle", ())]


# --- the cgroup, for real ------------------------------------------------------------------------

@needs_cgroup
def test_a_throttle_confines_the_thread_on_its_engine_and_is_removed_after():
    stop = threading.Event()
    th = threading.Thread(target=stop.wait)
    th.start()
    inj = ev.EventInjector()
    try:
        tid = th.native_id
        inj.serving_on(tid, {0}, "CPU[0]")
        assert inj.apply(ev.Event(0, "throttle", ("serving", "20"))) == ["CPU[0]"]
        (name,) = _groups()
        cg = open(f"/proc/self/task/{tid}/cgroup").read()
        assert name in cg  # the serving thread is inside ...
        assert name not in open(f"/proc/self/task/{threading.get_native_id()}/cgroup").read()
        inj.serving_on(tid, {1}, "CPU[1]")  # ... until it moves to another engine
        assert name not in open(f"/proc/self/task/{tid}/cgroup").read()
        inj.serving_on(tid, {0}, "CPU[0]")
        assert name in open(f"/proc/self/task/{tid}/cgroup").read()
    finally:
        inj.stop()
        stop.set()
        th.join()
    assert _groups() == []
    assert inj.throttle_log[0]["engine"] == "CPU[0]" and inj.throttle_log[0]["quota_us"] == 2000


# --- a run with a real throttle ------------------------------------------------------------------

def _conv_model(layers: int = 8, hw: int = 32, c: int = 16) -> bytes:
    """A real LiteRT model written with the schema LiteRT ships: ``layers`` 3x3 convolutions
    (ReLU) on a (1, hw, hw, c) float32 image, one shared 9 kB filter. About 1 ms an invoke here,
    so 300 requests/s keep the serving thread about a third of a core busy (with little Python
    around it, unlike the host's 0.06 ms h1 models at 2000 requests/s)."""
    import flatbuffers
    import numpy as np
    from ai_edge_litert import schema_py_generated as s

    def tensor(name, shp, buf):
        t = s.TensorT()
        t.name, t.shape, t.type, t.buffer = name, list(shp), s.TensorType.FLOAT32, buf
        return t

    code = s.OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = s.BuiltinOperator.CONV_2D
    code.version = 1
    w, bias = s.BufferT(), s.BufferT()
    w.data = (np.random.default_rng(0).standard_normal((c, 3, 3, c)) * 0.05).astype(
        np.float32).tobytes()
    bias.data = np.zeros(c, np.float32).tobytes()
    buffers = [s.BufferT(), w, bias]
    tensors = [tensor("w", (c, 3, 3, c), 1), tensor("b", (c,), 2)]
    ops, prev = [], None
    for k in range(layers + 1):
        buffers.append(s.BufferT())
        tensors.append(tensor(f"a{k}", (1, hw, hw, c), len(buffers) - 1))
        if prev is not None:
            op = s.OperatorT()
            op.opcodeIndex, op.inputs, op.outputs = 0, [prev, 0, 1], [len(tensors) - 1]
            opt = s.Conv2DOptionsT()
            opt.padding, opt.strideW, opt.strideH = s.Padding.SAME, 1, 1
            opt.fusedActivationFunction = s.ActivationFunctionType.RELU
            op.builtinOptionsType, op.builtinOptions = s.BuiltinOptions.Conv2DOptions, opt
            ops.append(op)
        prev = len(tensors) - 1
    sg = s.SubGraphT()
    sg.tensors, sg.inputs, sg.outputs, sg.operators, sg.name = tensors, [2], [prev], ops, "main"
    m = s.ModelT()
    m.version, m.operatorCodes, m.subgraphs, m.buffers = 3, [code], [sg], buffers
    b = flatbuffers.Builder(1 << 16)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


@pytest.fixture
def three_engine_bundle(tmp_path):
    """A RASS bundle of one real ~1 ms model on CPU[0,1] (best), CPU[0] and CPU[1]."""
    pytest.importorskip("ai_edge_litert")
    from workbench.bundling import make_bundle
    from workbench.moo.problem import DiscreteProblem
    from workbench.solvers import rass

    rows = [dict(id=f"tiny-{p}", model="tiny", precision="FP32", processor=p, threads=1,
                 xnnpack=True, A=90.0, L=lat, L_max=2 * lat, MF=5.0, W=1e6, S=0.01)
            for p, lat in (("CPU[0,1]", 1.0), ("CPU[0]", 1.1), ("CPU[1]", 1.2))]
    pb = DiscreteProblem(make_profile(rows, cores=2), f"max A; min L; max L <= {SLO_MS}ms")
    zoo = tmp_path / "zoo" / "t" / "tiny"
    zoo.mkdir(parents=True)
    (zoo / "FP32.tflite").write_bytes(_conv_model())
    (zoo / "record.json").write_text(json.dumps({"task": "t", "model": "tiny", "variants": [
        {"precision": "FP32", "available": True, "file": "FP32.tflite"}]}))
    res = rass(pb)
    make_bundle(res, pb, tmp_path / "b", models=tmp_path / "zoo")
    return tmp_path / "b"


#: The runtime judges engines by the request-latency SLO only (as the throttle scenario does: the
#: machine is shared, and other sessions' load must not move the design in this test).
SLO_ONLY = dict(request_slo_ms=SLO_MS, latency_hold_s=30.0, load_threshold=1.0,
                slow_factor=1000.0)


@needs_cgroup
def test_a_real_throttle_is_detected_from_latency_and_answered(three_engine_bundle):
    from workbench.runtime import Event, load_bundle
    from workbench.runtime.run import run

    b = load_bundle(three_engine_bundle)
    assert b.configs[b.designs["d0"].configs[0]].processor == "CPU[0,1]"
    out = run(b, duration=4.0, rate=300, events=[Event(1.0, "throttle", ("serving", "10")),
                                                 Event(3.5, "unthrottle")], **SLO_ONLY)
    tl = out.timeline
    rows = tl["rows"]
    seen = (f"switches {[(round(s['t'], 3), s['to'], s['flags']) for s in tl['switches']]}; "
            f"request ms {[(t, r) for t, r in zip(rows['t'], rows['R[t]']) if 0.9 < t < 2.5]}")
    (thr,) = [e for e in tl["events"] if e["kind"] == "throttle"]
    # "serving": the engine serving at 1 s (d0's CPU[0,1], unless something else on this shared
    # machine moved the design before).
    (start,) = thr["engines"]
    # The kernel really throttled the serving thread (cpu.stat of the group).
    (k,) = out.stats["throttles"]
    assert k["engine"] == start and k["nr_throttled"] > 0 and k["throttled_ms"] > 0
    # Detected: a switch for flags, with the throttled engine flagged (from request latency;
    # the runtime never reads the cgroup), to a design on another engine.
    hit = next((s for s in tl["switches"] if s["reason"] == "flags" and s["t"] >= thr["t"]),
               None)
    assert hit is not None and start in hit["flags"], seen
    assert all(b.configs[c].processor != start for c in hit["configs"])
    delay = hit["t"] - thr["t"]
    assert 0 < delay < 2.0
    # Answered: the design it moved to met the SLO for the rest of the throttle.
    after = [r for t, d, r in zip(rows["t"], rows["design"], rows["R[t]"])
             if hit["t"] < t < 3.5 and d == hit["to"] and r is not None]
    assert after and sum(r <= SLO_MS for r in after) >= 0.9 * len(after), seen
    assert out.lost == 0
    assert _groups() == []


@needs_cgroup
def test_an_interrupted_run_removes_its_cgroup(three_engine_bundle):
    from workbench.runtime import Event, load_bundle
    from workbench.runtime.run import run

    def interrupt(switch):
        deadline = time.monotonic() + 3
        while not _groups() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _groups()  # the throttle is in place when the run is interrupted
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(load_bundle(three_engine_bundle), duration=5.0, rate=300,
            events=[Event(0.1, "throttle", ("CPU[0,1]", "10"))], on_switch=interrupt,
            **SLO_ONLY)
    assert _groups() == []
