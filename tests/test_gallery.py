"""The gallery: the 14 real graphs of the mediapipe==0.10.21 wheel through models add and
profile (13 run here; one has a custom op no LiteRT here has: refused in one line), and one of
them on through solve, bundle and run; four Keras models of the kinds researchers bring (LSTM,
1-D audio, regression, segmentation) through every step. ONNX models: tests/test_onnx.py."""

import numpy as np
import pytest

from workbench.cli import main
from workbench.host import gallery, profiling

pytest.importorskip("ai_edge_litert")
GRAPHS = gallery.mediapipe_graphs()
pytestmark = pytest.mark.skipif(len(GRAPHS) != 14, reason="mediapipe==0.10.21 is not installed "
                                "(make setup installs requirements/pretrained.txt)")


def test_every_mediapipe_graph_profiles_or_says_why_in_one_line(home, tmp_path):
    options = profiling.host_options((1,), processor_ids=["CPU[0]"])
    outcomes = {m.name: gallery.try_model(m, profile_dir=tmp_path, options=options, warmup=1,
                                          runs=3) for m in GRAPHS}
    refused = {n: o.reason for n, o in outcomes.items() if not o.added}
    assert list(refused) == ["mp-face-landmark-with-attention"]
    why = refused["mp-face-landmark-with-attention"]
    assert "custom op Landmarks2TransformMatrix" in why and "\n" not in why
    for name, o in outcomes.items():
        if o.added:
            assert o.n_configs >= 1 and o.best_L_ms > 0 and o.MF_mb > 0, name
    multi = [n for n, o in outcomes.items() if (o.outputs or 0) > 1]
    assert len(multi) == 10  # the graphs the workbench used to refuse for having several outputs
    seg = outcomes["mp-selfie-segmentation"]
    assert seg.n_configs == 1 and seg.failed == {
        "the graph uses the custom op Convolution2DTransposeBias, which LiteRT here cannot run "
        "without XNNPACK": 1}


def test_a_gallery_graph_goes_on_through_solve_bundle_and_run(home, tmp_path, capsys):
    m = next(g for g in GRAPHS if g.name == "mp-hand-landmark-lite")
    assert main(["models", "add", str(m.path), "--name", "hand", "--task", "hand", "--output",
                 "1", "--quiet"]) == 0
    prof = tmp_path / "hand.json"
    assert main(["profile", "--models", "hand", "--protocol", "quick", "--threads", "1",
                 "--processors", "CPU[0]", "-o", str(prof), "--quiet"]) == 0
    assert 'next: workbench solve --profile' in capsys.readouterr().out
    assert main(["bundle", "--profile", str(prof), "--slo", "min L; min MF", "-o",
                 str(tmp_path / "b")]) == 0
    assert main(["run", str(tmp_path / "b"), "--duration", "1", "--rate", "10"]) == 0
    out = capsys.readouterr().out
    assert " served, 0 rejected, 0 lost" in out
    # The bundle answers with the output A reads (the second), not the first tensor LiteRT lists.
    from workbench.host import registry
    from workbench.runtime.bundle import load_bundle
    from workbench.runtime.executor import Executor

    rec = registry.get("hand")
    b = load_bundle(tmp_path / "b")
    spec = b.configs[b.designs["d0"].configs[0]]
    assert spec.output == rec.output_ref and spec.output[0] == 1
    ex = Executor(spec, b.root / spec.file).load()
    y, _ = ex.run(None)
    assert list(y.shape[1:]) == rec.outputs[1].shape == rec.output_shape
    # A request may ask for every output: named as the model was added, A's among them.
    from workbench.runtime import RuntimeManager

    x = np.random.default_rng(0).random((1, *ex.input_shape), np.float32)
    with RuntimeManager(b) as rm:
        one = rm.submit("hand", x).result(timeout=30)
        every = rm.submit("hand", x, every_output=True).result(timeout=30)
    assert list(every) == [o.name for o in rec.outputs] and len(every) > 1
    assert all(list(v.shape[1:]) == o.shape for v, o in zip(every.values(), rec.outputs))
    assert np.array_equal(every[rec.outputs[1].name], one)


@pytest.fixture(scope="module")
def keras_gallery(tmp_path_factory):
    pytest.importorskip("tensorflow")
    return gallery.keras_models(tmp_path_factory.mktemp("keras"), epochs=1)


@pytest.mark.slow
def test_the_keras_gallery_goes_through_every_step(keras_gallery, home, tmp_path, capsys):
    """An LSTM text classifier, a 1-D audio net, a regression CNN and a segmentation net: each
    added with its data, converted to the five schemes, profiled, bundled and run."""
    from workbench.host import registry

    metric = {"keras-kaomoji-lstm": "accuracy", "keras-audio-1d": "accuracy",
              "keras-digit-regression": "mae", "keras-shapes-segmentation": "miou"}
    assert [m.name for m in keras_gallery] == list(metric)
    options = profiling.host_options((1,), xnnpack=(True,), processor_ids=["CPU[0]"])
    for m in keras_gallery:
        o = gallery.try_model(m, profile_dir=tmp_path, options=options, warmup=1, runs=3)
        assert o.added, o.reason
        rec = registry.get(m.name)
        assert rec.metric == metric[m.name] and o.metric == rec.metric
        assert rec.available == ["FP32", "FP16", "DR8", "FX8", "FFX8"], [
            (v.precision, v.reason) for v in rec.variants if not v.available]
        for v in rec.variants:  # every A has its sample count and interval
            assert v.metric_n == rec.data.n_eval and v.metric_lo <= v.metric <= v.metric_hi
        assert o.n_configs == 5 and not o.failed
        slo = "min MAE; min L" if rec.metric == "mae" else "max A; min L"
        bundle = tmp_path / f"{m.name}-bundle"
        assert main(["bundle", "--profile", str(tmp_path / f"{m.name}.json"), "--slo", slo,
                     "-o", str(bundle)]) == 0
        assert main(["run", str(bundle), "--duration", "1", "--rate", "10"]) == 0
        assert " served, 0 rejected, 0 lost" in capsys.readouterr().out
    lstm = registry.get("keras-kaomoji-lstm")
    assert any("unrolled" in n for n in lstm.notes)
