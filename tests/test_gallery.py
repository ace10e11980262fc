"""The gallery: the 14 real graphs of the mediapipe==0.10.21 wheel through models add and
profile (13 run here; one has a custom op no LiteRT here has: refused in one line), and one of
them on through solve, bundle and run."""

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
