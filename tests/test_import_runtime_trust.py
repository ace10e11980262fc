"""Imported logs are read exactly, and model files are bounded before they are run (issue 35,
"Trust, round 2"): benchmark_model numbers with thousands separators, other scripts' digits and
the newer "all same" statistics lines; CSV numbers; a .tflite whose tensor shapes ask for too
much memory (a flipped byte) refused before LiteRT allocates; a bundle with no loadable design
a one-line error at ``python -m workbench.runtime check`` and ``run``."""

import json

import pytest

from workbench.errors import InputError
from workbench.profiles.importers import import_benchmark_log, import_csv, parse_benchmark_log

# --- benchmark_model logs ---------------------------------------------------------------------

PARAMS = """INFO: STARTING!
INFO: Log parameter values verbosely: [0]
INFO: Num threads: [4]
INFO: Graph: [/data/local/tmp/efficientnet_lite0_ffx8.tflite]
INFO: Use xnnpack: [1]
INFO: Loaded model /data/local/tmp/efficientnet_lite0_ffx8.tflite
INFO: Initialized session in 21.771ms.
"""
WARMUP = ("INFO: Running benchmark for at least 5 iterations and at least 0.5 seconds but "
          "terminate if exceeding 150 seconds.\n")
MEASURE = ("INFO: Running benchmark for at least 100 iterations and at least 1 seconds but "
           "terminate if exceeding 150 seconds.\n")
PEAK = "INFO: Peak memory footprint (MB): init=9.21875 overall=16.0273\n"


def _log(warm: str, measured: str, timings: str, peak: str = PEAK, params: str = PARAMS) -> str:
    return (f"{params}{WARMUP}INFO: {warm}\n\n{MEASURE}INFO: {measured}\n\n"
            f"INFO: Inference timings in us: {timings}\n{peak}")


GOOD = _log("count=87 first=9842 curr=5731 min=5602 max=9842 avg=5788.21 std=472",
            "count=174 first=5795 curr=5710 min=5585 max=6904 avg=5741.6 std=151",
            "Init: 21771, First inference: 9842, Warmup (avg): 5788.21, Inference (avg): 5741.6")
#: Line numbers in a _log(): the measured count= line and the timings line.
COUNT_LINE, TIMINGS_LINE = 12, 14


