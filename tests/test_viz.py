"""Report figures: the papers' numbers drawn one way, and captions under figures."""

import pytest

pytest.importorskip("plotly")
import plotly.graph_objects as go  # noqa: E402

from workbench.lab import viz  # noqa: E402


def test_data_kinds_names_what_a_caption_says():
    assert viz.data_kinds("Latency (measured) beside the paper's (dashed)") == ["measured", "paper"]
    assert viz.data_kinds("Simulated from modelled profiles") == ["modelled", "simulated"]
    assert viz.data_kinds("just a plot") == []


def test_paper_numbers_are_black_diamonds_and_dashed_lines():
    fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))
    viz.paper_marks(fig, ["a", "b"], [1.5, None], name="X (paper)")
    viz.paper_line(fig, 30, text="paper: at least 30%")
    viz.paper_line(fig, 8, text="paper: batch 8", axis="x")
    marks = fig.data[-1]
    assert marks.name == "X (paper)" and marks.mode == "markers"
    assert marks.marker.symbol == "diamond" and marks.marker.color == "black"
    assert [s.line.dash for s in fig.layout.shapes] == ["dash", "dash"]
    assert fig.layout.shapes[0].y0 == 30 and fig.layout.shapes[1].x0 == 8
    assert [a.text for a in fig.layout.annotations] == ["paper: at least 30%", "paper: batch 8"]


def test_show_puts_the_caption_under_the_figure_in_reports(monkeypatch):
    shown = []
    import IPython.display

    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    monkeypatch.setenv(viz.REPORT_ENV, "../assets/plotly.min.js")
    monkeypatch.setattr("workbench.lab.viz.embed._LOADED", True)
    viz.show(go.Figure(), caption="Energy <modelled> & time (measured)")
    html = shown[0].data
    assert html.index("plotly-graph-div") < html.index('class="wb-caption"')
    assert "Energy &lt;modelled&gt; &amp; time (measured)" in html


def test_design_labels_close_together_do_not_overlap():
    """Four designs within a few pixels of each other: each label takes a spot around its star
    clear of the others' labels and stars (they all sat on top of each other before)."""
    import itertools

    xn, yn = [0.50, 0.52, 0.50, 0.51], [0.50, 0.51, 0.47, 0.49]
    texts = ["d0, dw", "dm", "dwm", "d1"]
    spots = viz.label_positions(xn, yn, texts)
    boxes = viz.label_boxes(xn, yn, texts, spots)
    for a, b in itertools.combinations(boxes, 2):
        assert not (a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3]), spots
    # Far apart, every label sits on top of its star.
    assert viz.label_positions([0.1, 0.9], [0.1, 0.9], ["d0", "dm"]) == ["top center"] * 2
