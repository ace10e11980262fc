"""Layer programs: what a memory-mode bundle carries to the device and how the runtime runs it
(workbench.runtime.programs), built from host graphs and plans (workbench.memory.programs)."""

import copy
import json
import math

import numpy as np
import pytest

from workbench.errors import InputError
from workbench.memory.flexnn import CannotFit, min_budget
from workbench.memory.graph import Layer, LayerGraph
from workbench.memory.programs import PROGRAM, program_for, stream_min_budget, write_program
from workbench.runtime.programs import PlanRunner, Program, StreamRunner


@pytest.fixture(scope="module")
def graph():
    rng = np.random.default_rng(0)

    def w(*shape):
        return rng.normal(0, 0.3, size=shape).astype(np.float32)

    layers = [
        Layer("c1", "conv", ["input"], (8, 8, 16), {"k": (3, 3), "s": 1, "padding": "same",
                                                   "act": "relu"},
              {"w": w(2 * 9, 16), "b": w(16)}, [(8, 8, 2)]),
        Layer("p1", "pool", ["c1"], (4, 4, 16), {"kind": "max", "k": (2, 2), "s": 2,
                                                 "padding": "valid"}, {}, [(8, 8, 16)]),
        Layer("f", "flatten", ["p1"], (256,), {}, {}, [(4, 4, 16)]),
        Layer("d1", "dense", ["f"], (64,), {"act": "relu"}, {"w": w(256, 64), "b": w(64)},
              [(256,)]),
        Layer("d2", "dense", ["d1"], (5,), {"act": "softmax"}, {"w": w(64, 5), "b": w(5)},
              [(64,)]),
    ]
    return LayerGraph("tiny", (8, 8, 2), layers)


@pytest.fixture
def x():
    return np.random.default_rng(1).normal(size=(1, 8, 8, 2)).astype(np.float32)


@pytest.mark.parametrize("mode,frac", [("planned", 1.0), ("planned", 3.0), ("streamed", 1.0),
                                       ("streamed", 4.0)])
def test_a_program_read_back_from_its_file_computes_the_model(graph, x, tmp_path, mode, frac):
    need = min_budget(graph) if mode == "planned" else stream_min_budget(graph)
    budget_mb = math.ceil(need * frac / 1e3) / 1e3
    prog = program_for(graph, mode, budget_mb)
    write_program(graph, prog, tmp_path)
    back = Program.from_bytes((tmp_path / PROGRAM).read_bytes())
    assert back.to_dict() == prog.to_dict()
    runner = PlanRunner(back, tmp_path) if mode == "planned" else StreamRunner(back, tmp_path)
    try:
        for _ in range(2):  # the second run reuses the buffer (planned) and re-reads every file
            np.testing.assert_allclose(runner.run(x), graph.run(x), atol=1e-5, rtol=1e-4)
    finally:
        runner.close()
    if mode == "planned":
        assert back.buffer_bytes <= round(budget_mb * 1e6)
    else:  # the loader reads ahead only as far as the budget allows
        assert 0 < runner.peak_bytes <= back.budget_bytes


def test_streaming_reads_ahead_when_the_budget_allows(graph, x, tmp_path):
    tight, loose = (program_for(graph, "streamed", b) for b in
                    (stream_min_budget(graph) / 1e6 + 0.001, graph.weight_bytes * 3 / 1e6))
    peaks = []
    for prog in (tight, loose):
        write_program(graph, prog, tmp_path)
        r = StreamRunner(prog, tmp_path)
        r.run(x)
        r.close()
        peaks.append(r.peak_bytes)
    assert peaks[0] <= tight.budget_bytes < peaks[1]  # loose: several layers' weights at once


def test_a_budget_below_the_largest_layer_says_the_smallest_that_fits(graph):
    need = stream_min_budget(graph)
    with pytest.raises(CannotFit, match="minimum feasible budget"):
        program_for(graph, "streamed", (need - 2000) / 1e6)
    with pytest.raises(InputError, match="memory_mode"):
        program_for(graph, "bulk", 1.0)


def _mutations():
    def setp(path, value):
        def f(d):
            at = d
            for k in path[:-1]:
                at = at[k]
            at[path[-1]] = value
        return f
    return {
        "layers[1].op": setp(["layers", 1, "op"], "lstm"),
        "layers[1].inputs": setp(["layers", 1, "inputs"], ["later"]),
        "layers[0].in_shapes": setp(["layers", 0, "in_shapes"], [[9, 9, 2]]),
        "layers[0].attrs": setp(["layers", 0, "attrs"], {"k": [3, 3]}),
        "steps[0].file": setp(["steps", 0, "file"], "../../etc/passwd"),
        "steps[1].file": setp(["steps", 1, "file"], "p1.bin"),
        "tensors[0].size": setp(["tensors", 0, "size"], 10 ** 9),
        "buffer_bytes": setp(["buffer_bytes"], 10 ** 12),
        "version": setp(["version"], 99),
        "mode": setp(["mode"], "bulk"),
        # an activation the kernels lack was read, then failed at the first run, unnamed
        "layers[0].attrs.act": setp(["layers", 0, "attrs", "act"], "bogus"),
    }


@pytest.mark.parametrize("where", list(_mutations()))
def test_a_bad_program_is_refused_naming_the_field(graph, where):
    prog = program_for(graph, "planned", 1.0).to_dict()
    bad = copy.deepcopy(prog)
    _mutations()[where](bad)
    with pytest.raises(InputError) as e:
        Program.from_bytes(json.dumps(bad).encode(), file="program.json")
    assert e.value.where == where
    assert "program.json" in str(e.value)


def test_a_truncated_weight_file_is_named_when_the_runner_opens(graph, tmp_path):
    prog = program_for(graph, "streamed", 1.0)
    files = write_program(graph, prog, tmp_path)
    victim = next(f for f in files if f.name.startswith("d1"))
    victim.write_bytes(victim.read_bytes()[:100])
    with pytest.raises(InputError, match="d1.bin.*100 bytes"):
        StreamRunner(prog, tmp_path)


@pytest.mark.parametrize("mode", ["planned", "streamed"])
def test_a_runner_given_an_input_of_another_shape_names_it(graph, tmp_path, mode):
    """The Python API (FlexNN(...).run, open_program(...).run): one InputError, not a
    ValueError from inside the runner."""
    need = min_budget(graph) if mode == "planned" else stream_min_budget(graph)
    prog = program_for(graph, mode, math.ceil(need * 2 / 1e3) / 1e3)
    write_program(graph, prog, tmp_path)
    runner = PlanRunner(prog, tmp_path) if mode == "planned" else StreamRunner(prog, tmp_path)
    try:
        with pytest.raises(InputError, match="is not the program's"):
            runner.run(np.ones((1, 9, 8, 2), np.float32))
    finally:
        runner.close()