def _write(tmp_path, text, name="run.log"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_the_line_numbers_of_the_test_log_are_right():
    lines = GOOD.splitlines()
    assert lines[COUNT_LINE - 1].startswith("INFO: count=174")
    assert "Inference timings" in lines[TIMINGS_LINE - 1]


def test_thousands_separators_are_read_as_such_not_cut_at_the_comma(tmp_path):
    text = _log("count=87 first=9,842 curr=5,731 min=5,602 max=9,842 avg=5,788.21 std=472",
                "count=1,174 first=5,795 curr=5,710 min=5,585 max=6,904 avg=5,741.6 std=151",
                "Init: 21,771, First inference: 9,842, Warmup (avg): 5,788.21, "
                "Inference (avg): 5,741.6")
    (rec,) = parse_benchmark_log(text)
    assert rec["L"] == pytest.approx(5.7416)  # was 0.005: "5" then the comma
    assert rec["init_ms"] == pytest.approx(21.771) and rec["first_ms"] == pytest.approx(9.842)
    assert (rec["L_min"], rec["L_max"], rec["L_std"]) == pytest.approx((5.585, 6.904, 0.151))
    assert rec["runs"] == 1174
    # The comma that separates the fields still separates them.
    (plain,) = parse_benchmark_log(GOOD)
    assert plain["L"] == pytest.approx(5.7416) and plain["init_ms"] == pytest.approx(21.771)
    assert {k: plain[k] for k in ("L_min", "L_max", "L_std", "runs")} == {
        k: rec[k] for k in ("L_min", "L_max", "L_std")} | {"runs": 174}


@pytest.mark.parametrize("timings, bad", [
    # A decimal comma, a decimal comma with '.' grouping, commas not between groups of three.
    ("Init: 21771, First inference: 9842, Inference (avg): 5741,6", "5741,6"),
    ("Init: 21771, First inference: 9842, Inference (avg): 5.741,6", "5.741,6"),
    ("Init: 21771, First inference: 9842, Inference (avg): 57,41.6", "57,41.6"),
    ("Init: 21,77, First inference: 9842, Inference (avg): 5741.6", "21,77"),
    # A comma with no space after it does not separate fields: refused, not cut.
    ("Init: 21771,First inference: 9842, Inference (avg): 5741.6",
     "Init: 21771,First inference: 9842"),
])
def test_a_comma_that_is_not_a_thousands_separator_is_refused_naming_the_line(timings, bad):
    with pytest.raises(InputError) as e:
        parse_benchmark_log(_log("count=1 curr=9842", "count=2 first=1 curr=2 min=1 max=2 "
                                 "avg=1.5 std=0.5", timings), file="run.log")
    assert e.value.where == f"line {TIMINGS_LINE}" and e.value.value == bad
    assert "run.log" in str(e.value)


def test_a_field_split_by_a_comma_and_space_inside_a_number_is_refused():
    with pytest.raises(InputError, match="not 'Name: number'") as e:
        parse_benchmark_log(_log("count=1 curr=9842", "count=1 curr=5741",
                                 "Init: 21771, Inference (avg): 5, 741.6"))
    assert e.value.where == f"line {TIMINGS_LINE}"


@pytest.mark.parametrize("where, before, after", [
    # Full-width and Arabic-Indic digits: float() reads both.
    ("count", "min=5585", "min=\uff15\uff15\uff18\uff15"),
    ("count", "std=151", "std=\u0661\u0665\u0661"),
    ("timings", "Init: 21771", "Init: \u0662\u0661\u0667\u0667\u0661"),
    ("timings", "Inference (avg): 5741.6", "Inference (avg): 5741.6\u00b2"),
    ("peak", "overall=16.0273", "overall=\uff11\uff16.0273"),
    ("threads", "Num threads: [4]", "Num threads: [\u0664]"),
    ("threads", "Num threads: [4]", "Num threads: [4\u00b2]"),  # was a ValueError traceback
])
def test_digits_other_than_ascii_are_refused_naming_the_line(where, before, after):
    assert GOOD.count(before) == 1
    text = GOOD.replace(before, after)
    line = next(n for n, x in enumerate(text.splitlines(), 1) if after in x)
    with pytest.raises(InputError) as e:
        parse_benchmark_log(text, file="run.log")
    assert e.value.where == f"line {line}"


# What newer benchmark_model versions write when every sample of a phase took the same time
# (tensorflow/core/util/stats_calculator.h, Stat::OutputToStream).
ALL_SAME = _log("count=1 curr=9842",
                "count=50 curr=5741(all same)",
                "Init: 21771, First inference: 9842, Warmup (avg): 9842, Inference (avg): 5741")


def test_an_all_same_statistics_line_is_read():
    (rec,) = parse_benchmark_log(ALL_SAME)
    assert rec["runs"] == 50
    assert (rec["L"], rec["L_min"], rec["L_max"], rec["L_std"]) == pytest.approx(
        (5.741, 5.741, 5.741, 0.0))


def test_an_all_same_measured_line_does_not_fall_back_to_the_warmup_statistics():
    text = _log("count=5 first=9842 curr=5731 min=5602 max=9842 avg=6788.21 std=472",
                "count=50 curr=5741(all same)",
                "Init: 21771, First inference: 9842, Warmup (avg): 6788.21, "
                "Inference (avg): 5741")
    (rec,) = parse_benchmark_log(text)
    assert (rec["runs"], rec["L_min"], rec["L_max"], rec["L_std"]) == (50, 5.741, 5.741, 0.0)


def test_a_newer_log_imports_end_to_end(tmp_path):
    """A newer tool's log: glog-style prefixes, both statistics forms, an exponent in a long
    average, a warm-up that ran nothing (``count=0``, ``nan``) and the periodic-monitor line."""
    text = (
        "INFO: STARTING!\n"
        "INFO: Log parameter values verbosely: [0]\n"
        "INFO: Min num runs: [10]\n"
        "INFO: Num threads: [2]\n"
        "INFO: Graph: [/data/local/tmp/big_fp32.tflite]\n"
        "INFO: Use xnnpack: [0]\n"
        "INFO: Loaded model /data/local/tmp/big_fp32.tflite\n"
        "INFO: The input model file size (MB): 98.1\n"
        "INFO: Initialized session in 412.5ms.\n"
        "INFO: Running benchmark for at least 0 iterations and at least 0 seconds but "
        "terminate if exceeding 150 seconds.\n"
        "INFO: count=0\n\n"
        "INFO: Running benchmark for at least 10 iterations and at least 1 seconds but "
        "terminate if exceeding 150 seconds.\n"
        "I0000 00:00:1716891234.5 benchmark_model.cc:123] count=10 first=1234567 curr=1234000 "
        "min=1230000 max=1240000 avg=1.23457e+06 std=2871\n\n"
        "INFO: Inference timings in us: Init: 412500, First inference: 1234567, Warmup (avg): nan,"
        " Inference (avg): 1.23457e+06\n"
        "INFO: Memory footprint delta from the start of the tool (MB): init=90.1 overall=160.2\n"
        "INFO: Overall peak memory footprint (MB) via periodic monitoring: 171.5\n"
        "INFO: Peak memory footprint (MB): init=0 overall=168.25\n")
    prof = import_benchmark_log(_write(tmp_path, text), device="phone")
    (c,) = prof.configs
    assert (c.model, c.precision, c.processor, c.threads, c.xnnpack) == (
        "big", "FP32", "CPU", 2, False)
    assert c.L == pytest.approx(1234.57) and c.MF == pytest.approx(168.25)
    assert (c.L_min, c.L_max, c.L_std) == pytest.approx((1230.0, 1240.0, 2.871))
    assert "10 runs" in c.note


def test_a_statistics_line_in_an_unknown_form_is_refused_not_skipped():
    # Skipping it would silently report the warm-up's statistics as the measured ones.
    text = GOOD.replace("count=174 first=5795 curr=5710 min=5585 max=6904 avg=5741.6 std=151",
                        "count=174 first=5795 curr=5710 min=5585")
    with pytest.raises(InputError, match="unknown form") as e:
        parse_benchmark_log(text)
    assert e.value.where == f"line {COUNT_LINE}"


def test_measured_runs_of_count_0_are_refused_naming_the_line():
    text = _log("count=1 curr=9842", "count=0",
                "Init: 21771, First inference: 9842, Warmup (avg): 9842, Inference (avg): 5741")
    with pytest.raises(InputError, match="measured nothing") as e:
        parse_benchmark_log(text)
    assert e.value.where == f"line {COUNT_LINE}"


def test_cli_import_of_a_grouped_log_stores_the_right_latency(tmp_path, monkeypatch, capsys):
    from workbench.cli import main

    text = GOOD.replace("Inference (avg): 5741.6", "Inference (avg): 5,741.6")
    log = _write(tmp_path, text)
    out = tmp_path / "p.json"
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path / "home"))
    assert main(["profiles", "import", str(log), "--format", "benchmark-log",
                 "--device", "s20fe", "-o", str(out)]) == 0
    (row,) = json.loads(out.read_text())["configs"]
    assert row["L"] == pytest.approx(5.7416)


