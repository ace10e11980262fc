"""CSV and LiteRT benchmark_model importers, with the sample files committed under tests/data."""

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
    with pytest.raises(InputError, match="not a benchmark_model log"):
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
