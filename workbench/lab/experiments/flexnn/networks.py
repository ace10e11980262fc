"""The full-size networks of FlexNN's evaluation as layer graphs (VGG, ResNet, MobileNetV2,
SqueezeNet, ViT, GPT-2): shapes and sizes only, for planning and measuring memory."""

from __future__ import annotations

import numpy as np

from ....memory.graph import LayerGraph

#: Full-size networks of FlexNN's and MASA's evaluations, built without pretrained weights: their
#: latency and memory are the architecture's; accuracy is not measured. keras.applications builds
#: all but SqueezeNet, which :func:`squeezenet` builds (v1.1, the version NCNN's model zoo ships).
FULL_SIZE = ("VGG-16", "VGG-19", "ResNet-50", "ResNet-152", "MobileNetV2", "SqueezeNet", "ViT",
             "GPT-2")


def squeezenet(*, size: int = 224, classes: int = 1000):
    """SqueezeNet v1.1 (Iandola et al. 2016; the torchvision/NCNN layout) as a Keras model with
    random weights: eight fire modules (a 1x1 squeeze, then 1x1 and 3x3 expands concatenated)."""
    from ....host import zoo

    keras = zoo._keras()
    L = keras.layers
    x = inp = keras.Input((size, size, 3))
    x = L.Conv2D(64, 3, strides=2, activation="relu", name="conv1")(x)
    x = L.MaxPooling2D(3, 2, name="pool1")(x)

    def fire(x, n, squeeze, expand):
        s = L.Conv2D(squeeze, 1, activation="relu", name=f"fire{n}_squeeze")(x)
        a = L.Conv2D(expand, 1, activation="relu", name=f"fire{n}_expand1x1")(s)
        b = L.Conv2D(expand, 3, padding="same", activation="relu", name=f"fire{n}_expand3x3")(s)
        return L.Concatenate(name=f"fire{n}_concat")([a, b])

    x = fire(x, 2, 16, 64)
    x = fire(x, 3, 16, 64)
    x = L.MaxPooling2D(3, 2, name="pool3")(x)
    x = fire(x, 4, 32, 128)
    x = fire(x, 5, 32, 128)
    x = L.MaxPooling2D(3, 2, name="pool5")(x)
    for n, (sq, ex) in zip(range(6, 10), ((48, 192), (48, 192), (64, 256), (64, 256))):
        x = fire(x, n, sq, ex)
    x = L.Dropout(0.5)(x)
    x = L.Conv2D(classes, 1, activation="relu", name="conv10")(x)
    x = L.GlobalAveragePooling2D(name="gap")(x)
    x = L.Activation("softmax", name="softmax")(x)
    return keras.Model(inp, x, name="squeezenet1_1")


def _transformer_blocks(layers: list, x: str, *, tokens: int, dim: int, depth: int, heads: int,
                        mlp: int, causal: bool, rng, std: float = 0.02) -> str:
    """Pre-norm transformer blocks appended to ``layers`` after layer ``x``; returns the last
    layer's name. Weights ~ N(0, std) (GPT-2's and ViT's initialisation), biases zero."""
    from ....memory.graph import Layer

    def w(*shape):
        return (rng.standard_normal(shape, dtype=np.float32) * std).astype(np.float32)

    def z(n):
        return np.zeros(n, np.float32)

    shapes = {ly.name: ly.shape for ly in layers}

    def add(name, op, ins, shape, attrs=None, weights=None):
        layers.append(Layer(name, op, ins, shape, attrs or {}, weights or {},
                            [shapes[s] for s in ins]))
        shapes[name] = shape
        return name

    t, d = tokens, dim
    for i in range(depth):
        ln1 = add(f"b{i}_ln1", "layernorm", [x], (t, d), {"eps": 1e-6},
                  {"gamma": np.ones(d, np.float32), "beta": z(d)})
        qkv = add(f"b{i}_qkv", "dense", [ln1], (t, 3 * d), {"act": None},
                  {"w": w(d, 3 * d), "b": z(3 * d)})
        att = add(f"b{i}_attn", "attention", [qkv], (t, d), {"heads": heads, "causal": causal})
        proj = add(f"b{i}_proj", "dense", [att], (t, d), {"act": None}, {"w": w(d, d), "b": z(d)})
        x = add(f"b{i}_add1", "add", [proj, x], (t, d), {"act": None})
        ln2 = add(f"b{i}_ln2", "layernorm", [x], (t, d), {"eps": 1e-6},
                  {"gamma": np.ones(d, np.float32), "beta": z(d)})
        fc1 = add(f"b{i}_fc1", "dense", [ln2], (t, mlp), {"act": "gelu"},
                  {"w": w(d, mlp), "b": z(mlp)})
        fc2 = add(f"b{i}_fc2", "dense", [fc1], (t, d), {"act": None}, {"w": w(mlp, d), "b": z(d)})
        x = add(f"b{i}_add2", "add", [fc2, x], (t, d), {"act": None})
    return add("ln_f", "layernorm", [x], (t, d), {"eps": 1e-6},
               {"gamma": np.ones(d, np.float32), "beta": z(d)})