# --- CSV tables --------------------------------------------------------------------------------

HEAD = "config,model,precision,processor,threads,L\n"


@pytest.mark.parametrize("cell, column", [
    ("\uff15.2", "L"),           # full-width 5: float() reads it
    ("\u0665", "L"),             # Arabic-Indic 5
    ("1_000", "L"),              # float("1_000") is 1000.0
    ("\u0664", "threads"),       # an Arabic-Indic 4 thread count
])
def test_csv_numbers_are_ascii_decimals(tmp_path, cell, column):
    row = {"threads": "4", "L": "5.2"} | {column: cell}
    p = _write(tmp_path, HEAD + f"a,m,FP32,CPU,{row['threads']},{row['L']}\n", "t.csv")
    with pytest.raises(InputError) as e:
        import_csv(p)
    assert e.value.where == f"line 2, column {column}" and e.value.value == cell


@pytest.mark.parametrize("cell", ['"5,741.6"', '"5,741"', '"5741,6"'])
def test_csv_numbers_with_a_comma_are_refused_with_the_reason(tmp_path, cell):
    # In a table "5,741" may as well be 5.741 ms with a decimal comma: refused, never guessed.
    p = _write(tmp_path, HEAD + f"a,m,FP32,CPU,4,{cell}\n", "t.csv")
    with pytest.raises(InputError, match="decimal point and no thousands separators") as e:
        import_csv(p)
    assert e.value.where == "line 2, column L"


