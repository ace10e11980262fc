"""CSV and LiteRT benchmark_model importers, with the sample files committed under tests/data."""

from pathlib import Path

import pytest

from workbench.errors import InputError
from workbench.profiles import load_profile, save_profile
from workbench.profiles.importers import import_benchmark_log, import_csv, merge


def test_csv_import_reads_every_metric(data_dir):
    prof = import_csv(data_dir / "s20fe_uc1_subset.csv", device="s20fe")
    assert prof.device.name == "s20fe"
    assert {e.name for e in prof.engines} == {"CPU", "GPU", "NPU"}
    c = prof.config("lite0-ffx8-cpu4t")
    assert (c.threads, c.xnnpack, c.L, c.L_p99, c.MF, c.W) == (4, True, 6.02, 7.1, 16.3, 7.7e8)
    assert c.source == "imported"
    # '-' and empty cells mean "not available", not zero.
    lite4 = prof.config("lite4-fp32-cpu1f")
    assert lite4.L is None and lite4.A == 80.81


def test_csv_round_trips_through_json(data_dir, tmp_path):
    prof = import_csv(data_dir / "s20fe_uc1_subset.csv")
    assert load_profile(save_profile(prof, tmp_path / "x.json")) == prof


def _csv(tmp_path, text, name="t.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


HEAD = "config,model,precision,processor,L\n"


@pytest.mark.parametrize("body, where, value", [
    ("a,m,FP32,CPU,-3\n", "line 2, column L", "'-3'"),
    ("a,m,FP32,CPU,nan\n", "line 2, column L", "'nan'"),
    ("a,m,FP32,CPU,fast\n", "line 2, column L", "'fast'"),
    ("a,m,INT4,CPU,3\n", "line 2, column precision", "'INT4'"),
    ("a,m,FP32,TPU9,3\n", "line 2, column processor", "'TPU9'"),
    ("a,m,FP32,CPU,3\na,m,FP16,CPU,2\n", "line 3, column config", "'a'"),
    ("a,,FP32,CPU,3\n", "line 2, column model", None),
])
def test_bad_csv_cells_name_line_column_and_value(tmp_path, body, where, value):
    p = _csv(tmp_path, HEAD + body)
    with pytest.raises(InputError) as info:
        import_csv(p)
    assert info.value.where == where
    assert str(p) in str(info.value)
    if value:
        assert f"(got {value})" in str(info.value)


def test_unknown_column_is_named(tmp_path):
    p = _csv(tmp_path, "config,model,precision,processor,latency\na,m,FP32,CPU,3\n")
    with pytest.raises(InputError, match=r"unknown column.*\(got 'latency'\)"):
        import_csv(p)


def test_missing_required_column(tmp_path):
    p = _csv(tmp_path, "config,model,precision,L\na,m,FP32,3\n")
    with pytest.raises(InputError, match="missing required column 'processor'"):
        import_csv(p)


def test_header_only_csv(tmp_path):
    with pytest.raises(InputError, match="no rows"):
        import_csv(_csv(tmp_path, HEAD))


def test_benchmark_log_import(data_dir):
    prof = import_benchmark_log(data_dir / "benchmark_model_s20fe.log", device="s20fe", task="uc1")
    cpu, gpu = prof.configs
    assert (cpu.model, cpu.precision, cpu.processor, cpu.threads, cpu.xnnpack) == (
        "efficientnet_lite0", "FFX8", "CPU", 4, True)
    # The measured runs are the last count= line before the timings, in us -> ms.
    assert cpu.L == pytest.approx(5.7416)
    assert (cpu.L_min, cpu.L_max, cpu.L_std) == pytest.approx((5.585, 6.904, 0.151))
    assert cpu.MF == pytest.approx(16.0273)
    assert cpu.TP == pytest.approx(1000 / 5.7416)
    assert (gpu.processor, gpu.precision, gpu.threads) == ("GPU", "FP16", None)
    assert gpu.L == pytest.approx(8.93007) and gpu.MF == pytest.approx(53.1172)
    assert cpu.source == "imported"


def test_benchmark_log_without_precision_in_name_needs_it(tmp_path, data_dir):
    text = (data_dir / "benchmark_model_s20fe.log").read_text().replace("_ffx8", "").replace(
        "_fp16", "")
    p = _csv(tmp_path, text, "run.log")
    with pytest.raises(InputError, match="cannot tell the precision"):
        import_benchmark_log(p)
    prof = import_benchmark_log(p, precision="FP32", model="lite0")
    assert {c.precision for c in prof.configs} == {"FP32"}


def test_not_a_benchmark_log(tmp_path):
    with pytest.raises(InputError, match="not a LiteRT benchmark output"):
        import_benchmark_log(_csv(tmp_path, "hello\n", "x.log"))


def test_merge_adds_rows_and_refuses_clashes(data_dir):
    base = import_csv(data_dir / "s20fe_uc1_subset.csv", device="s20fe")
    log = import_benchmark_log(data_dir / "benchmark_model_s20fe.log", device="s20fe")
    merged = merge(base, log)
    assert len(merged.configs) == len(base.configs) + 2
    with pytest.raises(InputError, match="already in the profile"):
        merge(merged, log)
    assert len(merge(merged, log, replace=True).configs) == len(merged.configs)


def test_accuracy_attaches_to_imported_log_rows_so_max_a_solves(data_dir, tmp_path):
    from workbench.moo.problem import DiscreteProblem
    from workbench.profiles.importers import accuracy_table, attach_accuracy

    prof = import_benchmark_log(data_dir / "benchmark_model_s20fe.log", device="s20fe", task="uc1")
    with pytest.raises(InputError, match="A"):
        DiscreteProblem(prof, "max A; min L", tasks=["uc1"])
    table_csv = _csv(tmp_path, "model,precision,A\nefficientnet_lite0,FFX8,74.4\n", "acc.csv")
    table = accuracy_table(["efficientnet_lite0=75.1", str(table_csv)])
    got = attach_accuracy(prof, table, metric="top1 (cited: TF EfficientNet-Lite README)")
    by_prec = {c.precision: c.A for c in got.configs}
    assert by_prec == {"FFX8": 74.4, "FP16": 75.1}  # precision-specific wins over model-wide
    assert got.task("uc1").metric.startswith("top1")
    assert any("attached by hand" in n for n in got.provenance.notes)
    from workbench.solvers import solve

    assert solve(DiscreteProblem(got, "max A; min L", tasks=["uc1"]), "rass").ok


@pytest.mark.parametrize("spec, match", [
    ("lite0", "MODEL=VALUE"), ("lite0=high", "must be a number"), ("lite0:INT4=70", "precision"),
    ("nope=70", "no imported row")])
def test_bad_accuracy_specs_are_named(data_dir, spec, match):
    from workbench.profiles.importers import accuracy_table, attach_accuracy

    prof = import_benchmark_log(data_dir / "benchmark_model_s20fe.log", device="s20fe")
    with pytest.raises(InputError, match=match):
        attach_accuracy(prof, accuracy_table([spec]))


def _mediapipe_dir() -> Path:
    """Where the MediaPipe wheel's models are (requirements/pretrained.txt), found without
    importing it (its import needs OpenCV, which is not installed)."""
    import importlib.util

    spec = importlib.util.find_spec("mediapipe")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the MediaPipe wheel is not installed")
    return Path(list(spec.submodule_search_locations)[0])


LITERT_TEXT = """2026-12-07 07:20:01 INFO __main__: Model:           /m/mnv2_fx8.tflite
2026-12-07 07:20:01 INFO __main__: Model size:      3.41 MB
2026-12-07 07:20:01 INFO __main__: Accelerators:    CPU
2026-12-07 07:20:01 INFO __main__: Num threads:     4

========================================
 BENCHMARK RESULTS
========================================
Model initialization:  12.50 ms
Warmup (first):        9.10 ms
Warmup (avg):          8.00 ms (5 runs)
Inference (avg):       6.25 ms (50 runs)
Inference (min):       5.90 ms
Inference (max):       7.40 ms
Inference (median):    6.20 ms
Inference (std):       0.30 ms
Inference (p5):        5.95 ms
Inference (p95):       6.90 ms
Fully accelerated:     True
========================================
"""


def test_litert_benchmark_text_and_json_import(tmp_path):
    """ai-edge-litert's own `litert-benchmark`: its printed results (with its log lines) and its
    --result_json file both import, the processor and threads from what it logged."""
    import json

    prof = import_benchmark_log(_csv(tmp_path, LITERT_TEXT, "run.log"), task="t")
    (c,) = prof.configs
    assert (c.model, c.precision, c.processor, c.threads) == ("mnv2", "FX8", "CPU", 4)
    assert (c.L, c.L_min, c.L_max, c.L_std) == pytest.approx((6.25, 5.9, 7.4, 0.3))
    assert "50 runs" in c.note
    doc = {"model": "/m/mnv2_fp16.tflite", "accelerators": ["GPU", "CPU"], "num_threads": 1,
           "latency": {"init_ms": 30.0, "avg_ms": 4.5, "min_ms": 4.0, "max_ms": 6.0,
                       "std_ms": 0.4, "num_runs": 20}}
    (g,) = import_benchmark_log(_csv(tmp_path, json.dumps(doc), "r.json")).configs
    assert (g.model, g.precision, g.processor, g.L) == ("mnv2", "FP16", "GPU", 4.5)
    # A broken file names what is wrong.
    bad = dict(doc, latency={"avg_ms": -1})
    with pytest.raises(InputError, match="avg_ms"):
        import_benchmark_log(_csv(tmp_path, json.dumps(bad), "b.json"))
    with pytest.raises(InputError, match="no 'latency' object"):
        import_benchmark_log(_csv(tmp_path, json.dumps({"model": "x"}), "c.json"))


def test_a_real_litert_benchmark_result_json_imports(tmp_path):
    """The tool ai-edge-litert ships, run for real on a LiteRT model (one of MediaPipe's, from
    its wheel), writes --result_json; the importer reads it into a profile row."""
    import shutil
    import subprocess
    import sys

    tool = shutil.which("litert-benchmark", path=str(Path(sys.executable).parent))
    model = _mediapipe_dir() / "modules" / "face_detection" / "face_detection_short_range.tflite"
    if tool is None or not model.is_file():
        pytest.skip("litert-benchmark or the MediaPipe model is not installed")
    out = tmp_path / "result.json"
    run = subprocess.run([tool, "--model", str(model), "--num_runs", "10", "--warmup_runs", "2",
                          "--num_threads", "1", "--result_json", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    (c,) = import_benchmark_log(out, precision="FP32", task="face").configs
    assert c.model == "face_detection_short_range" and c.processor == "CPU" and c.threads == 1
    assert 0 < c.L_min <= c.L <= c.L_max and "10 runs" in c.note
    # Its printed results (its log lines first, as `2>&1` interleaves them) give the same row.
    (t,) = import_benchmark_log(_csv(tmp_path, run.stderr + run.stdout, "run.log"),
                                precision="FP32", task="face").configs
    assert t.L == pytest.approx(c.L, abs=0.01)


def test_op_lists_come_from_the_flatbuffer_schema_and_match_the_interpreter():
    """host.quantise reads a graph's operators with the schema ai-edge-litert ships, not the
    interpreter's private op details; on real models the two lists are the same."""
    from workbench.host.quantise import ops_of
    from workbench.runtime.interpreter import open_interpreter

    models = sorted((_mediapipe_dir() / "modules").rglob("*.tflite"))[:3]
    if not models:
        pytest.skip("no MediaPipe models installed")
    for f in models:
        want = [(o["op_name"], list(o["inputs"]), list(o["outputs"]))
                for o in open_interpreter(f)._get_ops_details()]  # noqa: SLF001 - the reference
        assert [(o["op_name"], o["inputs"], o["outputs"]) for o in ops_of(f)] == want, f.name


@pytest.mark.parametrize("latency, threads, match", [
    ({"avg_ms": 1.37, "min_ms": 1.9, "max_ms": 2.0}, 1, "between min and max"),
    ({"avg_ms": 1.5}, -2, "num_threads"),
    ({"avg_ms": 1.5}, "two", "num_threads"),
])
def test_inconsistent_litert_results_are_refused_naming_the_field(tmp_path, latency, threads,
                                                                  match):
    import json

    doc = {"model": "/m/x_fp32.tflite", "accelerators": ["CPU"], "num_threads": threads,
           "latency": latency}
    with pytest.raises(InputError, match=match) as e:
        import_benchmark_log(_csv(tmp_path, json.dumps(doc), "r.json"))
    assert "r.json" in str(e.value)
