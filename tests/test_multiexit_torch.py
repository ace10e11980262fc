"""The multi-exit engine for real: train on a host dataset, export the exit segments to ONNX,
run them with onnxruntime under exit criteria, measure an exit profile and hand its operating
points to the optimiser."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

from conftest import make_profile  # noqa: E402

from workbench import datasets as ds  # noqa: E402
from workbench.bundling import storage  # noqa: E402
from workbench.moo.problem import DiscreteProblem  # noqa: E402
from workbench.multiexit.criteria import parse_criteria  # noqa: E402
from workbench.multiexit.policies import ParetoPolicy  # noqa: E402
from workbench.multiexit.profiling import exit_configs, folder_size_mb, measure_exit_profile  # noqa: E402
from workbench.multiexit.runner import SegmentedNet  # noqa: E402
from workbench.multiexit.training import (  # noqa: E402
    MultiExitNet,
    count_flops,
    exit_weights,
    export_onnx,
    predict_all,
    to_torch,
    train,
)
from workbench.solvers import rass  # noqa: E402


@pytest.fixture(scope="module")
def h1(tmp_path_factory):
    data = ds.load("h1", quick=True, root=tmp_path_factory.mktemp("data"))
    net = MultiExitNet("resnet", 1, data.n_classes, width=8)
    res = train(net, data, epochs=6, seed=0)
    folder = tmp_path_factory.mktemp("me")
    info = export_onnx(net, (1, 32, 32), folder)
    return data, net, res, folder, info


def test_training_makes_later_exits_more_accurate(h1):
    data, net, res, _, _ = h1
    acc = res.exit_accuracy
    assert len(acc) == net.n_exits == 4 and res.weights == exit_weights(4) == [0.25, 0.5, 0.75, 1.0]
    assert acc[-1] > acc[0] + 0.2 and acc[-1] > 3 * data.chance / 100
    assert res.history[-1]["loss"] < res.history[0]["loss"]


@pytest.mark.parametrize("arch, task, channels", [("effnet", "h3-vision", 3),
                                                   ("audio1d", "h3-audio", 1)])
def test_every_backbone_builds_trains_and_counts_flops(arch, task, channels, tmp_path):
    data = ds.load(task, quick=True, root=tmp_path)
    net = MultiExitNet(arch, channels, data.n_classes, exits=[1, 2], width=8)
    assert net.n_exits == 3  # the last block always has a head
    res = train(net, data, epochs=1)
    assert len(res.exit_accuracy) == 3
    flops = count_flops(net, (channels, *data.x_train.shape[1:-1]))
    assert all(b > a for a, b in zip(flops, flops[1:]))


def test_segments_exported_to_onnx_match_torch(h1):
    data, net, _, folder, info = h1
    sn = SegmentedNet(folder, info["segments"])
    x = to_torch(data.x_test[:6], 2).numpy()
    want = predict_all(net, data.x_test[:6])
    for i in range(6):
        probs, times = sn.run_all(x[i:i + 1])
        for k in range(net.n_exits):
            np.testing.assert_allclose(probs[k], want[k, i], atol=1e-5)
        assert all(b >= a for a, b in zip(times, times[1:]))


def test_conditional_execution_stops_at_the_first_exit_meeting_the_criteria(h1):
    data, net, _, folder, info = h1
    sn = SegmentedNet(folder, info["segments"])
    x = to_torch(data.x_test[:20], 2).numpy()
    crit = parse_criteria("confidence > 0.6").compile()
    for i in range(20):
        probs, _ = sn.run_all(x[i:i + 1])
        p, k, state = sn.run(x[i:i + 1], crit)
        first = next((j for j, q in enumerate(probs[:-1]) if q.max() > 0.6), net.n_exits - 1)
        assert k == first and state.exit_number == k + 1
        np.testing.assert_allclose(p, probs[k], atol=1e-6)
    assert sn.run(x[:1], parse_criteria("null").compile())[1] == net.n_exits - 1
    assert sn.run(x[:1], parse_criteria("exit_number == 2").compile())[1] == 1


def test_exit_operating_points_enter_the_optimiser_as_one_stored_model(h1):
    data, net, _, folder, info = h1
    sn = SegmentedNet(folder, info["segments"])
    x = to_torch(data.x_test[:40], 2).numpy()
    prof = measure_exit_profile(sn, x, data.y_test[:40], flops=count_flops(net, (1, 32, 32)),
                                repeats=1)
    assert (np.diff(prof.latency_ms) > 0).all() and prof.correct.shape == (40, 4)
    pp = ParetoPolicy.fit(prof, metric="latency")
    size = folder_size_mb(folder, info["segments"])
    rows = exit_configs(prof, task="t", arch="ResNet-ME", processor="CPU", threads=1,
                        size_mb=size, pareto=pp, max_points=5)
    assert len(rows) == 4 + min(5, len(pp.front))
    pb = DiscreteProblem(make_profile(rows), "max A; min L")
    res = rass(pb)
    assert res.ok and "ResNet-ME@" in res.designs["d0"].labels[0]
    st = storage(res, pb)
    assert st.n_all_models == 1 and st.all_mb == pytest.approx(size)
    assert st.designs_mb == pytest.approx(size)  # every operating point shares the stored model