def test_csv_plain_numbers_still_read(tmp_path):
    p = _write(tmp_path, HEAD + "a,m,FP32,CPU,4,5.2\nb,m,FP16,CPU, 2 ,1e1\nc,m,FX8,CPU,1,.5\n",
               "t.csv")
    got = {c.id: (c.threads, c.L) for c in import_csv(p).configs}
    assert got == {"a": (4, 5.2), "b": (2, 10.0), "c": (1, 0.5)}


# --- .tflite tensor shapes, checked before LiteRT allocates -----------------------------------

litert = pytest.importorskip("ai_edge_litert")


def tiny_model(shape=(1, 32, 32, 8)) -> bytes:
    """A real 0.4 kB LiteRT model written with the schema LiteRT ships: y = x + bias, x float32
    ``shape`` (tensor 0, 'x'), bias a constant of the last dimension (tensor 1, 'bias')."""
    import flatbuffers
    import numpy as np
    from ai_edge_litert import schema_py_generated as s

    def tensor(name, shp, buf):
        t = s.TensorT()
        t.name, t.shape, t.type, t.buffer = name, list(shp), s.TensorType.FLOAT32, buf
        return t

    code = s.OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = s.BuiltinOperator.ADD
    code.version = 1
    bias = s.BufferT()
    bias.data = np.ones(shape[-1], np.float32).tobytes()
    op = s.OperatorT()
    op.opcodeIndex, op.inputs, op.outputs = 0, [0, 1], [2]
    op.builtinOptionsType, op.builtinOptions = s.BuiltinOptions.AddOptions, s.AddOptionsT()
    sg = s.SubGraphT()
    sg.tensors = [tensor("x", shape, 2), tensor("bias", shape[-1:], 1), tensor("y", shape, 3)]
    sg.inputs, sg.outputs, sg.operators, sg.name = [0], [2], [op], "main"
    m = s.ModelT()
    m.version, m.operatorCodes, m.subgraphs = 3, [code], [sg]
    m.buffers = [s.BufferT(), bias, s.BufferT(), s.BufferT()]
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def flip_shape_byte(blob: bytes, value: int, *, tensor: int = 0, dim: int = -1,
                    byte: int = 2) -> bytes:
    """``blob`` with one byte of one tensor's shape vector set to ``value`` (little-endian int32
    dims: byte 2 of 8 -> 0xFF makes 16711688; byte 3 -> 0xFF makes it negative)."""
    from ai_edge_litert.schema_py_generated import Model

    t = Model.GetRootAs(blob, 0).Subgraphs(0).Tensors(tensor)
    o = t._tab.Offset(4)  # the shape field
    pos = t._tab.Vector(o) + 4 * (dim % t._tab.VectorLen(o)) + byte
    out = bytearray(blob)
    out[pos] = value
    return bytes(out)


@pytest.fixture
def no_interpreter(monkeypatch):
    """Fail the test if LiteRT is asked to build an interpreter (the check must come first)."""
    import ai_edge_litert.interpreter as li

    def refuse(*a, **kw):
        raise AssertionError("an interpreter was built for a model that should be refused")
    monkeypatch.setattr(li, "Interpreter", refuse)


def test_the_tiny_model_runs_and_its_tensors_are_counted(tmp_path):
    import numpy as np

    from workbench.runtime.interpreter import check_model, open_interpreter

    blob = tiny_model()
    path = tmp_path / "tiny.tflite"
    path.write_bytes(blob)
    assert check_model(blob) == check_model(path) == 2 * 32 * 32 * 8 * 4  # x and y, not bias
    it = open_interpreter(path, batch=2)
    inp = it.get_input_details()[0]
    it.set_tensor(inp["index"], np.zeros(inp["shape"], np.float32))
    it.invoke()
    assert it.get_tensor(it.get_output_details()[0]["index"]).sum() == 2 * 32 * 32 * 8