def vit_graph(*, size: int = 384, patch: int = 16, dim: int = 768, depth: int = 12,
              heads: int = 12, mlp: int = 3072, classes: int = 1000, seed: int = 0) -> LayerGraph:
    """ViT-B/16 (Dosovitskiy et al. 2021) at ``size`` x ``size`` (FlexNN runs it at 384: 577
    tokens, 86.9M parameters) as a layer graph with random weights: a strided conv as patch
    embedding, a class token and position embeddings, ``depth`` pre-norm blocks, the class
    token's layer norm and a linear head. GELU is the tanh approximation."""
    from ....memory.graph import Layer

    rng = np.random.default_rng(seed)
    g = size // patch
    t = g * g + 1
    w = rng.standard_normal((3 * patch * patch, dim), dtype=np.float32) * np.float32(0.02)
    layers = [Layer("patch_embed", "conv", ["input"], (g, g, dim),
                    {"k": (patch, patch), "s": patch, "padding": "valid", "act": None},
                    {"w": w, "b": np.zeros(dim, np.float32)}, [(size, size, 3)]),
              Layer("tokens", "tokens", ["patch_embed"], (g * g, dim), {}, {}, [(g, g, dim)])]
    layers.append(Layer("cls_pos", "cls_pos", ["tokens"], (t, dim), {},
                        {"cls": np.zeros(dim, np.float32),
                         "pos": rng.standard_normal((t, dim), dtype=np.float32)
                         * np.float32(0.02)}, [(g * g, dim)]))
    x = _transformer_blocks(layers, "cls_pos", tokens=t, dim=dim, depth=depth, heads=heads,
                            mlp=mlp, causal=False, rng=rng)
    layers.append(Layer("cls", "token", [x], (dim,), {"index": 0}, {}, [(t, dim)]))
    layers.append(Layer("head", "dense", ["cls"], (classes,), {"act": "softmax"},
                        {"w": rng.standard_normal((dim, classes), dtype=np.float32)
                         * np.float32(0.02), "b": np.zeros(classes, np.float32)}, [(dim,)]))
    return LayerGraph("ViT", (size, size, 3), layers)


def gpt2_graph(*, tokens: int = 64, vocab: int = 50257, positions: int = 1024, dim: int = 768,
               depth: int = 12, heads: int = 12, seed: int = 0) -> LayerGraph:
    """GPT-2 small (Radford et al. 2019: 124M parameters) reading ``tokens`` token ids at once
    (one forward pass, as a prompt is read) as a layer graph with random weights: token and
    position embeddings, ``depth`` causal pre-norm blocks, the final layer norm and the
    language-model head on the last token. The head is a separate copy of the token embedding
    (the executor does not share a weight between layers): 163M parameters are stored."""
    from ....memory.graph import Layer

    rng = np.random.default_rng(seed)
    wte = rng.standard_normal((vocab, dim), dtype=np.float32) * np.float32(0.02)
    layers = [Layer("embed", "embed", ["input"], (tokens, dim), {},
                    {"wte": wte, "wpe": rng.standard_normal((positions, dim), dtype=np.float32)
                     * np.float32(0.01)}, [(tokens,)])]
    x = _transformer_blocks(layers, "embed", tokens=tokens, dim=dim, depth=depth, heads=heads,
                            mlp=4 * dim, causal=True, rng=rng)
    layers.append(Layer("last", "token", [x], (dim,), {"index": tokens - 1}, {}, [(tokens, dim)]))
    layers.append(Layer("lm_head", "dense", ["last"], (vocab,), {"act": None},
                        {"w": np.ascontiguousarray(wte.T)}, [(dim,)]))
    return LayerGraph("GPT-2", (tokens,), layers)


def full_size_graph(name: str, *, size: int = 224) -> LayerGraph:
    """One of :data:`FULL_SIZE` at ``size`` x ``size`` x 3 (random weights: latency and memory
    only)."""
    from ....host import zoo
    from ....memory.graph import from_keras

    if name not in FULL_SIZE:
        from ....errors import InputError

        raise InputError(f"no full-size network {name!r}: one of {', '.join(FULL_SIZE)}",
                         value=name)
    if name == "SqueezeNet":
        return from_keras(squeezenet(size=size), name=name)
    if name == "ViT":  # FlexNN runs ViT at 384x384
        return vit_graph(size=384 if size == 224 else size)
    if name == "GPT-2":
        return gpt2_graph()
    apps = zoo._keras().applications
    ctor = {"VGG-16": apps.VGG16, "VGG-19": apps.VGG19, "ResNet-50": apps.ResNet50,
            "ResNet-152": apps.ResNet152, "MobileNetV2": apps.MobileNetV2}[name]
    return from_keras(ctor(weights=None, input_shape=(size, size, 3)), name=name)
