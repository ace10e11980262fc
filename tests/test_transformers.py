"""Transformers in the layer executor (ViT and GPT-2, FlexNN's other two models): the graph
computes what PyTorch computes from the same weights, FlexNN plans and runs it within a budget,
and a fresh process measures it inside its budget."""

import numpy as np
import pytest

from workbench.lab.experiments.flexnn import gpt2_graph, vit_graph
from workbench.memory import flexnn as F
from workbench.memory.measure import measure

torch = pytest.importorskip("torch")
Fn = torch.nn.functional


def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def _blocks(g, x, *, heads, causal):
    """The graph's pre-norm blocks in PyTorch, from the graph's own weights."""
    L = {ly.name: ly.weights for ly in g.layers}
    d = x.shape[-1]
    i = 0
    while f"b{i}_ln1" in L:
        h = Fn.layer_norm(x, (d,), _t(L[f"b{i}_ln1"]["gamma"]), _t(L[f"b{i}_ln1"]["beta"]), 1e-6)
        qkv = h @ _t(L[f"b{i}_qkv"]["w"]) + _t(L[f"b{i}_qkv"]["b"])
        b, t, _ = qkv.shape
        q, k, v = (z.reshape(b, t, heads, d // heads).transpose(1, 2) for z in qkv.split(d, -1))
        a = Fn.scaled_dot_product_attention(q, k, v, is_causal=causal)
        a = a.transpose(1, 2).reshape(b, t, d)
        x = x + a @ _t(L[f"b{i}_proj"]["w"]) + _t(L[f"b{i}_proj"]["b"])
        h = Fn.layer_norm(x, (d,), _t(L[f"b{i}_ln2"]["gamma"]), _t(L[f"b{i}_ln2"]["beta"]), 1e-6)
        h = Fn.gelu(h @ _t(L[f"b{i}_fc1"]["w"]) + _t(L[f"b{i}_fc1"]["b"]), approximate="tanh")
        x = x + h @ _t(L[f"b{i}_fc2"]["w"]) + _t(L[f"b{i}_fc2"]["b"])
        i += 1
    return Fn.layer_norm(x, (d,), _t(L["ln_f"]["gamma"]), _t(L["ln_f"]["beta"]), 1e-6)


def small_vit():
    return vit_graph(size=32, patch=8, dim=32, depth=2, heads=4, mlp=64, classes=10)


def small_gpt2():
    return gpt2_graph(tokens=12, vocab=200, positions=16, dim=32, depth=2, heads=4)


def test_vit_computes_what_pytorch_computes():
    g = small_vit()
    x = g.sample_input(2)
    L = {ly.name: ly.weights for ly in g.layers}
    w = L["patch_embed"]["w"]  # (C * kh * kw, D): channel-major im2col layout
    d = w.shape[1]
    conv = Fn.conv2d(_t(x).permute(0, 3, 1, 2), _t(w.T.reshape(d, 3, 8, 8)),
                     _t(L["patch_embed"]["b"]), stride=8)
    tok = conv.permute(0, 2, 3, 1).reshape(2, -1, d)
    tok = torch.cat([_t(L["cls_pos"]["cls"]).expand(2, 1, d), tok], 1) + _t(L["cls_pos"]["pos"])
    h = _blocks(g, tok, heads=4, causal=False)[:, 0]
    ref = torch.softmax(h @ _t(L["head"]["w"]) + _t(L["head"]["b"]), -1).numpy()
    np.testing.assert_allclose(g.run(x), ref, rtol=1e-4, atol=1e-6)


def test_gpt2_computes_what_pytorch_computes_and_is_causal():
    g = small_gpt2()
    x = g.sample_input(1)
    L = {ly.name: ly.weights for ly in g.layers}
    ids = torch.from_numpy(x.astype(np.int64))
    h = _t(L["embed"]["wte"])[ids] + _t(L["embed"]["wpe"][:12])
    ref = (_blocks(g, h, heads=4, causal=True)[:, -1] @ _t(L["lm_head"]["w"])).numpy()
    out = g.run(x)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    # Causal: the last token's logits do not depend on... nothing after it; an earlier token's
    # change moves them, and so the model reads its whole prompt.
    x2 = x.copy()
    x2[0, 0] = (x2[0, 0] + 1) % 200
    assert not np.allclose(g.run(x2), out)


@pytest.mark.parametrize("build", [small_vit, small_gpt2], ids=["vit", "gpt2"])
def test_flexnn_plans_and_runs_a_transformer_at_its_smallest_budget(build, tmp_path):
    g = build()
    low = F.min_budget(g)
    assert low < g.bulk_peak_bytes()
    p = F.slice_and_plan(g, low)
    p.check()
    assert any(s.cols is not None for s in p.slicing.steps)  # token-wise FCs are sliced
    r = F.FlexRunner(p, tmp_path)
    try:
        x = g.sample_input(1)
        np.testing.assert_allclose(r.run(x), g.run(x), rtol=1e-4, atol=1e-5)
    finally:
        r.close()


def test_a_fresh_process_runs_vit_within_its_budget():
    g = vit_graph(size=64, patch=8, dim=96, depth=2, heads=4, mlp=384, classes=100)
    budget = round((F.min_budget(g) + F.EXECUTOR_RESERVE) / 1e6 * 1.05, 3)
    m = measure(g, budget_mb=budget, reps=2)
    assert m.within_budget, (m.model_mb, budget)
