"""The full-size ports: each Keras model matches its reference implementation numerically (the
same weights in PyTorch) and recognises real photos, and loading is strict."""

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # builds full-size models in two frameworks

torch = pytest.importorskip("torch")
pytest.importorskip("keras")

from workbench.host import pretrained as P  # noqa: E402

# ImageNet class indices: 281 tabby, 282 tiger cat, 285 Egyptian cat; 967 espresso; the rocket
# on its pad: 812 space shuttle, 657 missile, 744 projectile.
CATS, ESPRESSO, ROCKETS = {281, 282, 285}, 967, {812, 657, 744}


def torch_mobilenet_v2():
    """torchvision's MobileNetV2 1.0 layout in plain torch (torchvision itself would pull a CUDA
    torch): the reference the Keras port is checked against."""
    nn = torch.nn

    def cbr(i, o, k=3, s=1, g=1):
        return nn.Sequential(nn.Conv2d(i, o, k, s, (k - 1) // 2, groups=g, bias=False),
                             nn.BatchNorm2d(o), nn.ReLU6(inplace=True))

    class Block(nn.Module):
        def __init__(self, i, o, s, t):
            super().__init__()
            h = i * t
            layers = ([cbr(i, h, 1)] if t != 1 else []) + [
                cbr(h, h, 3, s, g=h), nn.Conv2d(h, o, 1, bias=False), nn.BatchNorm2d(o)]
            self.conv = nn.Sequential(*layers)
            self.res = s == 1 and i == o

        def forward(self, x):
            return x + self.conv(x) if self.res else self.conv(x)

    feats, cin = [cbr(3, 32, 3, 2)], 32
    for t, c, n, s in P.MOBILENET_V2_SETTINGS:
        for j in range(n):
            feats.append(Block(cin, c, s if j == 0 else 1, t))
            cin = c
    feats.append(cbr(cin, 1280, 1))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(*feats)
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, 1000))

        def forward(self, x):
            return self.classifier(self.features(x).mean((2, 3)))

    return Net()


def reference(name):
    spec = P.get(name)
    if name == "MobileNetV2-1.0":
        net = torch_mobilenet_v2()
        sd = torch.load(P.weights_path(spec), map_location="cpu", weights_only=True)
        net.load_state_dict(sd, strict=True)
    else:
        from efficientnet_lite_pytorch import EfficientNet

        net = EfficientNet.from_pretrained(name.lower(), weights_path=str(P.weights_path(spec)))
    return net.eval()


@pytest.mark.parametrize("name", [n for n, s in P.MODELS.items() if s.pretrained])
def test_port_matches_the_reference_and_sees_real_photos(name):
    spec = P.get(name)
    model = P.build(name)
    photos = P.photos(spec.size)
    rng = np.random.default_rng(0)
    x = np.concatenate([spec.preprocess(np.stack(list(photos.values()))),
                        rng.normal(size=(2, spec.size, spec.size, 3)).astype(np.float32)])
    got = model.predict(x, verbose=0)
    with torch.no_grad():
        want = reference(name)(torch.from_numpy(x.transpose(0, 3, 1, 2))).numpy()
    # Logits of size ~10: float32 reductions in two frameworks differ in the last bits.
    assert np.abs(got - want).max() < 1e-4
    top1 = dict(zip(photos, got[:3].argmax(axis=1)))
    assert top1["chelsea"] in CATS and top1["coffee"] == ESPRESSO
    assert ROCKETS & set(np.argsort(-got[2])[:5])


def test_loading_is_strict():
    from workbench.errors import WorkbenchError

    spec = P.get("MobileNetV2-1.0")
    sd = P.state_dict(spec)
    with pytest.raises(WorkbenchError, match="not loaded"):
        P.mobilenet_v2(spec, {**sd, "extra.weight": np.zeros(3, np.float32)})
    bad = dict(sd)
    bad["classifier.1.weight"] = bad["classifier.1.weight"][:10]
    with pytest.raises(WorkbenchError, match="classifier.1"):
        P.mobilenet_v2(spec, bad)


def test_full_size_architectures_without_weights_are_marked_so():
    for name in ("MobileNetV3-Large", "EfficientNetB0", "ResNet-50"):
        spec = P.get(name)
        assert not spec.pretrained and not spec.top1
        with pytest.raises(Exception, match="no pretrained weights"):
            P.weights_path(spec)
    assert P.build("ResNet-50").count_params() > 25e6