@pytest.mark.parametrize("xnnpack", [True, False])
def test_a_flipped_shape_byte_is_refused_before_an_interpreter_exists(tmp_path, no_interpreter,
                                                                      xnnpack):
    from workbench.runtime.interpreter import open_interpreter

    path = tmp_path / "flipped.tflite"
    path.write_bytes(flip_shape_byte(tiny_model(), 0xFF))  # 4.5 kB would ask for 64 GiB
    with pytest.raises(InputError) as e:
        open_interpreter(path, xnnpack=xnnpack, batch=1)
    msg = str(e.value)
    assert str(path) in msg and "'x'" in msg and "2 GiB limit" in msg
    assert e.value.value == [1, 32, 32, 16711688]
    with pytest.raises(InputError, match="'x'.*2 GiB limit"):
        open_interpreter(path.read_bytes(), xnnpack=xnnpack)  # the runtime passes bytes


def test_a_negative_dimension_is_refused_naming_the_tensor(tmp_path, no_interpreter):
    from workbench.runtime.interpreter import open_interpreter

    path = tmp_path / "neg.tflite"
    path.write_bytes(flip_shape_byte(tiny_model(), 0xFF, byte=3))
    with pytest.raises(InputError, match="negative dimension") as e:
        open_interpreter(path)
    assert "'x'" in str(e.value) and e.value.value == [1, 32, 32, -16777208]


def test_the_limit_is_stated_and_names_the_largest_tensor():
    from workbench.runtime.interpreter import MAX_TENSOR_BYTES, check_model

    assert MAX_TENSOR_BYTES == 2 << 30
    with pytest.raises(InputError, match=r"need 39.1 MiB, over the 30 MiB limit") as e:
        check_model(tiny_model((1, 64, 64, 1250)), limit=30 << 20)  # x and y: 19.5 MiB each
    assert e.value.where == "subgraph 0, tensor 0 'x'"


@pytest.mark.parametrize("mangle, why", [
    (lambda b: b"big-FP32" * 100, "no TFL3 flatbuffer identifier"),
    (lambda b: b[: len(b) // 2], "cut short or corrupt"),
    (lambda b: b[:4] + b"XXXX" + b[8:], "no TFL3 flatbuffer identifier"),
])
def test_garbage_and_truncated_files_are_not_models(tmp_path, no_interpreter, mangle, why):
    from workbench.runtime.interpreter import open_interpreter

    path = tmp_path / "bad.tflite"
    path.write_bytes(mangle(tiny_model()))
    with pytest.raises(InputError, match=why):
        open_interpreter(path)


# --- bundles with no loadable design ----------------------------------------------------------

def _problem():
    from conftest import make_profile

    from workbench.moo.problem import DiscreteProblem

    rows = []
    for proc, speed in (("CPU[0]", 1.6), ("CPU[0,1]", 1.0)):
        for model, acc, lat in (("big", 90, 20), ("small", 80, 8)):
            for prec, da, dl in (("FP32", 0, 1.0), ("FFX8", -1.0, 0.5)):
                rows.append(dict(id=f"{model}-{prec}-{proc}", model=model, precision=prec,
                                 processor=proc, threads=1, xnnpack=True, A=acc + da,
                                 L=lat * dl * speed, MF=10, W=1e9, S=5))
    return DiscreteProblem(make_profile(rows, cores=2), "max A; min L; avg L <= 100ms")


def _bundle(tmp_path, content) -> "Path":  # noqa: F821
    """A RASS bundle whose every model file holds ``content`` (checksums made to match: the
    files are what the bundle was built with, so only loading them can tell)."""
    from workbench.bundling import make_bundle
    from workbench.solvers import rass

    pb = _problem()
    zoo = tmp_path / "zoo"
    task = pb.tasks[0].configs[0].task
    for model in ("big", "small"):
        d = zoo / task / model
        d.mkdir(parents=True)
        for p in ("FFX8", "FP32"):
            (d / f"{p}.tflite").write_bytes(content)
        (d / "record.json").write_text(json.dumps({"task": task, "model": model, "variants": [
            {"precision": p, "available": True, "file": f"{p}.tflite"} for p in ("FFX8", "FP32")]}))
    make_bundle(rass(pb), pb, tmp_path / "b", models=zoo)
    return tmp_path / "b"


BROKEN = {"garbage": (b"big-FP32" * 100, "no TFL3 flatbuffer identifier"),
          "truncated": (tiny_model()[:300], "cut short or corrupt"),
          "flipped": (flip_shape_byte(tiny_model(), 0xFF), "'x'")}


def _one_error_line(err: str, bundle) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"error: {bundle}: no loadable design (")
    return lines[0]


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_check_and_run_of_a_bundle_with_no_loadable_design_say_so_in_one_line(tmp_path, capsys,
                                                                              kind):
    from workbench.runtime.run import main

    content, why = BROKEN[kind]
    b = _bundle(tmp_path, content)
    assert main(["check", str(b)]) == 1
    out, err = capsys.readouterr()
    line = _one_error_line(err, b)
    assert "d0" in line and "d1" in line and why in line and "cannot load" in line
    assert main(["run", str(b), "--duration", "0.2", "--rate", "10"]) == 1
    line = _one_error_line(capsys.readouterr().err, b)
    assert "d0" in line and "d1" in line and why in line


def test_workbench_run_says_so_in_one_line_too(tmp_path, capsys, monkeypatch):
    from workbench.cli import main

    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path / "home"))
    b = _bundle(tmp_path, BROKEN["garbage"][0])
    assert main(["run", str(b), "--duration", "0.2"]) == 1
    _one_error_line(capsys.readouterr().err, b)