def test_imagenet_models_carry_cited_accuracy_into_profiles(tmp_path, monkeypatch):
    from workbench.host import registry

    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path))
    rec = P.register("MobileNetV2-1.0", name="mnv2")
    assert rec.task == "imagenet" and rec.cited == {"FP32": 71.878}
    assert rec.variant("FP32").metric == 100.0  # measured: FP32 agrees with itself on photos
    variants, inputs = registry.profiling_inputs(["mnv2"])
    assert [v.metric for v in variants] == [71.878]  # what a profile gets is the cited number
    assert inputs["imagenet"].metric == "top1 (cited)"
    assert "CITED, not measured" in inputs["imagenet"].description
    assert variants[0].flops > 0.5e9  # real scale: ~0.6 GFLOPs at 224x224


def test_fashion_task_is_measured_with_litert_on_held_out_images(tmp_path, monkeypatch):
    from workbench.host import fashion

    if not (fashion.DEBIAN_DIR / "t10k-images-idx3-ubyte.gz").is_file():
        pytest.skip("Debian's dataset-fashion-mnist is not installed (make setup installs it)")
    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path))
    rec = fashion.register("fm", n_train=300, n_test=200, progress=False)
    fp32 = rec.variant("FP32")
    assert rec.task == "fashion" and rec.metric == "accuracy" and not rec.cited
    assert fp32.note is None  # LiteRT computes what Keras computes
    assert fp32.metric > 60  # chance is 10%; a linear head on ImageNet features does far better
    assert fp32.flops > 0.5e9


def test_real_scale_profile_builds_from_the_registry(tmp_path, monkeypatch):
    """The real-scale build on one model and one option (the full build is a benchmark)."""
    from workbench.host import profiling, real_scale

    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path))
    opts = profiling.host_options((1,), xnnpack=(True,), processor_ids=["CPU[0]"])
    prof = real_scale.build(tmp_path / "real.json", names=["MobileNetV3-Large"], options=opts,
                            progress=False)
    assert {c.precision for c in prof.configs} == {"FP32", "FP16", "DR8", "FX8", "FFX8"}
    assert all(c.task == "full-size" and c.L > 0 and c.W > 0.4e9 for c in prof.configs)
    assert "agreement" in prof.task("full-size").metric
    assert any("real scale" in n for n in prof.provenance.notes)


# --- all-MiniLM-L6-v2 ------------------------------------------------------------------------

def _reference_embeddings(ids: np.ndarray) -> np.ndarray:
    """The Hugging Face implementation (transformers' BertModel on the same safetensors) with
    sentence-transformers' mean pooling and normalisation."""
    transformers = pytest.importorskip("transformers")
    from workbench.host import minilm

    ref = transformers.AutoModel.from_pretrained(str(minilm.model_dir())).eval()
    with torch.no_grad():
        t = torch.tensor(ids, dtype=torch.long)
        mask = (t != 0).long()
        h = ref(input_ids=t, attention_mask=mask).last_hidden_state
        pooled = (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        return torch.nn.functional.normalize(pooled, dim=-1).numpy()


@pytest.mark.parametrize("mask", ["bounded", "additive"])
def test_minilm_port_matches_transformers(mask):
    from workbench.host import minilm

    texts = minilm.sentences(12)
    ids = minilm.encode(texts, 64)
    assert ids.shape == (12, 64) and ids.dtype == np.int32 and (ids[:, 0] == 101).all()  # [CLS]
    ours = minilm.build(64, mask=mask).predict(ids, verbose=0)
    ref = _reference_embeddings(ids)
    assert np.abs(ours - ref).max() < 1e-4
    # Sentences about one thing are closer than sentences about another: a real text encoder.
    a, b, c = minilm.build(32).predict(minilm.encode(
        ["Remove a file from the disk.", "Delete the file at this path.",
         "Return the square root of a number."], 32), verbose=0)
    assert a @ b > a @ c + 0.2


def test_minilm_offline_sentences_are_enough_and_stable():
    from workbench.host import minilm

    texts = minilm.sentences()
    assert len(texts) >= 400 and len(set(texts)) == len(texts)
    assert texts == minilm.sentences()


def test_minilm_registers_with_cosine_measured_against_fp32(tmp_path, monkeypatch):
    from workbench.host import minilm, registry

    monkeypatch.setenv("WORKBENCH_HOME", str(tmp_path))
    rec = minilm.register("mini", seq_len=32, n_eval=40, n_calib=20)
    assert rec.task == "text-embedding" and rec.metric == "cosine" and rec.input_dtype == "int32"
    rec = registry.quantise("mini", ["FP16", "DR8"], progress=False)
    a = {v.precision: v.metric for v in rec.variants}
    assert a["FP32"] == pytest.approx(1.0) and a["FP16"] > 0.999 and a["DR8"] > 0.99
    variants, inputs = registry.profiling_inputs(["mini"])
    assert inputs["text-embedding"].metric == "cosine with FP32"
    assert variants[0].flops > 0.1e9