def test_check_marks_the_designs_that_do_not_load_and_keeps_the_others(tmp_path, capsys):
    """Only d1's configuration gets a broken file: check loads each design and says which."""
    import hashlib

    from workbench.runtime import load_bundle
    from workbench.runtime.run import main

    b = _bundle(tmp_path, tiny_model())
    bundle = load_bundle(b)
    (cid,) = bundle.designs["d1"].configs
    assert all(cid not in bundle.designs[r].configs for r in bundle.designs if r != "d1")
    junk = b"junk" * 50
    (b / "models" / "junk.tflite").write_bytes(junk)
    m = json.loads((b / "manifest.json").read_text())
    m["models"]["models/junk.tflite"] = {"sha256": hashlib.sha256(junk).hexdigest(),
                                         "bytes": len(junk)}
    m["configs"][cid]["file"] = "models/junk.tflite"
    (b / "manifest.json").write_text(json.dumps(m))
    assert main(["check", str(b)]) == 0
    out = capsys.readouterr().out
    d0 = next(x for x in out.splitlines() if x.strip().startswith("d0 "))
    d1 = next(x for x in out.splitlines() if x.strip().startswith("d1 "))
    assert d0.endswith("[ok]")
    assert "[REMOVED: " in d1 and "junk.tflite" in d1 and "no TFL3 flatbuffer identifier" in d1


def test_python_m_workbench_runtime_check_prints_no_traceback(tmp_path):
    import subprocess
    import sys

    b = _bundle(tmp_path, BROKEN["truncated"][0])
    r = subprocess.run([sys.executable, "-m", "workbench.runtime", "check", str(b)],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "cut short or corrupt" in _one_error_line(r.stderr, b)


@pytest.mark.parametrize("dup", ["std=60 std=70", "count=50 count=60", "min=1 min=2"])
def test_a_statistics_line_with_a_key_twice_is_refused_naming_the_line(tmp_path, dup):
    from workbench.profiles.importers import parse_benchmark_log

    line = "count=50 first=1000 curr=1000 min=900 max=1100 avg=1000 std=10 " + dup
    text = ("STARTING!\nGraph: [m.tflite]\nNum threads: [4]\n" + line + "\n"
            "Inference timings in us: Init: 100, First inference: 1200, Warmup (avg): 1000, "
            "Inference (avg): 1000\n")
    with pytest.raises(InputError, match="more than once") as e:
        parse_benchmark_log(text, file="x.log")
    assert "line 4" in str(e.value)
